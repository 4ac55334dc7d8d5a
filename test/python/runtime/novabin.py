"""A minimal writer of ``.nova`` files (docs/binary-format.md) for decoder tests that
need instructions the checked-in vectors do not hold. One SPMD program; words are
given as dicts of WORD_DTYPE fields (unset fields default: 0, tiles 0xFFFF)."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from nova.binary.isa import ISA_VERSION, NO_TILE, TILE_DTYPE, WORD_DTYPE

TARGETS = Path(__file__).resolve().parents[3] / "targets"


def target(name: str = "tiny", **changes: object) -> dict:
    t = json.loads((TARGETS / f"{name}.json").read_text())
    t.pop("description", None)
    t.update(changes)
    return t


def f64bits(v: float) -> int:
    return struct.unpack("<q", struct.pack("<d", v))[0]


def word(**fields: int) -> np.ndarray:
    w = np.zeros(1, WORD_DTYPE)
    for slot in ("tile_a", "tile_b", "tile_c", "tile_d"):
        w[slot] = NO_TILE
    for k, v in fields.items():
        w[k] = v
    return w


def tile(space: int, dtype: int, shape: Sequence[int], strides: Sequence[int] | None = None) -> np.ndarray:
    if strides is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.insert(0, acc)
            acc *= s
    t = np.zeros(1, TILE_DTYPE)
    t["space"], t["dtype"], t["rank"] = space, dtype, len(shape)
    t["sizes"] = list(shape) + [1] * (4 - len(shape))
    t["strides"] = list(strides) + [0] * (4 - len(strides))
    return t


def _pad(b: bytes, to: int = 64) -> bytes:
    return b + bytes(-len(b) % to)


def build(words: Iterable[np.ndarray], tiles: Iterable[np.ndarray], tg: Mapping | None = None,
          io: Sequence[tuple[int, int, str, int, Sequence[int], int]] = (),
          debug: Mapping[int, str] | None = None, isa_version: int = ISA_VERSION) -> bytes:
    """io entries: (index, role 0 in / 1 out, name, io dtype code, shape, address)."""
    tg = dict(tg or target(chips=1))
    chips = tg["chips"]
    code = b"".join(w.tobytes() for w in words)
    tiles_b = b"".join(t.tobytes() for t in tiles)
    groups = struct.pack("<I", 0)
    itemsize = {0: 4, 1: 2, 2: 2, 3: 8, 4: 8, 5: 4, 6: 2, 7: 1, 8: 1}
    entries, names = b"", b""
    base = 8 + 96 * len(io)
    for index, role, name, dtype, shape, addr in io:
        nb = name.encode()
        size = int(np.prod(shape)) * itemsize[dtype]
        entries += struct.pack("<IBBBBIIQQ", index, role, dtype, len(shape), 0, base + len(names), len(nb),
                               addr, size)
        entries += struct.pack("<8Q", *(list(shape) + [0] * (8 - len(shape))))
        names += nb
    io_b = struct.pack("<II", len(io), 0) + entries + names
    sections = [(1, code, True), (2, tiles_b, True), (3, groups, True)]
    if debug:
        ents, text = b"", b""
        base = 8 + 16 * len(debug)
        for i in sorted(debug):
            t = debug[i].encode()
            ents += struct.pack("<IIII", i, 0, base + len(text), len(t))
            text += t
        sections.append((6, struct.pack("<II", len(debug), 0) + ents + text, True))
    sections.append((4, io_b, False))
    tjson = json.dumps(tg, separators=(",", ":")).encode()
    t_off = 128
    st_off = t_off + len(_pad(tjson))
    off = st_off + 64 * len(sections)
    table, body = b"", b""
    mask = [0, 0, 0, 0]
    for c in range(chips):
        mask[c // 64] |= 1 << (c % 64)
    for stype, data, per_chip in sections:
        table += struct.pack("<IIQQQ4Q", stype, 0, off + len(body), len(data), 0,
                             *(mask if per_chip else [0, 0, 0, 0]))
        body += _pad(data)
    size = off + len(body) + 8
    name = tg["name"].encode()
    header = (b"NOVA" + struct.pack("<HHIIQQQQII", 1, isa_version, 0, len(sections), size, t_off, len(tjson),
                                    st_off, chips, 0) + name + bytes(32 - len(name)) + bytes(40))
    data = header + _pad(tjson) + table + body + b"NCRC"
    return data + struct.pack("<I", zlib.crc32(data))
