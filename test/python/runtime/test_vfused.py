"""ISA version 5: VFUSED, two binary elementwise stages in one vector pass (docs/isa.md
2.4, 3.2, 4). Binaries are built word by word (novabin), loaded by the decoder and run:
VFUSED equals VBINARY / VSCALAR twice through a tile of X's type, bit for bit, costs
``overhead + ceil(E / L) * max(c(op0), c(op1))`` cycles and counts 2 E element-ops;
the decoder rejects what the spec forbids."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from novabin import build, f64bits, target, tile, word

from nova.binary.disassembly import format_instruction
from nova.binary.isa import NO_TILE, TILE_DTYPE, Engine, Opcode
from nova.runtime import BinaryFormatError, load_binary
from nova.sim import Simulator, decoupled, fast_timing
from nova.sim.errors import ProgramError
from nova.sim.program import ChipCode, Program, program_from_binary

HBM, SRAM = 0, 1
F32, BF16, F16, I32 = 0, 1, 2, 4  # tile dtype codes (docs/isa.md 3.5); the float ones are also the I/O codes
KINDS = {"add": 32, "sub": 33, "mul": 34, "div": 35, "max": 36, "min": 37}
PAIRS = list(itertools.product(KINDS, KINDS))
SHAPE = (4, 8)
#: A and B: a whole tile, a per-row [n, 1] tile, a [1, 1] tile, or an immediate (None).
FORMS = {"tile": SHAPE, "row": (4, 1), "one": (1, 1), "imm": None}
IMMEDIATES = (0.5, -1.25)  # exact in bf16, so every reference rounds them alike
#: At most two of X, A, B at the full rate: A and B are not both whole tiles.
FORM_PAIRS = [(fa, fb) for fa, fb in itertools.product(FORMS, FORMS) if (fa, fb) != ("tile", "tile")]
HALT = word(opcode=Opcode.HALT, engine=Engine.SCALAR)
ACT = {"lanes": 8, "overhead_cycles": 10, "elementwise_factor": 1, "transcendental_factor": 2}


def nbytes(dtype: int, shape: tuple[int, ...]) -> int:
    return math.prod(shape) * (4 if dtype == F32 else 2)


class Builder:
    """One straight-line program: inputs DMA'd into sram, vector work, results DMA'd
    out into one [k, ...] output. Registers: r1 a scratch address, r10..r12 the
    sram addresses of x, a, b, r13 the result's, r14 the intermediate's."""

    def __init__(self, dtype: int) -> None:
        self.dtype = dtype
        self.words: list[np.ndarray] = []
        self.tiles: list[bytes] = []
        self.io: list[tuple] = []
        self.hbm, self.sram = 0, 0
        self.waits = 0  # the semaphores the first vector instruction waits for
        self.results = 0
        self.out_base = 0  # hbm address of the output

    def tile(self, space: int, shape: tuple[int, ...]) -> int:
        t = tile(space, self.dtype, shape).tobytes()
        if t not in self.tiles:
            self.tiles.append(t)
        return self.tiles.index(t)

    def alloc(self, space: int, shape: tuple[int, ...]) -> int:
        size = -(-nbytes(self.dtype, shape) // 64) * 64
        if space == HBM:
            self.hbm += size
            return self.hbm - size
        self.sram += size
        return self.sram - size

    def li(self, rd: int, value: int) -> None:
        self.words.append(word(opcode=Opcode.LI, engine=Engine.SCALAR, rd=rd, imm0=value))

    def load(self, name: str, shape: tuple[int, ...], reg: int, sem: int) -> int:
        """An input in sram at register ``reg``: its tile index."""
        src, dst = self.alloc(HBM, shape), self.alloc(SRAM, shape)
        self.io.append((len(self.io), 0, name, self.dtype, shape, src))
        self.li(1, src)
        self.li(reg, dst)
        t = self.tile(SRAM, shape)
        self.words.append(word(opcode=Opcode.DMA_COPY, engine=Engine.DMA, ra=1, tile_a=self.tile(HBM, shape),
                               rdst=reg, tile_d=t, signal=1 << sem))
        self.waits |= 1 << sem
        return t

    def vector(self, **fields: int) -> None:
        """A vector instruction; the first waits for the inputs."""
        self.words.append(word(engine=Engine.VECTOR, wait=self.waits, **fields))
        self.waits = 0

    def result(self) -> int:
        """Points r13 at a fresh sram tile of the result's shape; returns the tile."""
        self.li(13, self.alloc(SRAM, SHAPE))
        self.results += 1
        return self.tile(SRAM, SHAPE)

    def store(self, ty: int, last: bool) -> None:
        """DMA out the result at r13 (after the vector instruction that signalled 3)."""
        self.li(1, self.out_base + (self.results - 1) * nbytes(self.dtype, SHAPE))
        self.words.append(word(opcode=Opcode.DMA_COPY, engine=Engine.DMA, ra=13, tile_a=ty, rdst=1,
                               tile_d=self.tile(HBM, SHAPE), wait=1 << 3, signal=(1 << 4) if last else 0))

    def binary(self, count: int) -> bytes:
        self.io.append((len(self.io), 1, "y", self.dtype, (count,) + SHAPE, self.out_base))
        words = self.words + [word(opcode=Opcode.SEM_WAIT, engine=Engine.SCALAR, wait=1 << 4), HALT]
        tiles = [np.frombuffer(t, TILE_DTYPE) for t in self.tiles]
        return build(words, tiles, io=self.io, isa_version=5)


