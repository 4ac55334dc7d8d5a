"""Reader, validator and disassembler of ``.nova`` binaries.

The format is docs/binary-format.md (version 1) around the instruction
encoding of docs/isa.md (version 2). :func:`load_binary` checks everything the
format promises and raises :class:`~nova.runtime.errors.BinaryFormatError`
naming the first broken rule; what it returns is safe to simulate without
further structural checks. Code sections are decoded with a numpy structured
dtype (``Program.words``); ``Program.instructions`` gives the same words as
:class:`~nova.binary.isa.Instruction` objects.

Command line: ``python -m nova.binary.format FILE.nova`` prints the
disassembly.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
import struct
import sys
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Union

import numpy as np

from nova.binary.bounds import check_addresses
from nova.binary.code import check_code, decode_instructions, instruction_error
from nova.binary.rules import check_rules
from nova.binary.disassembly import disassemble
from nova.binary.errors import BinaryFormatError, TargetError
from nova.binary.target_schema import FIELDS as SCHEMA_FIELDS, TOPOLOGIES, validate_target
from nova.binary.isa import (
    ISA_VERSION, ISA_VERSION_ACTIVATION, ISA_VERSION_QUEUED_NOP, ISA_VERSION_VFUSED, ISA_VERSIONS, NO_TILE,
    TILE_DTYPE, WORD_BYTES, WORD_DTYPE, DType, Instruction, MemorySpace, ReplicaGroups, Tile,
)

__all__ = [
    "FORMAT_VERSION", "MAGIC", "Binary", "Constant", "Header", "IODType", "IOEntry",
    "Program", "Role", "SectionEntry", "SectionType", "TARGET_FIELDS",
    "disassemble", "load_binary",
]

FORMAT_VERSION = 1
MAGIC = b"NOVA"
TRAILER_TAG = b"NCRC"
HEADER_BYTES = 128
SECTION_ENTRY_BYTES = 64
TRAILER_BYTES = 8
ALIGNMENT = 64
MAX_CHIPS = 256
MAX_IO_RANK = 8

#: Keys of the target JSON and their types (docs/binary-format.md 2.1; the whole
#: schema with ranges and the timing constants is nova.binary.target_schema).
TARGET_FIELDS: dict[str, type] = {k: v.type for k, v in SCHEMA_FIELDS.items() if not v.optional}


class SectionType(enum.IntEnum):
    CODE = 1
    TILES = 2
    GROUPS = 3
    IO = 4
    CONSTANTS = 5
    DEBUG = 6


class Role(enum.IntEnum):
    INPUT = 0
    OUTPUT = 1


class IODType(enum.IntEnum):
    """Element types of I/O arguments (docs/binary-format.md 4.4)."""

    F32 = 0
    BF16 = 1
    F16 = 2
    F64 = 3
    I64 = 4
    I32 = 5
    I16 = 6
    I8 = 7
    I1 = 8

    @property
    def itemsize(self) -> int:
        return _IO_ITEMSIZE[self]

    @property
    def numpy_dtype(self) -> np.dtype:
        """The numpy storage type (bf16 is stored as its raw ``uint16`` bits)."""
        return np.dtype(_IO_NUMPY[self])


_IO_ITEMSIZE = {IODType.F32: 4, IODType.BF16: 2, IODType.F16: 2, IODType.F64: 8,
                IODType.I64: 8, IODType.I32: 4, IODType.I16: 2, IODType.I8: 1,
                IODType.I1: 1}
_IO_NUMPY = {IODType.F32: "<f4", IODType.BF16: "<u2", IODType.F16: "<f2",
             IODType.F64: "<f8", IODType.I64: "<i8", IODType.I32: "<i4",
             IODType.I16: "<i2", IODType.I8: "i1", IODType.I1: "?"}


@dataclass(frozen=True)
class Header:
    format_version: int
    isa_version: int
    flags: int
    section_count: int
    file_size: int
    target_offset: int
    target_size: int
    section_table_offset: int
    chips: int
    target_name: str


@dataclass(frozen=True)
class SectionEntry:
    type: SectionType
    offset: int
    size: int
    chips: tuple[int, ...]


@dataclass(frozen=True)
class IOEntry:
    """One program argument: where the runtime writes (input) or reads
    (output) it in every chip's HBM."""

    index: int
    role: Role
    name: str
    dtype: IODType
    shape: tuple[int, ...]
    address: int
    byte_size: int
    #: For an output: the index of the input it is written over, in place
    #: (flag bit 0: the input was donated; the output shares its address).
    aliases: int | None = None


