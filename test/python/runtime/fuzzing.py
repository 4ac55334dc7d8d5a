"""Mutants of Nova binaries and saved-program archives, and what Nova does with them.

Shared by the fuzz tests (test_fuzz_*.py, a few hundred cases under hypothesis) and
the long run (scripts/fuzz_binaries.py). Every mutant gets one outcome:

* ``rejected``: the loader raised one of Nova's errors (NovaRuntimeError);
* ``ran`` / ``ran-differs``: it passed validation and simulated to completion
  (with the original's outputs, or others: a flipped weight may change results);
* ``faulted``: it passed validation and the simulator reported a run-time fault
  (EngineFaultError, DeadlockError, BudgetExceededError, HostMemoryError, ...);
* failures: ``gap`` (a validated binary that the simulator calls malformed
  (ProgramError) or that touches memory outside a tile's proven range
  (MemoryFaultError): a broken instruction reached the simulator), ``raw`` (any
  exception that is not one of Nova's), ``cli`` (``nova inspect`` printed a traceback
  or more than one error line), and, in the long run, ``hang`` and ``crash``.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import struct
import tempfile
import traceback
import zipfile
import zlib
from pathlib import Path
from typing import Any, Callable

import numpy as np

VECTORS = Path(__file__).resolve().parents[2] / "vectors"
FAILURES = ("gap", "raw", "cli", "hang", "crash")
#: Limits every mutant runs under: small enough that a case takes milliseconds.
SIM_ENV = {"NOVA_SIM_HOST_MEMORY": str(512 << 20), "NOVA_SIM_MAX_INSTRUCTIONS": "200000",
           "NOVA_SIM_MAX_TIME_S": "0.05"}
_INTERESTING = (0, 1, 2, 3, 7, 8, 16, 31, 32, 63, 64, 127, 128, 255, 256, 0x7FFF, 0x8000,
                0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, 1 << 34,
                (1 << 63) - 1, 1 << 63, (1 << 64) - 1)


# ---------------------------------------------------------------------------------
# Binaries

def seal(data: bytes | bytearray) -> bytes:
    """Recomputes the CRC-32 trailer (docs/binary-format.md 5): a crafted file."""
    data = bytearray(data)
    if len(data) >= 8:
        struct.pack_into("<I", data, len(data) - 4, zlib.crc32(bytes(data[:-4])))
    return bytes(data)


def truncate(data: bytes, size: int) -> bytes:
    """The first ``size`` bytes plus a fresh trailer, with the header's file_size
    fixed: a truncated file that passes the framing checks."""
    body = bytearray(data[:max(0, size)])
    total = len(body) + 8
    if len(body) >= 24:
        struct.pack_into("<Q", body, 16, total)
    return seal(bytes(body) + b"NCRC" + bytes(4))


def sections(data: bytes) -> list[tuple[int, int, int]]:
    """(type, offset, size) of the section-table entries (read raw: no validation)."""
    count, table = struct.unpack_from("<I", data, 12)[0], struct.unpack_from("<Q", data, 40)[0]
    out = []
    for k in range(count):
        stype, _, offset, size = struct.unpack_from("<IIQQ", data, table + 64 * k)
        out.append((stype, offset, size))
    return out


def mutate_binary(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One crafted mutant (CRC recomputed) and what was done to it. Half of the
    mutations land inside a section (code, tiles, groups, I/O, constants, debug),
    where the loader's rules rather than the framing have to catch them."""
    buf = bytearray(data)
    lo, body = 0, len(buf) - 4  # the CRC itself is recomputed anyway
    where = ""
    if rng.random() < 0.2:
        return _mutate_field(buf, rng)
    if rng.random() < 0.5:
        stype, offset, size = rng.choice([s for s in sections(data) if s[2] > 0])
        lo, body, where = offset, offset + size, f" of section type {stype}"
    kind = rng.random()
    if kind < 0.1:
        size = rng.randrange(len(buf) - 8)
        return truncate(data, size), f"truncate to {size}"
    if kind < 0.45:
        at, bit = rng.randrange(lo, body), rng.randrange(8)
        buf[at] ^= 1 << bit
        what = f"flip bit {bit} of byte {at}"
    elif kind < 0.7:
        at, value = rng.randrange(lo, body), rng.randrange(256)
        buf[at] = value
        what = f"byte {at} = {value}"
    else:
        width = rng.choice((2, 4, 8))
        at = rng.randrange(lo, max(lo + 1, body - width)) & ~(width - 1)
        value = rng.choice(_INTERESTING) & ((1 << (8 * width)) - 1)
        buf[at:at + width] = value.to_bytes(width, "little")
        what = f"u{8 * width} at {at} = {value}"
    return seal(buf), what + where


