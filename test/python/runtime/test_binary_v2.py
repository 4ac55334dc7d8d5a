"""ISA version 2 in the decoder: integer and i1 tile dtypes, the new opcodes, kinds and
flags, their disassembly, the rejections, and a binary run end to end (DEBUG text in a
vassert fault). Binaries are written by the small writer in novabin.py."""

from __future__ import annotations

import numpy as np
import pytest

from novabin import build, f64bits, tile, word
from nova.runtime import BinaryFormatError, load_binary
from nova.binary.format import disassemble
from nova.binary.isa import (
    ISA_VERSION, DType, ElementwiseKind, Flag, Opcode, ReductionKind, element_bytes,
)

HBM, SRAM = 0, 1
F32, BF16, F16, I64, I32, I8, I1 = range(7)
V, D, S = 1, 3, 2  # engines
HALT = word(opcode=Opcode.HALT, engine=S)


def load(words, tiles, **kw):
    return load_binary(build(list(words) + [HALT], tiles, **kw))


def rejects(words, tiles, pattern, **kw):
    with pytest.raises(BinaryFormatError, match=pattern):
        load(words, tiles, **kw)


TILES = [tile(SRAM, F32, [4, 8]), tile(SRAM, I64, [4, 8]), tile(SRAM, I32, [4, 8]), tile(SRAM, I8, [4, 8]),
         tile(SRAM, I1, [4, 8]), tile(HBM, F32, [64, 8]), tile(SRAM, I32, [4, 1]), tile(SRAM, F32, [4, 1])]
TF, TI64, TI32, TI8, TI1, THBM, TI32COL, TFCOL = range(8)


def new_words():
    v = dict(engine=V)
    return [
        word(opcode=Opcode.VUNARY, kind=ElementwiseKind.FLOOR, ra=1, tile_a=TF, rdst=2, tile_d=TF, **v),
        word(opcode=Opcode.VBINARY, kind=ElementwiseKind.SHRU, ra=1, tile_a=TI32, rb=3, tile_b=TI32, rdst=2,
             tile_d=TI32, **v),
        word(opcode=Opcode.VSCALAR, kind=ElementwiseKind.AND, ra=1, tile_a=TI8, rdst=2, tile_d=TI8, imm0=-3, **v),
        word(opcode=Opcode.VSCALAR, kind=ElementwiseKind.MUL, flags=Flag.SCALAR_REG, ra=1, tile_a=TF, rb=9,
             rdst=2, tile_d=TF, **v),
        word(opcode=Opcode.VSCALAR, kind=ElementwiseKind.ADD, ra=1, tile_a=TF, rdst=2, tile_d=TF,
             imm0=f64bits(0.5), **v),
        word(opcode=Opcode.VFILL, flags=Flag.SCALAR_REG, ra=7, rdst=2, tile_d=TI64, **v),
        word(opcode=Opcode.VFILL, rdst=2, tile_d=TI1, imm0=1, **v),
        word(opcode=Opcode.VREDUCE, kind=ReductionKind.ARGMAX, ra=1, tile_a=TF, rdst=2, tile_d=TI32COL, imm0=1, **v),
        word(opcode=Opcode.VIOTA, rdst=2, tile_d=TI32, imm0=1, **v),
        word(opcode=Opcode.VASSERT, ra=1, tile_a=TI1, **v),
        word(opcode=Opcode.VSCAN, kind=ReductionKind.PROD, ra=1, tile_a=TI64, rdst=2, tile_d=TI64, imm0=0, **v),
        word(opcode=Opcode.VSORT, flags=Flag.DESCENDING, ra=1, tile_a=TF, rc=4, tile_c=TI64, rdst=2, tile_d=TF,
             imm0=1, **v),
        word(opcode=Opcode.DMA_GATHER, engine=D, queue=1, ra=5, tile_a=THBM, rb=6, tile_b=TI64, rdst=2, tile_d=TF),
        word(opcode=Opcode.DMA_SCATTER, engine=D, flags=Flag.ACCUMULATE, ra=2, tile_a=TF, rb=6, tile_b=TI32,
             rdst=5, tile_d=THBM, signal=1),
    ]


def test_isa_version_is_2():
    assert ISA_VERSION == 2
    assert load_binary(build([HALT], [])).header.isa_version == 2


def test_integer_and_bool_tile_dtypes():
    b = load(new_words(), TILES)
    dtypes = [t.dtype for t in b.program_for(0).tiles]
    assert dtypes[:5] == [DType.F32, DType.I64, DType.I32, DType.I8, DType.I1]
    assert [element_bytes(d) for d in DType] == [4, 2, 2, 8, 4, 1, 1]
    assert b.program_for(0).tiles[TI64].extent_bytes == 8 * 32
    assert str(b.program_for(0).tiles[TI1]) == "#nova_isa.tile<sram, i1, [4, 8], [8, 1]>"
    assert not DType.I1.is_integer and DType.I8.is_integer and DType.BF16.is_float