#: IO entry flag bit: an output written in place over the input at its address.
IO_IN_PLACE = 1


@dataclass(frozen=True)
class Constant:
    """Initial HBM contents written into every chip before the run."""

    name: str
    address: int
    data: bytes


@dataclass(frozen=True, eq=False)
class Program:
    """The code and tables that the chips of ``chips`` run."""

    chips: tuple[int, ...]
    words: np.ndarray  # WORD_DTYPE, read-only
    tiles: tuple[Tile, ...]
    groups: tuple[ReplicaGroups, ...]
    debug: Mapping[int, str] = field(default_factory=dict)
    #: One past the highest byte any instruction may touch in hbm, sram and acc
    #: (nova.binary.bounds), for the simulator's host-memory estimate.
    high: tuple[int, int, int] | None = None

    def __len__(self) -> int:
        return len(self.words)

    @cached_property
    def instructions(self) -> list[Instruction]:
        return decode_instructions(self.words)


@dataclass(frozen=True, eq=False)
class Binary:
    header: Header
    target: Mapping[str, object]
    sections: tuple[SectionEntry, ...]
    programs: tuple[Program, ...]
    io: tuple[IOEntry, ...]
    constants: tuple[Constant, ...]

    @property
    def chips(self) -> int:
        return self.header.chips

    def program_for(self, chip: int) -> Program:
        """The program chip ``chip`` runs."""
        for program in self.programs:
            if chip in program.chips:
                return program
        raise IndexError(f"chip {chip} is out of range [0, {self.chips})")

    def code(self, chip: int) -> list[Instruction]:
        """The decoded instructions of chip ``chip``."""
        return self.program_for(chip).instructions

    @property
    def inputs(self) -> tuple[IOEntry, ...]:
        return tuple(e for e in self.io if e.role == Role.INPUT)

    @property
    def outputs(self) -> tuple[IOEntry, ...]:
        return tuple(e for e in self.io if e.role == Role.OUTPUT)


# ----------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------

Source = Union[str, os.PathLike, bytes, bytearray, memoryview]