def operands(b: Builder, fa: str, fb: str) -> tuple[dict, dict]:
    """Loads x and the tile forms of A and B; returns VFUSED's fields for A and B."""
    b.load("x", SHAPE, 10, 0)
    fields = []
    for name, form, reg, sem, slot, imm, value in (("a", fa, 11, 1, "b", "imm0", IMMEDIATES[0]),
                                                   ("b", fb, 12, 2, "c", "imm1", IMMEDIATES[1])):
        if FORMS[form] is None:
            fields.append({f"tile_{slot}": NO_TILE, imm: f64bits(value)})
        else:
            fields.append({f"r{slot}": reg, f"tile_{slot}": b.load(name, FORMS[form], reg, sem)})
    b.out_base = b.alloc(HBM, (len(PAIRS),) + SHAPE)
    return fields[0], fields[1]


def fused_binary(dtype: int, fa: str, fb: str, pairs=PAIRS) -> bytes:
    """One VFUSED per kind pair, each into its own result."""
    b = Builder(dtype)
    a, c = operands(b, fa, fb)
    tx = b.tile(SRAM, SHAPE)
    for k, (op0, op1) in enumerate(pairs):
        ty = b.result()
        b.vector(opcode=Opcode.VFUSED, kind=KINDS[op0], imm2=KINDS[op1], ra=10, tile_a=tx, rdst=13, tile_d=ty,
                 signal=1 << 3, **a, **c)
        b.store(ty, k == len(pairs) - 1)
    return b.binary(len(pairs))


def stage(kind: int, ra: int, ta: int, operand: dict, slot: str, rdst: int, td: int, **sync: int) -> dict:
    """VBINARY with the operand's tile, or VSCALAR with its immediate."""
    if operand.get(f"tile_{slot}", NO_TILE) == NO_TILE:
        return dict(opcode=Opcode.VSCALAR, kind=kind, ra=ra, tile_a=ta, rdst=rdst, tile_d=td,
                    imm0=operand["imm0" if slot == "b" else "imm1"], **sync)
    return dict(opcode=Opcode.VBINARY, kind=kind, ra=ra, tile_a=ta, rb=operand[f"r{slot}"],
                tile_b=operand[f"tile_{slot}"], rdst=rdst, tile_d=td, **sync)


def sequence_binary(dtype: int, fa: str, fb: str) -> bytes:
    """The same, each as two instructions through a tile of X's type (r14, of the one dtype)."""
    b = Builder(dtype)
    a, c = operands(b, fa, fb)
    tx = b.tile(SRAM, SHAPE)
    b.li(14, b.alloc(SRAM, SHAPE))
    tt = b.tile(SRAM, SHAPE)
    for k, (op0, op1) in enumerate(PAIRS):
        ty = b.result()
        b.vector(**stage(KINDS[op0], 10, tx, a, "b", 14, tt))
        b.vector(**stage(KINDS[op1], 14, tt, c, "c", 13, ty, signal=1 << 3))
        b.store(ty, k == len(PAIRS) - 1)
    return b.binary(len(PAIRS))


rng = np.random.default_rng(5)
INPUTS = {form: rng.standard_normal(shape).astype(np.float32) + 0.125
          for form, shape in (("x", SHAPE), ("tile", SHAPE), ("row", (4, 1)), ("one", (1, 1)))}