def _mutate_field(buf: bytearray, rng: random.Random) -> tuple[bytes, str]:
    """One field of one instruction word or tile descriptor set to a small or an
    extreme value: the mutants most likely to pass the framing checks."""
    from nova.binary.isa import TILE_DTYPE, WORD_DTYPE

    kind = rng.choice((1, 1, 2))  # CODE twice as often as TILES
    found = [s for s in sections(bytes(buf)) if s[0] == kind and s[2]]
    if not found:
        return seal(buf), "no section to mutate"
    _, offset, size = rng.choice(found)
    dtype = WORD_DTYPE if kind == 1 else TILE_DTYPE
    entry = offset + dtype.itemsize * rng.randrange(size // dtype.itemsize)
    name = rng.choice(dtype.names)
    field, at = dtype.fields[name][0], dtype.fields[name][1]
    width = field.itemsize if field.shape == () else field.base.itemsize
    at += entry + (width * rng.randrange(field.shape[0]) if field.shape else 0)
    value = (rng.randrange(16) if rng.random() < 0.6 else rng.choice(_INTERESTING)) \
        & ((1 << (8 * width)) - 1)
    buf[at:at + width] = value.to_bytes(width, "little")
    return seal(buf), f"{'word' if kind == 1 else 'tile'} field {name} at {at} = {value}"


def _inputs(entries: Any, seed: int) -> dict[int, np.ndarray]:
    """Deterministic inputs for I/O entries (small integers: gather indices stay in range)."""
    rng = np.random.default_rng(seed)
    out = {}
    for e in entries:
        dtype = np.dtype(np.float32) if e.dtype.name == "BF16" else e.dtype.numpy_dtype
        if dtype.kind == "f":
            out[e.index] = rng.standard_normal(e.shape).astype(dtype)
        elif dtype.kind == "b":
            out[e.index] = rng.integers(0, 2, e.shape).astype(bool)
        else:
            out[e.index] = rng.integers(0, 4, e.shape).astype(dtype)
    return out


def _same(a: dict, b: dict) -> bool:
    keys = [k for k in a if isinstance(k, int)]
    return keys == [k for k in b if isinstance(k, int)] and all(
        np.array_equal(np.asarray(a[k]), np.asarray(b[k]), equal_nan=True) for k in keys)


def run_binary(data: bytes, reference: dict | None = None) -> tuple[str, str]:
    """(outcome, detail) of loading and simulating one binary."""
    from nova.binary.format import load_binary
    from nova.runtime.errors import NovaRuntimeError
    from nova.sim import Simulator
    from nova.sim.errors import MemoryFaultError, ProgramError, SimulationError

    try:
        binary = load_binary(data)
    except NovaRuntimeError as error:
        return "rejected", str(error)
    except Exception:  # noqa: BLE001 - the fuzzer's job is to find these
        return "raw", "load: " + traceback.format_exc()
    # The timing-only mode first (no memories: other code paths), then the full run.
    try:
        Simulator(binary, functional=False).run()
    except (ProgramError, MemoryFaultError) as error:
        return "gap", f"timing-only: {type(error).__name__}: {error}"
    except SimulationError:
        pass  # the functional run reports the fault
    except Exception:  # noqa: BLE001
        return "raw", "timing-only run: " + traceback.format_exc()
    try:
        simulator = Simulator(binary)
        outputs, _ = simulator.run(_inputs(binary.inputs, 0))
    except (ProgramError, MemoryFaultError) as error:
        return "gap", f"{type(error).__name__}: {error}"
    except SimulationError as error:
        return "faulted", f"{type(error).__name__}: {error}"
    except Exception:  # noqa: BLE001
        return "raw", "run: " + traceback.format_exc()
    if reference is not None and not _same(outputs, reference):
        return "ran-differs", ""
    return "ran", ""


def reference_outputs(data: bytes) -> dict | None:
    """The outputs of the unmutated binary, or None if it does not run to the end."""
    from nova.binary.format import load_binary
    from nova.sim import Simulator
    from nova.sim.errors import SimulationError

    binary = load_binary(data)
    try:
        return Simulator(binary).run(_inputs(binary.inputs, 0))[0]
    except SimulationError:  # e.g. the collectives vector deadlocks on its own
        return None


# ---------------------------------------------------------------------------------
# Saved-program archives

def _members(data: bytes) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [(info, archive.read(info)) for info in archive.infolist()]


def _rezip(members: list[tuple[str, bytes]], method: int = zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as archive:
        for name, blob in members:
            archive.writestr(name, blob)
    return out.getvalue()


def _mutate_json(value: Any, rng: random.Random, depth: int = 0) -> Any:
    """A JSON value with one key dropped or one leaf replaced by another type."""
    leaves = (None, True, -1, 0, 3, 10**30, 1.5, "", "x", [], {}, [1, "a"], {"k": None})
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(sorted(value))
        out = dict(value)
        if rng.random() < 0.25:
            del out[key]
        else:
            out[key] = _mutate_json(value[key], rng, depth + 1)
        return out
    if isinstance(value, list) and value and rng.random() < 0.8:
        out = list(value)
        k = rng.randrange(len(out))
        if rng.random() < 0.25:
            del out[k]
        else:
            out[k] = _mutate_json(out[k], rng, depth + 1)
        return out
    if isinstance(value, str) and value and rng.random() < 0.5:
        chars = list(value)
        chars[rng.randrange(len(chars))] = rng.choice("{}[]\":,x0 ")
        return "".join(chars)
    return rng.choice(leaves)


def mutate_archive(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One corrupt archive and what was done to it."""
    members = [(info.filename, blob) for info, blob in _members(data)]
    kind = rng.random()
    if kind < 0.15:  # raw damage: the zip's own checks see it
        buf = bytearray(data)
        at = rng.randrange(len(buf))
        buf[at] = rng.randrange(256)
        return bytes(buf), f"raw byte {at}"
    if kind < 0.25:
        size = rng.randrange(len(data))
        return data[:size], f"truncate to {size}"
    if kind < 0.32:
        k = rng.randrange(len(members))
        return _rezip(members[:k] + members[k + 1:]), f"drop {members[k][0]}"
    if kind < 0.36:
        method = rng.choice((zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA))
        buf = bytearray(_rezip(members, method))
        if rng.random() < 0.5:  # an unknown compression method in a local header
            at = buf.find(b"PK\x03\x04")
            struct.pack_into("<H", buf, at + 8, rng.choice((1, 6, 97, 99, 0xFFFF)))
            return bytes(buf), "unknown compression method"
        return bytes(buf), f"recompressed ({method})"
    k = rng.randrange(len(members))
    name, blob = members[k]
    if name == "meta.json" and kind < 0.7:
        try:
            text = json.dumps(_mutate_json(json.loads(blob), rng)).encode()
        except ValueError:
            text = blob[:-1]
        what = "meta.json mutated"
    elif name.endswith(".nova"):
        text, what = mutate_binary(blob, rng)
        what = f"{name}: {what}"
    else:
        buf = bytearray(blob)
        if not buf:
            buf = bytearray(b"\0")
        if rng.random() < 0.5 and name.endswith(".npy"):
            at = rng.randrange(min(len(buf), 128))  # the .npy header
        else:
            at = rng.randrange(len(buf))
        buf[at] = rng.randrange(256)
        text, what = bytes(buf), f"{name}: byte {at}"
    if rng.random() < 0.1:
        text, what = text[:rng.randrange(len(text) + 1)], what + " then cut"
    members[k] = (name, text)
    return _rezip(members), what


def _inspect(path: Path) -> tuple[int, str]:
    from nova.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["inspect", str(path)])
    return code, err.getvalue()


def run_archive(data: bytes, workdir: Path | None = None) -> tuple[str, str]:
    """(outcome, detail) of ``nova.load``, a call, and ``nova inspect`` on one archive."""
    from nova.runtime.errors import NovaRuntimeError
    from nova.runtime.archive import load
    from nova.sim.errors import MemoryFaultError, ProgramError, SimulationError

    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = Path(tmp) / "mutant.novaprog"
        path.write_bytes(data)
        try:
            code, err = _inspect(path)
        except BaseException:  # noqa: BLE001 - SystemExit included: main must return
            return "cli", "inspect raised: " + traceback.format_exc()
        lines = err.strip().splitlines()
        if code not in (0, 1) or (code == 1 and len(lines) != 1) or "Traceback" in err:
            return "cli", f"inspect exit {code}: {err}"
        try:
            program = load(path)
        except NovaRuntimeError as error:
            if code == 0:
                return "cli", f"inspect accepted what nova.load rejects: {error}"
            return "rejected", str(error)
        except Exception:  # noqa: BLE001
            return "raw", "load: " + traceback.format_exc()
        if code != 0:
            return "cli", f"inspect rejected what nova.load accepts: {err}"
    try:
        _call(program)
    except (ProgramError, MemoryFaultError) as error:
        return "gap", f"{type(error).__name__}: {error}"
    except (SimulationError, NovaRuntimeError) as error:
        return "faulted", f"{type(error).__name__}: {error}"
    except Exception:  # noqa: BLE001
        return "raw", "call: " + traceback.format_exc()
    return "ran", ""


def _call(program: Any) -> None:
    """Runs a loaded program on deterministic inputs of its own shapes."""
    import torch

    entries = program.input_entries
    arrays = _inputs(entries, 0)
    program.run(*[torch.from_numpy(arrays[e.index]) for e in entries])


def build_programs(out: Path) -> dict[str, Path]:
    """Compiles the fuzzers' seed programs into ``out`` (a few seconds): a small MLP
    on the 1-chip tiny target (binary and archive) and the same MLP tensor-parallel
    on 2 chips (archive)."""
    import torch

    import nova
    from nova.parallel import Mesh, compile_parallel, megatron_mlp_plan

    class MLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.softmax(self.fc2(torch.relu(self.fc1(x))), -1)

    torch.manual_seed(0)
    model, x = MLP().eval(), torch.randn(4, 16)
    single = nova.compile(model, x, target="tiny")
    paths = {"mlp.nova": out / "mlp.nova", "mlp.novaprog": out / "mlp.novaprog",
             "mlp_tp2.novaprog": out / "mlp_tp2.novaprog"}
    paths["mlp.nova"].write_bytes(single.binary_bytes)
    single.save(paths["mlp.novaprog"])
    parallel = compile_parallel(model, x, mesh=Mesh((2,), ("tp",)), target="tiny",
                                plan=megatron_mlp_plan("fc1", "fc2", axis="tp"))
    parallel.save(paths["mlp_tp2.novaprog"])
    return paths


def tally(outcomes: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o] = counts.get(o, 0) + 1
    return counts


Mutator = Callable[[bytes, random.Random], "tuple[bytes, str]"]


# ---------------------------------------------------------------------------------
# pytest glue for the fuzz tests

class CaseTimeout(Exception):
    """A case ran past its wall-clock allowance (counted as a hang)."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raises CaseTimeout in the main thread after ``seconds`` (SIGALRM)."""
    import signal

    def expire(signum, frame):  # noqa: ARG001
        raise CaseTimeout(f"no result after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_SEED_PROGRAMS: dict[str, Path] = {}


def seed_programs(tmp_path_factory: Any) -> dict[str, Path]:
    """build_programs once per test session (both fuzz modules use them)."""
    if not _SEED_PROGRAMS:
        _SEED_PROGRAMS.update(build_programs(tmp_path_factory.mktemp("fuzz-seeds")))
    return _SEED_PROGRAMS


@contextlib.contextmanager
def sim_limits():
    """The fuzzers' host-memory and watchdog limits (SIM_ENV) in os.environ."""
    import os

    saved = {k: os.environ.get(k) for k in SIM_ENV}
    os.environ.update(SIM_ENV)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