def load_binary(source: Source) -> Binary:
    """Reads and validates a ``.nova`` binary from a path or from its bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _Reader(bytes(source)).read()
    try:
        return _Reader(Path(source).read_bytes()).read()
    except BinaryFormatError as error:  # name the file in every message
        raise BinaryFormatError(f"{source}: {error}") from None


def _chip_list(mask_words: tuple[int, int, int, int]) -> tuple[int, ...]:
    return tuple(c for c in range(MAX_CHIPS) if mask_words[c // 64] >> (c % 64) & 1)


def _fmt_chips(chips: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, chips)) + "]"


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.buf = np.frombuffer(data, np.uint8)

    # -- helpers ------------------------------------------------------------

    def fail(self, message: str) -> "BinaryFormatError":
        return BinaryFormatError(message)

    def region(self, what: str, offset: int, size: int, limit: int | None = None) -> None:
        end = len(self.data) if limit is None else limit
        if offset < 0 or size < 0 or offset + size > end:
            raise self.fail(f"truncated section: {what} at bytes [{offset}, "
                            f"{offset + size}) runs past the end of the file "
                            f"({end} bytes)")

    # -- top level ----------------------------------------------------------

    def read(self) -> Binary:
        data = self.data
        if len(data) < 4:
            raise self.fail(f"truncated file: {len(data)} bytes, too short for "
                            f"a header")
        if data[:4] != MAGIC:
            raise self.fail(f"bad magic {data[:4]!r}: not a Nova binary "
                            f"(expected {MAGIC!r})")
        if len(data) < HEADER_BYTES + TRAILER_BYTES:
            raise self.fail(f"truncated file: {len(data)} bytes, smaller than "
                            f"header and trailer ({HEADER_BYTES + TRAILER_BYTES})")
        (fmt, isa, flags, nsec, file_size, t_off, t_size, st_off, chips,
         reserved) = struct.unpack_from("<HHIIQQQQII", data, 4)
        if fmt != FORMAT_VERSION:
            raise self.fail(f"unsupported format version {fmt} (this loader "
                            f"reads version {FORMAT_VERSION})")
        if isa not in ISA_VERSIONS:
            raise self.fail(f"unsupported ISA version {isa} (this loader "
                            f"reads version {ISA_VERSION}), version "
                            f"{ISA_VERSION_ACTIVATION}: {ISA_VERSION} plus the activation engine, "
                            f"version {ISA_VERSION_QUEUED_NOP}: {ISA_VERSION_ACTIVATION} plus "
                            f"a NOP's dma queue, and version {ISA_VERSION_VFUSED}: "
                            f"{ISA_VERSION_QUEUED_NOP} plus VFUSED")
        if file_size > len(data):
            raise self.fail(f"truncated file: header says {file_size} bytes, "
                            f"file has {len(data)}")
        if file_size != len(data):
            raise self.fail(f"file size mismatch: header says {file_size} "
                            f"bytes, file has {len(data)} (trailing data)")
        stored = struct.unpack_from("<I", data, len(data) - 4)[0]
        computed = zlib.crc32(memoryview(data)[:-4]) & 0xFFFFFFFF
        if stored != computed:
            raise self.fail(f"checksum mismatch: stored CRC-32 0x{stored:08x}, "
                            f"computed 0x{computed:08x} (corrupted file)")
        if data[-8:-4] != TRAILER_TAG:
            raise self.fail(f"missing trailer tag {TRAILER_TAG!r} at byte "
                            f"{len(data) - 8} (truncated or corrupted file)")
        if flags != 0:
            raise self.fail(f"header flags 0x{flags:x} are not defined in "
                            f"format version 1 (must be 0)")
        if reserved != 0 or self.buf[88:HEADER_BYTES].any():
            raise self.fail("nonzero reserved bytes in the header")
        if not 1 <= chips <= MAX_CHIPS:
            raise self.fail(f"header chips {chips} is out of range [1, {MAX_CHIPS}]")
        raw_name = data[56:88]
        if b"\0" not in raw_name:
            raise self.fail("target name in the header is not NUL-terminated")
        name_bytes, _, pad = raw_name.partition(b"\0")
        if pad.strip(b"\0"):
            raise self.fail("nonzero bytes after the target name in the header")
        try:
            name = name_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("target name in the header is not UTF-8") from None
        header = Header(fmt, isa, flags, nsec, file_size, t_off, t_size, st_off,
                        chips, name)
        self.header = header

        body_end = len(data) - TRAILER_BYTES
        self.region("target description", t_off, t_size, body_end)
        self.region("section table", st_off, nsec * SECTION_ENTRY_BYTES, body_end)
        if st_off % ALIGNMENT:
            raise self.fail(f"section table offset {st_off} is not a multiple "
                            f"of {ALIGNMENT}")
        self.target = self.read_target(t_off, t_size)

        sections = self.read_section_table(st_off, nsec, body_end)
        regions = [(0, HEADER_BYTES, "header"),
                   (t_off, t_off + t_size, "target description"),
                   (st_off, st_off + nsec * SECTION_ENTRY_BYTES, "section table"),
                   (body_end, len(data), "trailer")]
        regions += [(s.offset, s.offset + s.size, f"section {i} ({s.type.name})")
                    for i, s in enumerate(sections)]
        self.check_layout(regions)

        programs, io, constants = self.read_sections(sections)
        return Binary(header, MappingProxyType(self.target), tuple(sections),
                      programs, io, constants)

    def read_target(self, offset: int, size: int) -> dict:
        try:
            target = json.loads(self.data[offset:offset + size].decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise self.fail(f"target description is not valid UTF-8 JSON: {e}") from None
        if not isinstance(target, dict):
            raise self.fail("target description is not a JSON object")
        # The one target schema (nova.binary.target_schema): unknown, missing, ill-typed
        # and out-of-range keys, timing constants included, each named.
        try:
            validate_target(target, "binary's target description")
        except TargetError as e:
            raise self.fail(str(e)) from None
        if target["name"] != self.header.target_name:
            raise self.fail(f"target name {target['name']!r} disagrees with the "
                            f"header's {self.header.target_name!r}")
        if target["chips"] != self.header.chips:
            raise self.fail(f"target chips {target['chips']} disagrees with the "
                            f"header's {self.header.chips}")
        return target

    def read_section_table(self, offset: int, count: int,
                           body_end: int) -> list[SectionEntry]:
        sections = []
        for i in range(count):
            at = offset + i * SECTION_ENTRY_BYTES
            stype, res0, off, size, res1, *mask = struct.unpack_from(
                "<IIQQQ4Q", self.data, at)
            if res0 or res1:
                raise self.fail(f"section {i}: nonzero reserved bytes in its "
                                f"section-table entry")
            try:
                stype = SectionType(stype)
            except ValueError:
                raise self.fail(f"section {i}: unknown section type {stype}") from None
            self.region(f"section {i} ({stype.name})", off, size, body_end)
            if off % ALIGNMENT:
                raise self.fail(f"section {i} ({stype.name}): offset {off} is "
                                f"not a multiple of {ALIGNMENT}")
            chips = _chip_list(tuple(mask))
            if chips and chips[-1] >= self.header.chips:
                raise self.fail(f"section {i} ({stype.name}): chip {chips[-1]} "
                                f"is out of range [0, {self.header.chips})")
            per_chip = stype in (SectionType.CODE, SectionType.TILES,
                                 SectionType.GROUPS, SectionType.DEBUG)
            if per_chip and not chips:
                raise self.fail(f"section {i} ({stype.name}): empty chip set")
            if not per_chip and chips:
                raise self.fail(f"section {i} ({stype.name}): a global section "
                                f"must have an empty chip set")
            sections.append(SectionEntry(stype, off, size, chips))
        return sections

    def check_layout(self, regions: list[tuple[int, int, str]]) -> None:
        regions = sorted(regions)
        cursor = 0
        prev = None
        for start, end, what in regions:
            if start < cursor:
                raise self.fail(f"{what} at [{start}, {end}) overlaps {prev}")
            if self.buf[cursor:start].any():
                raise self.fail(f"nonzero padding bytes in [{cursor}, {start})")
            if end > cursor:
                cursor, prev = end, f"{what}"
        # regions end with the trailer, at the end of the file

    # -- sections -----------------------------------------------------------

    def read_sections(self, sections: list[SectionEntry]):
        chips = self.header.chips
        by_type: dict[SectionType, list[SectionEntry]] = {t: [] for t in SectionType}
        for s in sections:
            by_type[s.type].append(s)
        if len(by_type[SectionType.IO]) != 1:
            raise self.fail(f"expected exactly one IO section, found "
                            f"{len(by_type[SectionType.IO])}")
        if len(by_type[SectionType.CONSTANTS]) > 1:
            raise self.fail("more than one CONSTANTS section")
        if not by_type[SectionType.CODE]:
            raise self.fail("no CODE section")
        owner: dict[int, tuple[int, ...]] = {}
        for s in by_type[SectionType.CODE]:
            for c in s.chips:
                if c in owner:
                    raise self.fail(f"chip {c} is in the chip sets of two CODE "
                                    f"sections ({_fmt_chips(owner[c])} and "
                                    f"{_fmt_chips(s.chips)})")
                owner[c] = s.chips
        for c in range(chips):
            if c not in owner:
                raise self.fail(f"chip {c} has no CODE section")

        def companions(stype: SectionType) -> dict[tuple[int, ...], SectionEntry]:
            found: dict[tuple[int, ...], SectionEntry] = {}
            for s in by_type[stype]:
                if s.chips not in found and owner.get(s.chips[0]) != s.chips:
                    raise self.fail(f"{stype.name} section of chips "
                                    f"{_fmt_chips(s.chips)} matches no CODE "
                                    f"section's chip set")
                if s.chips in found:
                    raise self.fail(f"two {stype.name} sections for chips "
                                    f"{_fmt_chips(s.chips)}")
                found[s.chips] = s
            return found

        tiles_of = companions(SectionType.TILES)
        groups_of = companions(SectionType.GROUPS)
        debug_of = companions(SectionType.DEBUG)
        programs = []
        for code in by_type[SectionType.CODE]:
            where = f"chips {_fmt_chips(code.chips)}"
            if code.chips not in tiles_of:
                raise self.fail(f"no TILES section for the code of {where}")
            if code.chips not in groups_of:
                raise self.fail(f"no GROUPS section for the code of {where}")
            tiles = self.read_tiles(tiles_of[code.chips], where)
            groups = self.read_groups(groups_of[code.chips], where)
            words = self.read_code(code, where, tiles, groups)
            debug = {}
            if code.chips in debug_of:
                debug = self.read_debug(debug_of[code.chips], where, len(words))
            high = self.check_operands(words, where, code.chips, tiles, groups)
            programs.append(Program(code.chips, words, tiles, groups,
                                    MappingProxyType(debug), high))
        io = self.read_io(by_type[SectionType.IO][0])
        constants = ()
        if by_type[SectionType.CONSTANTS]:
            constants = self.read_constants(by_type[SectionType.CONSTANTS][0])
        self.check_hbm_layout(io, constants)
        return tuple(programs), io, constants

    def check_hbm_layout(self, io: tuple[IOEntry, ...],
                         constants: tuple[Constant, ...]) -> None:
        """No two arguments and no two constants share HBM bytes, and no constant
        lies on an argument (the runtime writes them all before the run, so an
        overlap would let one silently overwrite another)."""
        spans = sorted([(e.address, e.address + e.byte_size, f"IO entry '{e.name}'")
                        for e in io if e.byte_size and e.aliases is None]
                       + [(c.address, c.address + len(c.data), f"constant '{c.name}'")
                          for c in constants if c.data])
        for (s0, e0, a), (s1, e1, b) in zip(spans, spans[1:]):
            if s1 < e0:
                raise self.fail(f"{b} at HBM [{s1}, {e1}) overlaps {a} at [{s0}, {e0})")

    def read_tiles(self, s: SectionEntry, where: str) -> tuple[Tile, ...]:
        if s.size % TILE_DTYPE.itemsize:
            raise self.fail(f"TILES section of {where}: size {s.size} is not a "
                            f"multiple of {TILE_DTYPE.itemsize}")
        n = s.size // TILE_DTYPE.itemsize
        if n > NO_TILE:
            raise self.fail(f"TILES section of {where}: {n} entries, at most "
                            f"{NO_TILE}")
        t = np.frombuffer(self.data, TILE_DTYPE, count=n, offset=s.offset)
        capacity = {MemorySpace.HBM: self.target["hbm_bytes"],
                    MemorySpace.SRAM: self.target["sram_bytes"],
                    MemorySpace.ACC: self.target["acc_bytes"]}
        tiles = []
        for i, e in enumerate(t.tolist()):
            space, dtype, rank, r0, r1, sizes, strides, r2 = e
            what = f"tile {i} of {where}"
            if r0 or r1 or r2:
                raise self.fail(f"{what}: nonzero reserved bytes")
            if space > 2:
                raise self.fail(f"{what}: unknown memory space {space}")
            if dtype > max(DType):
                raise self.fail(f"{what}: unknown element type {dtype}")
            if not 1 <= rank <= 4:
                raise self.fail(f"{what}: rank {rank} is out of range [1, 4]")
            sizes, strides = [int(x) for x in sizes], [int(x) for x in strides]
            if any(x == 0 for x in sizes[:rank]):
                raise self.fail(f"{what}: a size is 0")
            if any(x != 1 for x in sizes[rank:]) or any(x != 0 for x in strides[rank:]):
                raise self.fail(f"{what}: sizes beyond its rank must be 1 and "
                                f"strides 0")
            tile = Tile(MemorySpace(space), DType(dtype),
                        tuple(int(x) for x in sizes[:rank]),
                        tuple(int(x) for x in strides[:rank]))
            if tile.extent_bytes > capacity[tile.space]:
                raise self.fail(f"{what}: extent {tile.extent_bytes} bytes "
                                f"exceeds {tile.space.name.lower()} capacity "
                                f"{capacity[tile.space]}")
            tiles.append(tile)
        return tuple(tiles)

    def read_groups(self, s: SectionEntry, where: str) -> tuple[ReplicaGroups, ...]:
        what = f"GROUPS section of {where}"
        data, base, size = self.data, s.offset, s.size
        if size < 4:
            raise self.fail(f"truncated section: {what} has {size} bytes")
        (count,) = struct.unpack_from("<I", data, base)
        if count > 0xFFFF or 4 + 4 * count > size:
            raise self.fail(f"truncated section: {what} cannot hold {count} "
                            f"offsets in {size} bytes")
        offsets = struct.unpack_from(f"<{count}I", data, base + 4)
        chips = self.header.chips
        groups = []
        for g, off in enumerate(offsets):
            if off % 4 or off < 4 + 4 * count or off + 8 > size:
                raise self.fail(f"{what}: entry {g} offset {off} is out of range "
                                f"or misaligned")
            num, gsize, reserved = struct.unpack_from("<HHI", data, base + off)
            if reserved:
                raise self.fail(f"{what}: entry {g} has nonzero reserved bytes")
            if off + 8 + 4 * num * gsize > size:
                raise self.fail(f"truncated section: {what} entry {g} runs past "
                                f"the section end")
            ids = struct.unpack_from(f"<{num * gsize}I", data, base + off + 8)
            if gsize < 1 or num * gsize != chips or sorted(ids) != list(range(chips)):
                raise self.fail(f"{what}: entry {g} is not a partition of chips "
                                f"0..{chips - 1} into groups of one size")
            groups.append(tuple(tuple(ids[k * gsize:(k + 1) * gsize])
                                for k in range(num)))
        return tuple(groups)

    def read_code(self, s: SectionEntry, where: str, tiles: tuple[Tile, ...],
                  groups: tuple[ReplicaGroups, ...]) -> np.ndarray:
        if s.size == 0 or s.size % WORD_BYTES:
            raise self.fail(f"code of {where}: size {s.size} is not a positive "
                            f"multiple of {WORD_BYTES}")
        n = s.size // WORD_BYTES
        w = np.frombuffer(self.data, WORD_DTYPE, count=n, offset=s.offset)
        check_code(w, where, tiles, groups, self.target["dma_engines"],
                   self.header.isa_version >= ISA_VERSION_ACTIVATION and "activation" in self.target,
                   queued_nop=self.header.isa_version >= ISA_VERSION_QUEUED_NOP,
                   fused=self.header.isa_version >= ISA_VERSION_VFUSED)
        return w

    def check_operands(self, w: np.ndarray, where: str, chips: tuple[int, ...],
                       tiles: tuple[Tile, ...], groups: tuple[ReplicaGroups, ...]
                       ) -> tuple[int, int, int]:
        """docs/isa.md section 2's operand rules and the static address bounds
        (docs/binary-format.md 7.1) of one program's words."""
        check_rules(w, tiles, groups, self.target,
                    lambda i, rule: instruction_error(w, where, i, rule, tiles))

        def fail(i: int, rule: str, chip: int | None) -> BinaryFormatError:
            at = where if chip is None else f"{where} (on chip {chip})"
            return instruction_error(w, at, i, rule, tiles)

        bounds = check_addresses(w.tolist(), tiles, self.target, chips, fail)
        return tuple(bounds.high)

    def read_debug(self, s: SectionEntry, where: str, ninstr: int) -> dict[int, str]:
        what = f"DEBUG section of {where}"
        count, reserved = self.counted(s, what, 16)
        # The entries (one per instruction, 260,000 in a GPT-2 step) checked at
        # once and their texts (a few dozen, shared: nova-translate writes each
        # once) decoded once each; a broken entry is found and named below.
        table = np.frombuffer(self.data, "<u4", count=4 * count,
                              offset=s.offset + 8).reshape(count, 4).astype(np.int64)
        index, res, off, size = table.T
        previous = np.concatenate(([-1], index[:-1]))
        if not ((res != 0) | (index >= ninstr) | (index <= previous)
                | (off + size > s.size)).any():
            keys = (off.astype(np.uint64) << np.uint64(32)) | size.astype(np.uint64)
            _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
            texts = [""] * len(first)
            # In entry order, so that the first entry whose text is not UTF-8 is named.
            for u in np.argsort(first).tolist():
                k = int(first[u])
                texts[u] = self.string(s, int(off[k]), int(size[k]), f"{what} entry {k}")
            return dict(zip(index.tolist(), map(texts.__getitem__, inverse.tolist())))
        entries = {}
        prev = -1
        for k in range(count):
            index, res, off, size = struct.unpack_from("<IIII", self.data,
                                                       s.offset + 8 + 16 * k)
            if res:
                raise self.fail(f"{what}: entry {k} has nonzero reserved bytes")
            if index >= ninstr or index <= prev:
                raise self.fail(f"{what}: entry {k} names instruction {index} "
                                f"(out of range or not increasing)")
            prev = index
            entries[index] = self.string(s, off, size, f"{what} entry {k}")
        return entries

    def counted(self, s: SectionEntry, what: str, entry_bytes: int) -> tuple[int, int]:
        if s.size < 8:
            raise self.fail(f"truncated section: {what} has {s.size} bytes")
        count, reserved = struct.unpack_from("<II", self.data, s.offset)
        if reserved:
            raise self.fail(f"{what}: nonzero reserved bytes")
        if 8 + entry_bytes * count > s.size:
            raise self.fail(f"truncated section: {what} cannot hold {count} "
                            f"entries in {s.size} bytes")
        return count, reserved

    def string(self, s: SectionEntry, off: int, size: int, what: str) -> str:
        if off + size > s.size:
            raise self.fail(f"truncated section: {what} text at [{off}, "
                            f"{off + size}) lies outside its section")
        try:
            return self.data[s.offset + off:s.offset + off + size].decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what}: text is not UTF-8") from None

    def read_io(self, s: SectionEntry) -> tuple[IOEntry, ...]:
        count, _ = self.counted(s, "IO section", 96)
        hbm = self.target["hbm_bytes"]
        entries, names, indices = [], set(), set()
        for k in range(count):
            at = s.offset + 8 + 96 * k
            index, role, dtype, rank, flags, noff, nsize, addr, size = \
                struct.unpack_from("<IBBBBIIQQ", self.data, at)
            shape = struct.unpack_from("<8Q", self.data, at + 32)
            what = f"IO entry {k}"
            if flags & ~IO_IN_PLACE:
                raise self.fail(f"{what}: unknown flags {flags:#x}")
            if flags and role != Role.OUTPUT:
                raise self.fail(f"{what}: only an output can be written in place")
            if role > 1:
                raise self.fail(f"{what}: unknown role {role}")
            if dtype > max(IODType):
                raise self.fail(f"{what}: unknown dtype {dtype}")
            if rank > MAX_IO_RANK or any(shape[rank:]):
                raise self.fail(f"{what}: rank {rank} invalid or nonzero unused "
                                f"shape entries")
            if nsize == 0:
                raise self.fail(f"{what}: empty name")
            name = self.string(s, noff, nsize, what)
            dt = IODType(dtype)
            expected = math.prod(shape[:rank]) * dt.itemsize  # exact: no u64 wrap
            if size != expected:
                raise self.fail(f"{what} '{name}': byte_size {size} does not "
                                f"match shape {list(shape[:rank])} of "
                                f"{dt.name.lower()} ({expected} bytes)")
            if addr + size > hbm:
                raise self.fail(f"{what} '{name}': HBM address {addr} + {size} "
                                f"bytes is beyond hbm_bytes {hbm}")
            if index in indices or name in names:
                raise self.fail(f"{what}: duplicate argument index {index} or "
                                f"name '{name}'")
            indices.add(index)
            names.add(name)
            entries.append(IOEntry(index, Role(role), name, dt,
                                   tuple(shape[:rank]), addr, size,
                                   -1 if flags else None))
        return self.resolve_aliases(entries)

    def resolve_aliases(self, entries: list[IOEntry]) -> tuple[IOEntry, ...]:
        """Each in-place output names the input it is written over: the one at
        its address, of its dtype and shape."""
        inputs = {e.address: e for e in entries if e.role == Role.INPUT and e.byte_size}
        resolved = []
        for e in entries:
            if e.aliases is not None:
                donor = inputs.get(e.address)
                if donor is None or (donor.dtype, donor.shape) != (e.dtype, e.shape):
                    raise self.fail(f"IO entry '{e.name}' is written in place but no input "
                                    f"of its dtype and shape lies at HBM {e.address}")
                e = dataclasses.replace(e, aliases=donor.index)
            resolved.append(e)
        return tuple(resolved)

    def read_constants(self, s: SectionEntry) -> tuple[Constant, ...]:
        count, _ = self.counted(s, "CONSTANTS section", 32)
        hbm = self.target["hbm_bytes"]
        constants = []
        for k in range(count):
            addr, doff, size, noff, nsize = struct.unpack_from(
                "<QQQII", self.data, s.offset + 8 + 32 * k)
            what = f"constant {k}"
            name = self.string(s, noff, nsize, what)
            if doff + size > s.size:
                raise self.fail(f"truncated section: {what} '{name}' data at "
                                f"[{doff}, {doff + size}) lies outside its section")
            if addr + size > hbm:
                raise self.fail(f"{what} '{name}': HBM address {addr} + {size} "
                                f"bytes is beyond hbm_bytes {hbm}")
            data = self.data[s.offset + doff:s.offset + doff + size]
            constants.append(Constant(name, addr, data))
        return tuple(constants)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m nova.binary.format FILE.nova", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(disassemble(load_binary(args[0])))
    except BinaryFormatError as e:
        print(f"error: {e}", file=sys.stderr)  # e names the file
        return 1
    except OSError as e:
        print(f"error: {args[0]}: {e.strerror or e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