def inputs(fa: str, fb: str, dtype: int = F32) -> dict:
    given = {"x": INPUTS["x"]}
    for name, form in (("a", fa), ("b", fb)):
        if FORMS[form] is not None:
            given[name] = INPUTS[form] * (1.5 if name == "b" else 1.0)
    # f16 inputs are given as float16 (bf16 ones as float32, rounded by the simulator)
    return {k: v.astype(np.float16) for k, v in given.items()} if dtype == F16 else given


def run(data: bytes, given: dict, trace: bool) -> np.ndarray:
    """``trace``: the Python event loop (a traced run); else the decoupled replay where
    the compiled loop is built (nova.sim.decoupled)."""
    out, _ = Simulator(load_binary(data), trace=trace).run(given)
    return out["y"]


def bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def reference(given: dict, fa: str, fb: str, dtype: int) -> np.ndarray:
    """torch per pair (bf16 and f16: computes in f32 and rounds each result)."""
    import torch

    fns = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
           "max": torch.maximum, "min": torch.minimum}
    tdt = {F32: torch.float32, BF16: torch.bfloat16, F16: torch.float16}[dtype]
    t = lambda v: torch.tensor(np.asarray(v, np.float32)).to(tdt)  # noqa: E731
    x = t(given["x"])
    a = t(given["a"]) if "a" in given else t(IMMEDIATES[0])
    b = t(given["b"]) if "b" in given else t(IMMEDIATES[1])
    return np.stack([fns[op1](fns[op0](x, a), b).float().numpy() for op0, op1 in PAIRS])


@pytest.fixture
def took(monkeypatch):
    """Whether each untraced functional run went decoupled (replay_plan's effects)."""
    seen = []
    real = decoupled.run

    def spy(m):
        ok = real(m)
        if m.trace is None:
            seen.append(ok)
        return ok

    monkeypatch.setattr("nova.sim.engines.decoupled.run", spy)
    return seen


@pytest.mark.parametrize("dtype", [F32, BF16, F16], ids=["f32", "bf16", "f16"])
@pytest.mark.parametrize("fa,fb", FORM_PAIRS, ids=[f"{a}-{b}" for a, b in FORM_PAIRS])
def test_equals_the_two_instruction_sequence(dtype, fa, fb, took):
    given = inputs(fa, fb, dtype)
    fused = fused_binary(dtype, fa, fb)
    want = run(sequence_binary(dtype, fa, fb), given, trace=True)
    for trace in (True, False):
        got = run(fused, given, trace)
        np.testing.assert_array_equal(bits(got), bits(want), err_msg=f"trace={trace}")
    # Untraced runs replay the effects (f32: replay_plan's own form) where the compiled loop is built.
    assert took == [fast_timing.available()]
    np.testing.assert_array_equal(bits(got), bits(reference(given, fa, fb, dtype)))


def test_the_intermediate_is_rounded_to_the_tiles_type():
    """bf16: x * a = 1 + 2^-5 + 3 * 2^-14 rounds to 1 + 2^-5 before b = -1 is added, so
    the result is 2^-5; unrounded it would be 2^-5 + 3 * 2^-14, which is 2^-5 (1 + 2^-7) in bf16."""
    given = {"x": np.full(SHAPE, 1 + 2 ** -7, np.float32), "a": np.full((1, 1), 1 + 3 * 2 ** -7, np.float32),
             "b": np.full((1, 1), -1.0, np.float32)}
    data = fused_binary(BF16, "one", "one", [("mul", "add")])
    for trace in (True, False):
        np.testing.assert_array_equal(run(data, given, trace)[0], np.full(SHAPE, 2 ** -5, np.float32))


# --------------------------------------------------------------------------------------
# Cost and report

def single(op0: str, op1: str, shape=(3, 10), dtype: int = F32, engine: Engine = Engine.VECTOR, **kw) -> bytes:
    """x in sram, y = vfused(x, 2.0, 3.0) of ``shape`` (E = 30: not a multiple of the 8 lanes)."""
    tx = tile(SRAM, dtype, shape)
    words = [word(opcode=Opcode.LI, engine=Engine.SCALAR, rd=1, imm0=0),
             word(opcode=Opcode.LI, engine=Engine.SCALAR, rd=2, imm0=256),
             word(opcode=Opcode.VFUSED, engine=engine, kind=KINDS[op0], imm2=KINDS[op1], ra=1, tile_a=0,
                  tile_b=NO_TILE, imm0=f64bits(2.0), tile_c=NO_TILE, imm1=f64bits(3.0), rdst=2, tile_d=0), HALT]
    return build(words, [tx], **{"isa_version": 5, **kw})


@pytest.mark.parametrize("op0,op1,c", [("mul", "add", 1), ("div", "mul", 4), ("add", "div", 4),
                                       ("max", "min", 1)])