def test_new_instructions_decode_field_by_field():
    code = load(new_words(), TILES).code(0)
    assert [i.opcode for i in code[-3:-1]] == [Opcode.DMA_GATHER, Opcode.DMA_SCATTER]
    sort = code[11]
    assert sort.opcode == Opcode.VSORT and sort.has_flag(Flag.DESCENDING)
    assert sort.tiles == (TF, 0xFFFF, TI64, TF) and (sort.ra, sort.rc, sort.rdst, sort.imm0) == (1, 4, 2, 1)
    assert code[3].has_flag(Flag.SCALAR_REG) and code[3].rb == 9 and code[3].imm0 == 0
    assert code[2].imm0 == -3
    assert ReductionKind(code[7].kind) == ReductionKind.ARGMAX
    scatter = code[13]
    assert scatter.has_flag(Flag.ACCUMULATE) and scatter.tiles == (TF, TI32, 0xFFFF, THBM)


def test_disassembly_of_the_new_instructions():
    text = disassemble(load(new_words(), TILES))
    for line in ("vunary floor r1:t0 -> r2:t0 on vector",
                 "vbinary shru r1:t2, r3:t2 -> r2:t2 on vector",
                 "vscalar and r1:t3, -3 -> r2:t3 on vector",
                 "vscalar mul r1:t0, r9 -> r2:t0 on vector",
                 "vscalar add r1:t0, 0.5 -> r2:t0 on vector",
                 "vfill r7 -> r2:t1 on vector",
                 "vfill 1 -> r2:t4 on vector",
                 "vreduce argmax r1:t0 -> r2:t6 axis 1 on vector",
                 "viota -> r2:t2 axis 1 on vector",
                 "vassert r1:t4 on vector",
                 "vscan prod r1:t1 -> r2:t1 axis 0 on vector",
                 "vsort r1:t0 -> r2:t0, r4:t1 axis 1 descending on vector",
                 "dma_gather r5:t5, r6:t1 -> r2:t0 queue 1 on dma",
                 "dma_scatter r2:t0, r6:t2 -> r5:t5 queue 0 accumulate on dma signal [0]"):
        assert line in text, line
    assert "t4 = #nova_isa.tile<sram, i1, [4, 8], [8, 1]>" in text


def vunary(**kw):
    f = dict(opcode=Opcode.VUNARY, engine=V, kind=0, ra=1, tile_a=TF, rdst=2, tile_d=TF)
    f.update(kw)
    return word(**f)


@pytest.mark.parametrize("words, pattern", [
    ([vunary(flags=Flag.SCALAR_REG)], "flag bits 0x10 are not defined for VUNARY"),
    ([vunary(flags=0x80)], "flag bits 0x80 are not defined for VUNARY"),
    ([word(opcode=Opcode.VREDUCE, engine=V, flags=Flag.DESCENDING, ra=1, tile_a=TF, rdst=2, tile_d=TFCOL,
           imm0=1)], "flag bits 0x40 are not defined for VREDUCE"),
    ([word(opcode=Opcode.DMA_GATHER, engine=D, flags=Flag.ACCUMULATE, ra=5, tile_a=THBM, rb=6, tile_b=TI64,
           rdst=2, tile_d=TF)], "flag bits 0x20 are not defined for DMA_GATHER"),
    ([word(opcode=Opcode.VSORT, engine=V, flags=0x80, ra=1, tile_a=TF, rc=4, tile_c=TI64, rdst=2, tile_d=TF)],
     "flag bits 0x80 are not defined for VSORT"),
    ([word(opcode=Opcode.VSCALAR, engine=V, kind=32, flags=Flag.SCALAR_REG, ra=1, tile_a=TF, rb=3, rdst=2,
           tile_d=TF, imm0=5)], "nonzero reserved field 'imm0' .* not used by VSCALAR"),
    ([word(opcode=Opcode.VSCALAR, engine=V, kind=32, ra=1, tile_a=TF, rb=3, rdst=2, tile_d=TF)],
     "nonzero reserved field 'rb' .* not used by VSCALAR"),
    ([word(opcode=Opcode.VFILL, engine=V, ra=3, rdst=2, tile_d=TF)], "nonzero reserved field 'ra'"),
    ([word(opcode=Opcode.VASSERT, engine=V, ra=1, tile_a=TI1, rdst=4)], "nonzero reserved field 'rdst'"),
    ([vunary(kind=20)], "kind 20 is not valid for VUNARY"),
    ([word(opcode=Opcode.VBINARY, engine=V, kind=53, ra=1, tile_a=TF, rb=1, tile_b=TF, rdst=2, tile_d=TF)],
     "kind 53 is not valid for VBINARY"),
    ([word(opcode=Opcode.VSCAN, engine=V, kind=ReductionKind.AVG, ra=1, tile_a=TF, rdst=2, tile_d=TF)],
     "kind 3 is not valid for VSCAN"),
    ([word(opcode=Opcode.ALL_REDUCE, engine=4, kind=ReductionKind.PROD, ra=1, tile_a=THBM, rdst=2,
           tile_d=THBM)], "kind 4 is not valid for ALL_REDUCE"),
    ([word(opcode=Opcode.VREDUCE, engine=V, kind=ReductionKind.AVG, ra=1, tile_a=TI32, rdst=2,
           tile_d=TI32COL, imm0=1)], "VREDUCE avg takes float tiles, got i32"),
    ([word(opcode=Opcode.VREDUCE, engine=V, kind=ReductionKind.ARGMIN, ra=1, tile_a=TF, rdst=2,
           tile_d=TFCOL, imm0=1)], "VREDUCE argmin writes an i64 or i32 tile, got f32"),
    ([word(opcode=Opcode.MATMUL, engine=0, ra=1, tile_a=TI8, rb=1, tile_b=TI8, rdst=2, tile_d=TF)],
     "MATMUL takes float tiles only, lhs is i8"),
    ([word(opcode=Opcode.VSORT, engine=V, ra=1, tile_a=TF, rc=4, tile_c=TI64, rdst=2, tile_d=TF, imm0=2)],
     "VSORT axis/dim 2 is out of range for a rank-2 tile"),
    ([word(opcode=Opcode.VSORT, engine=V, ra=1, tile_a=TF, rc=4, tile_c=TF, rdst=2, tile_d=TF)],
     "VSORT indices must be an i64 or i32 tile, got f32"),
    ([word(opcode=Opcode.VIOTA, engine=V, rdst=2, tile_d=TI32, imm0=-1)], "VIOTA axis -1 is out of range"),
    ([word(opcode=Opcode.DMA_GATHER, engine=D, queue=2, ra=5, tile_a=THBM, rb=6, tile_b=TI64, rdst=2,
           tile_d=TF)], r"DMA queue 2 is out of range \[0, 2\)"),
    ([word(opcode=Opcode.DMA_GATHER, engine=D, ra=5, tile_a=THBM, rb=6, tile_b=TF, rdst=2, tile_d=TF)],
     "DMA_GATHER indices must be an i64 or i32 tile, got f32"),
    ([word(opcode=Opcode.DMA_SCATTER, engine=D, ra=2, tile_a=TI32, rb=6, tile_b=TI64, rdst=5, tile_d=THBM)],
     "DMA_SCATTER source and destination must have one element type, got i32 and f32"),
    ([word(opcode=Opcode.VIOTA, engine=D, rdst=2, tile_d=TI32)], "VIOTA cannot run on engine dma"),
])
def test_decoder_rejections(words, pattern):
    rejects(words, TILES, pattern)


