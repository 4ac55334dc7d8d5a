"""nova.binary.format decodes the shared test vectors (test/vectors/*.nova,
written by `nova-translate --nova-to-binary`) field by field."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from nova.runtime import BinaryFormatError, load_binary
from nova.binary.format import (
    IODType, Role, SectionType, disassemble,
)
from nova.binary.isa import (
    NO_TILE, WORD_DTYPE, DType, ElementwiseKind, Engine, Flag, MemorySpace, Opcode,
    ReductionKind, SaluKind, Tile,
)

VECTORS = Path(__file__).resolve().parents[2] / "vectors"
TARGETS = Path(__file__).resolve().parents[3] / "targets"


def vector(name: str) -> Path:
    path = VECTORS / f"{name}.nova"
    assert path.exists(), f"test vector {path.name} is missing (encode {name}.mlir with nova-translate)"
    return path


def tiny_target() -> dict:
    target = json.loads((TARGETS / "tiny.json").read_text())
    target.pop("description")
    return target


# ---------------------------------------------------------------------------
# matmul_relu: one SPMD program, DMA / matrix / vector, I/O table
# ---------------------------------------------------------------------------

def test_matmul_relu_header_and_target() -> None:
    b = load_binary(vector("matmul_relu"))
    h = b.header
    assert (h.format_version, h.isa_version, h.flags) == (1, 2, 0)
    assert h.target_name == "tiny" and h.chips == 2 == b.chips
    assert h.file_size == vector("matmul_relu").stat().st_size
    assert dict(b.target) == tiny_target()
    types = [s.type for s in b.sections]
    assert types == [SectionType.CODE, SectionType.TILES, SectionType.GROUPS,
                     SectionType.DEBUG, SectionType.IO]
    assert all(s.offset % 64 == 0 for s in b.sections)
    assert b.sections[0].chips == (0, 1) and b.sections[-1].chips == ()


def test_matmul_relu_code() -> None:
    b = load_binary(vector("matmul_relu"))
    assert len(b.programs) == 1
    p = b.program_for(0)
    assert p is b.program_for(1) and p.chips == (0, 1)
    code = b.code(1)
    assert len(code) == len(p) == 17
    ops = [i.opcode for i in code]
    assert ops == [Opcode.LI] * 8 + [Opcode.DMA_COPY] * 3 + [
        Opcode.MATMUL, Opcode.VBINARY, Opcode.VUNARY, Opcode.DMA_COPY,
        Opcode.SEM_WAIT, Opcode.HALT]
    assert [i.imm0 for i in code[:8]] == [0, 256, 512, 1024, 0, 256, 512, 0]
    assert len({i.rd for i in code[:8]}) == 8  # all eight live at once

    dma = code[8]
    assert dma.engine == Engine.DMA and dma.queue == 0
    assert dma.ra == code[0].rd and dma.rdst == code[4].rd
    assert dma.tiles[1:3] == (NO_TILE, NO_TILE)
    assert p.tiles[dma.tiles[0]] == Tile(MemorySpace.HBM, DType.F32, (8, 8), (8, 1))
    assert p.tiles[dma.tiles[3]] == Tile(MemorySpace.SRAM, DType.F32, (8, 8), (8, 1))
    assert dma.signal_ids == (0,) and dma.wait == 0 and not dma.has_flag(Flag.PEER)
    assert code[9].queue == 1

    mm = code[11]
    assert mm.engine == Engine.MATRIX
    assert mm.wait_ids == (0, 1) and mm.signal_ids == (3,)
    assert not mm.has_flag(Flag.ACCUMULATE)
    assert p.tiles[mm.tiles[3]].space == MemorySpace.ACC
    assert mm.tiles[0] == mm.tiles[1]  # identical descriptors share an entry

    add, relu = code[12], code[13]
    assert add.kind == ElementwiseKind.ADD and add.wait_ids == (2, 3)
    assert p.tiles[add.tiles[1]].shape == (1, 8)
    assert relu.kind == ElementwiseKind.RELU and relu.signal_ids == (4,)
    assert code[15].wait_ids == (5,)
    assert len(p.tiles) == 5 and p.groups == ()


def test_matmul_relu_io_and_debug() -> None:
    b = load_binary(vector("matmul_relu"))
    io = {e.name: e for e in b.io}
    assert list(io) == ["x", "w", "arg2", "bias"]  # default name arg<index>
    x, y, bias = io["x"], io["arg2"], io["bias"]
    assert (x.index, x.role, x.dtype, x.shape, x.address, x.byte_size) == (
        0, Role.INPUT, IODType.F32, (8, 8), 0, 256)
    assert (y.index, y.role, y.address) == (2, Role.OUTPUT, 512)
    assert (bias.index, bias.shape, bias.address, bias.byte_size) == (3, (1, 8), 1024, 32)
    assert [e.name for e in b.inputs] == ["x", "w", "bias"]
    assert [e.name for e in b.outputs] == ["arg2"]
    assert b.constants == ()
    debug = b.programs[0].debug
    assert debug[0] == "matmul_relu.mlir:9:11"
    assert debug[16].startswith("matmul_relu.mlir:")  # the HALT of func.return
    assert sorted(debug) == list(range(17))


# ---------------------------------------------------------------------------
# control_flow: loops, branches, scalar ALU, vector immediates
# ---------------------------------------------------------------------------

def test_control_flow_structure() -> None:
    b = load_binary(vector("control_flow"))
    code = b.code(0)
    ops = [i.opcode for i in code]
    assert ops[:5] == [Opcode.CHIP_ID, Opcode.LI, Opcode.LI, Opcode.LI, Opcode.SALU]
    assert code[1].imm0 == 0  # arith.constant 0 : index -> LI
    assert code[4].kind == SaluKind.EQ and code[4].ra == code[0].rd and code[4].rb == code[1].rd

    outer, inner = code[5], code[7]
    assert outer.opcode == inner.opcode == Opcode.LOOP
    # outer: 0 to %four step 1 -> ub in a register, lb and step immediate
    assert outer.flags == Flag.UB_REG and outer.rb == code[2].rd
    assert (outer.imm0, outer.imm2) == (0, 1)
    # inner: %i to 16 step %four
    assert inner.flags == Flag.LB_REG | Flag.STEP_REG
    assert inner.ra == outer.rd and inner.imm1 == 16 and inner.rc == code[2].rd
    assert code[inner.target].opcode == Opcode.ENDLOOP and code[inner.target].target == 7
    assert code[outer.target].opcode == Opcode.ENDLOOP and code[outer.target].target == 5
    assert outer.target == 12 and inner.target == 10

    if_else, els, endif = code[13], code[15], code[17]
    assert (if_else.opcode, els.opcode, endif.opcode) == (Opcode.IF, Opcode.ELSE, Opcode.ENDIF)
    assert if_else.target == 15 and els.target == 17 and if_else.ra == code[4].rd
    assert code[14].signal_ids == (0,) and code[16].signal_ids == (1, 63)
    assert code[16].signal == (1 << 1) | (1 << 63)
    if_only = code[18]
    assert if_only.opcode == Opcode.IF and if_only.target == 20
    assert code[20].opcode == Opcode.ENDIF
    assert ops[-1] == Opcode.HALT and ops.count(Opcode.HALT) == 1


def test_control_flow_vector_immediates() -> None:
    b = load_binary(vector("control_flow"))
    p = b.programs[0]
    code = p.instructions
    vscalar, vfill = code[9], code[11]
    assert vscalar.kind == ElementwiseKind.MUL and vscalar.imm0_f64 == -1.5
    assert vfill.opcode == Opcode.VFILL and vfill.imm0_f64 == 0.0
    assert vfill.tiles[:3] == (NO_TILE,) * 3
    vreduce = code[19]
    assert vreduce.kind == ReductionKind.MAX and vreduce.imm0 == 1
    assert p.tiles[vreduce.tiles[3]].shape == (4, 1)
    vt = code[21]
    assert vt.opcode == Opcode.VTRANSPOSE and vt.perm[:2] == (1, 0)
    sel = code[22]
    assert sel.opcode == Opcode.VSELECT and NO_TILE not in sel.tiles
    assert p.tiles[sel.tiles[2]].shape == (1, 1)
    assert {t.dtype for t in p.tiles} == {DType.BF16}
    assert code[23].opcode == Opcode.NOP and code[23].engine == Engine.VECTOR
    assert code[23].signal_ids == (7,)
    io = b.io
    assert [(e.name, e.dtype, e.shape) for e in io] == [
        ("x", IODType.BF16, (4, 16)), ("y", IODType.BF16, (16, 4))]


# ---------------------------------------------------------------------------
# collectives: replica-group table, peers, channels
# ---------------------------------------------------------------------------

def test_collectives() -> None:
    b = load_binary(vector("collectives"))
    assert b.chips == 4 and b.target["topology"] == "ring"
    p = b.program_for(3)
    assert p.groups == (((0, 1), (2, 3)), ((0, 1, 2, 3),), ((0, 2), (1, 3)))
    code = {i.opcode: i for i in p.instructions}
    ar = code[Opcode.ALL_REDUCE]
    assert ar.kind == ReductionKind.SUM and ar.group == 0 and ar.signal_ids == (0,)
    rs = code[Opcode.REDUCE_SCATTER]
    assert rs.kind == ReductionKind.AVG and rs.group == 1 and rs.imm0 == 0
    assert code[Opcode.ALL_GATHER].group == 1
    a2a = code[Opcode.ALL_TO_ALL]
    assert (a2a.group, a2a.imm0, a2a.imm1) == (2, 0, 1)
    assert p.tiles[a2a.tiles[3]].shape == (32, 128)
    send, recv = code[Opcode.SEND], code[Opcode.RECV]
    assert send.has_flag(Flag.PEER) and recv.has_flag(Flag.PEER)
    assert send.imm1 == recv.imm1 == 3 and send.rc == recv.rc
    assert send.tiles[3] == NO_TILE and recv.tiles[0] == NO_TILE
    dma = code[Opcode.DMA_COPY]
    assert dma.queue == 15 and dma.has_flag(Flag.PEER) and dma.rc == send.rc
    assert code[Opcode.BARRIER].group == 0
    li = [i for i in p.instructions if i.opcode == Opcode.LI]
    assert li[-1].imm0 == 17179869184
    out = b.outputs[0]
    assert out.name == "shard" and out.address == 17179869184 and out.byte_size == 4096


def test_constants_vector() -> None:
    b = load_binary(vector("constants"))
    consts = {c.name: c for c in b.constants}
    assert np.frombuffer(consts["bias"].data, "<f4").tolist() == [
        0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 0.0, 0.25]
    assert consts["bias"].address == 1024
    assert consts["ones"].data == struct.pack("<4H", *[0x3F80] * 4)  # bf16 1.0
    assert consts["mask"].data == b"\x01\x00\x01" and consts["mask"].address == 4096


def test_pipeline_vector() -> None:
    b = load_binary(vector("pipeline"))
    assert len(b.programs) == 2
    p0, p1 = b.program_for(0), b.program_for(1)
    assert p0.chips == (0,) and p1.chips == (1,)
    assert Opcode.SEND in [i.opcode for i in p0.instructions]
    assert Opcode.RECV in [i.opcode for i in p1.instructions]
    assert [e.name for e in b.io] == ["x", "y"]
    assert b.io[0].dtype == IODType.F16


# ---------------------------------------------------------------------------
# API surface
# ---------------------------------------------------------------------------

def test_load_from_bytes_path_and_str() -> None:
    path = vector("matmul_relu")
    data = path.read_bytes()
    for source in (path, str(path), data, bytearray(data), memoryview(data)):
        assert len(load_binary(source).code(0)) == 17


def test_words_are_a_structured_array() -> None:
    p = load_binary(vector("control_flow")).programs[0]
    assert p.words.dtype == WORD_DTYPE
    assert (p.words["opcode"] == [int(i.opcode) for i in p.instructions]).all()
    assert not p.words.flags.writeable


def test_disassemble() -> None:
    text = disassemble(load_binary(vector("control_flow")))
    assert "target tiny (2 chips)" in text
    assert "loop r4 = 0 to r2 step 1  -> 12" in text
    assert "vscalar mul r7:t0, -1.5 -> r7:t0 on vector" in text
    assert "; control_flow.mlir:" in text
    assert "input 0 'x': bf16[4, 16] at hbm 0x1000 (128 bytes)" in text


def test_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from nova.binary.format import main
    assert main([str(vector("collectives"))]) == 0
    assert "all_to_all" in capsys.readouterr().out
    bad = VECTORS / "collectives.mlir"
    assert main([str(bad)]) == 1
    assert "bad magic" in capsys.readouterr().err


def test_crc_is_zlib_crc32() -> None:
    data = vector("matmul_relu").read_bytes()
    assert data[-8:-4] == b"NCRC"
    assert struct.unpack("<I", data[-4:])[0] == zlib.crc32(data[:-4])


def test_error_type() -> None:
    assert issubclass(BinaryFormatError, ValueError)


def test_simulator_runs_the_vector() -> None:
    """Integration: the simulator (nova.sim) runs the emitted matmul_relu
    binary and matches numpy."""
    sim = pytest.importorskip("nova.sim.simulator")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 8)).astype(np.float32)
    w = rng.standard_normal((8, 8)).astype(np.float32)
    bias = rng.standard_normal((1, 8)).astype(np.float32)
    out, _ = sim.Simulator(vector("matmul_relu")).run({"x": x, "w": w, "bias": bias})
    np.testing.assert_allclose(out["arg2"], np.maximum(x @ w + bias, 0), rtol=1e-5, atol=1e-5)


def test_integer_gather_vector() -> None:
    """ISA 2: the C++ encoder's integer tiles, register vfill, vassert (its
    message in the DEBUG text) and dma_gather decode, and the simulator runs
    them: an embedding lookup checked against torch-style indexing, then an
    out-of-range id faults with the assertion's message."""
    from nova.sim import Simulator
    from nova.sim.errors import AssertionFailedError
    from nova.binary.isa import DType
    b = load_binary(vector("integer_gather"))
    code = b.code(0)
    ops = [i.opcode for i in code]
    for op in (Opcode.VIOTA, Opcode.VASSERT, Opcode.DMA_GATHER, Opcode.VFILL):
        assert op in ops
    assert any(t.dtype == DType.I64 for t in b.program_for(0).tiles)
    assert any(t.dtype == DType.I1 for t in b.program_for(0).tiles)
    debug = b.program_for(0).debug
    check = ops.index(Opcode.VASSERT)
    assert debug[check].endswith(": index must be smaller than dim size")
    table = np.arange(64, dtype=np.float32).reshape(16, 4)
    ids = np.array([[3], [0], [15]], dtype=np.int64)
    out, _ = Simulator(vector("integer_gather")).run({"table": table, "ids": ids})
    np.testing.assert_array_equal(out["rows"], table[ids[:, 0]])
    with pytest.raises(AssertionFailedError, match="index must be smaller than dim size"):
        Simulator(vector("integer_gather")).run({"table": table, "ids": np.array([[3], [16], [1]])})