@pytest.mark.parametrize("functional", [True, False])
def test_cost_is_the_slower_stage(op0, op1, c, functional):
    binary = load_binary(single(op0, op1))
    tg = binary.target
    cycles = tg["timing"]["vector_overhead_cycles"] + math.ceil(30 / tg["vector_lanes"]) * c
    _, report = Simulator(binary, functional=functional).run({})
    (stat,) = [s for s in report.instr_stats if s.name == "vfused"]
    assert stat.busy_ns == pytest.approx(cycles * 1000 / tg["clock_mhz"])
    assert stat.engine == "vector" and stat.count == 1
    assert stat.vector_ops == 2 * 30
    assert stat.vector_ns == pytest.approx(30 * c / tg["vector_lanes"] * 1000 / tg["clock_mhz"])
    (vector,) = [e for e in report.engines if e.engine == "vector"]
    assert vector.instructions == 1 and vector.busy_ns == stat.busy_ns


def test_disassembly():
    code = load_binary(single("mul", "add")).code(0)
    assert format_instruction(code[2], 0, ()) == "vfused mul, add r1:t0, 2.0, 3.0 -> r2:t0 on vector"
    code = load_binary(fused_binary(F32, "row", "imm", [("sub", "div")])).code(0)
    (ins,) = [i for i in code if i.opcode == Opcode.VFUSED]
    # x in t0 (sram) and t1 (hbm), a in t2 (sram [4, 1]) and t3; the result in t0's shape
    assert format_instruction(ins, 0, ()) == \
        "vfused sub, div r10:t0, r11:t2, -1.25 -> r13:t0 on vector wait [0, 1] signal [3]"


# --------------------------------------------------------------------------------------
# What the decoder rejects

def rejects(data: bytes, pattern: str) -> None:
    with pytest.raises(BinaryFormatError, match=pattern):
        load_binary(data)


def test_version_5_is_needed():
    rejects(single("mul", "add", isa_version=4), "instruction 2: VFUSED needs ISA version 5")
    assert load_binary(single("mul", "add")).header.isa_version == 5


@pytest.mark.parametrize("field,value,pattern", [
    ("imm2", 38, "VFUSED op1 kind 38 \\(imm2\\) is not one of add\\(32\\)"),
    ("imm2", 3, "VFUSED op1 kind 3 \\(imm2\\)"),
    ("kind", 39, "kind 39 is not valid for VFUSED"),
    ("kind", 3, "kind 3 is not valid for VFUSED"),
    ("flags", 16, "flag bits 0x10 are not defined for VFUSED"),
    ("rb", 3, "nonzero reserved field 'rb' \\(= 3\\), not used by VFUSED"),
    ("queue", 1, "nonzero reserved field 'queue'"),
])
def test_rejected_fields(field, value, pattern):
    words = [word(opcode=Opcode.VFUSED, engine=Engine.VECTOR, kind=34, imm2=32, tile_a=0, tile_d=0,
                  tile_b=NO_TILE, tile_c=NO_TILE), HALT]
    words[0][field] = value
    rejects(build(words, [tile(SRAM, F32, SHAPE)], isa_version=5), pattern)


def test_an_operand_is_a_tile_or_an_immediate_not_both():
    words = [word(opcode=Opcode.VFUSED, engine=Engine.VECTOR, kind=34, imm2=32, tile_a=0, tile_b=0, tile_c=NO_TILE,
                  tile_d=0, imm0=f64bits(0.5)), HALT]
    rejects(build(words, [tile(SRAM, F32, (4, 1))], isa_version=5), "nonzero reserved field 'imm0'")
    words[0]["tile_b"], words[0]["imm0"], words[0]["tile_c"], words[0]["imm1"] = NO_TILE, 0, 0, 1
    rejects(build(words, [tile(SRAM, F32, (4, 1))], isa_version=5), "nonzero reserved field 'imm1'")


def vfused_word(a: int, b: int, c: int, d: int, **kw) -> np.ndarray:
    return word(opcode=Opcode.VFUSED, engine=Engine.VECTOR, kind=34, imm2=32, tile_a=a, tile_b=b, tile_c=c,
                tile_d=d, **kw)