def test_unknown_tile_dtype_7_is_rejected():
    rejects([], [tile(SRAM, 7, [4])], "tile 0 of chips \\[0\\]: unknown element type 7")


def test_version_1_binaries_are_rejected():
    with pytest.raises(BinaryFormatError, match="unsupported ISA version 1 \\(this loader reads version 2\\)"):
        load_binary(build([HALT], [], isa_version=1))


def test_a_v2_binary_runs_end_to_end_and_vassert_reports_its_debug_text():
    from nova.sim import AssertionFailedError, Simulator

    tiles = [tile(HBM, I64, [6]), tile(SRAM, I64, [6]), tile(HBM, F32, [10]), tile(SRAM, F32, [6]),
             tile(SRAM, I1, [6]), tile(HBM, F32, [6])]
    li = lambda rd, v: word(opcode=Opcode.LI, engine=S, rd=rd, imm0=v)  # noqa: E731
    words = [li(1, 0), li(2, 0), li(3, 256), li(4, 512), li(5, 1024), li(6, 128),
             word(opcode=Opcode.DMA_COPY, engine=D, ra=1, tile_a=0, rdst=2, tile_d=1, signal=1),
             word(opcode=Opcode.VSCALAR, engine=V, kind=ElementwiseKind.CMP_LT, ra=2, tile_a=1, rdst=6,
                  tile_d=1, imm0=10, wait=1),
             word(opcode=Opcode.VCOPY, engine=V, ra=6, tile_a=1, rdst=6, tile_d=4),
             word(opcode=Opcode.VASSERT, engine=V, ra=6, tile_a=4, signal=2),
             word(opcode=Opcode.DMA_GATHER, engine=D, ra=3, tile_a=2, rb=2, tile_b=1, rdst=4, tile_d=3,
                  wait=2, signal=4),
             word(opcode=Opcode.DMA_COPY, engine=D, ra=4, tile_a=3, rdst=5, tile_d=5, wait=4, signal=8),
             word(opcode=Opcode.SEM_WAIT, engine=S, wait=8)]
    io = [(0, 0, "idx", 4, [6], 0), (1, 0, "table", 0, [10], 256), (2, 1, "y", 0, [6], 1024)]
    text = "model.py:4:11: index out of range in self"
    b = load_binary(build(words + [HALT], tiles, io=io, debug={9: text}))
    assert "; " + text in disassemble(b)
    table = np.arange(10, dtype=np.float32) * 1.5
    idx = np.array([9, 0, 3, 3, 1, 8], np.int64)
    out, _ = Simulator(b).run({"idx": idx, "table": table})
    np.testing.assert_array_equal(out["y"], table[idx])
    with pytest.raises(AssertionFailedError, match="instruction 9 \\(vassert\\): assertion failed: " + text):
        Simulator(b).run({"idx": np.array([9, 0, 3, 10, 1, 8], np.int64), "table": table})