@pytest.mark.parametrize("shapes,pattern", [
    ([SHAPE, SHAPE, SHAPE, SHAPE], "VFUSED reads x, a and b at the full rate \\(last dimension 8\\)"),
    ([SHAPE, (1, 8), SHAPE, SHAPE], "at most two may be"),
    ([SHAPE, SHAPE, (1, 8), SHAPE], "at most two may be"),
    ([(1, 8), SHAPE, (4, 1), SHAPE], "VFUSED input x \\[1, 8\\] must have the output's shape \\[4, 8\\]"),
    ([(4, 1), (4, 1), (4, 1), SHAPE], "VFUSED input x \\[4, 1\\] must have the output's shape"),
    ([SHAPE, (2, 8), (4, 1), SHAPE], "VFUSED input a shape \\[2, 8\\] does not broadcast"),
    ([SHAPE, (4, 1), (8,), SHAPE], "VFUSED input b shape \\[8\\] does not broadcast"),
])
def test_rejected_shapes(shapes, pattern):
    tiles = [tile(SRAM, F32, s) for s in shapes]
    rejects(build([vfused_word(0, 1, 2, 3), HALT], tiles, isa_version=5), pattern)


def test_full_rate_needs_a_last_dimension_above_1():
    """With Y [4, 1] no operand streams at the full rate: three whole tiles are fine."""
    col = tile(SRAM, F32, (4, 1))
    load_binary(build([vfused_word(0, 0, 0, 0), HALT], [col], isa_version=5))


@pytest.mark.parametrize("dtypes,pattern", [
    ((I32, I32, I32, I32), "vfused takes float tiles, got i32"),
    ((F32, BF16, F32, F32), "vfused operands must have one element type, got f32, bf16, f32"),
    ((BF16, BF16, F16, BF16), "vfused operands must have one element type"),
    ((F32, F32, F32, I32), "vfused takes float tiles"),
])
def test_rejected_types(dtypes, pattern):
    tiles = [tile(SRAM, dt, SHAPE if k != 1 else (4, 1)) for k, dt in enumerate(dtypes)]
    rejects(build([vfused_word(0, 1, 2, 3), HALT], tiles, isa_version=5), pattern)


def test_rejected_spaces():
    tiles = [tile(HBM, F32, SHAPE), tile(SRAM, F32, SHAPE)]
    rejects(build([vfused_word(0, NO_TILE, NO_TILE, 1), HALT], tiles, isa_version=5),
            "VFUSED input a must live in sram or acc, got hbm")
    repeats = tile(SRAM, F32, SHAPE, [0, 1])
    rejects(build([vfused_word(1, NO_TILE, NO_TILE, 0), HALT], [repeats, tiles[1]], isa_version=5),
            "VFUSED output .* repeats elements")


def test_never_on_the_activation_engine():
    tg = target(chips=1, activation=ACT)
    rejects(single("mul", "add", engine=Engine.ACTIVATION, tg=tg), "VFUSED cannot run on engine activation")
    # A program built without the decoder: the simulator refuses it too.
    program = program_from_binary(load_binary(single("mul", "add", tg=tg)))
    chip = program.chips[0]
    code = list(chip.code)
    code[2] = dataclasses.replace(code[2], engine=int(Engine.ACTIVATION))
    bad = Program(program.target, (ChipCode(tuple(code), chip.tiles, chip.groups),), program.io)
    with pytest.raises(ProgramError, match="instruction 2 \\(vfused\\) cannot run on the activation engine"):
        Simulator(bad).run({})


def test_unsupported_versions_name_version_5():
    rejects(single("mul", "add", isa_version=6), "unsupported ISA version 6 .* version 5: 4 plus VFUSED")


def test_the_encoders_vector_decodes_and_runs() -> None:
    """test/vectors/vfused.nova, written by nova-translate (lit checks it byte for
    byte): ISA 5, a VFUSED with tiles and one with immediates, and their numbers."""
    from pathlib import Path

    binary = load_binary(Path(__file__).resolve().parents[2] / "vectors" / "vfused.nova")
    assert binary.header.isa_version == 5
    fused = [ins for ins in binary.code(0) if ins.opcode == Opcode.VFUSED]
    assert [(ins.kind, ins.imm2) for ins in fused] == [(KINDS["mul"], KINDS["add"]),
                                                       (KINDS["div"], KINDS["max"])]
    assert fused[1].tiles[1] == NO_TILE and fused[1].tiles[2] == NO_TILE
    rng = np.random.default_rng(0)
    x, b = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2))
    s = np.array([[1.5]], dtype=np.float32)
    out, _ = Simulator(binary).run({"x": x, "b": b, "s": s})
    np.testing.assert_array_equal(out["y"], x * s + b)
    np.testing.assert_array_equal(out["z"], np.maximum(x / np.float32(4.0), np.float32(-1.0)))
