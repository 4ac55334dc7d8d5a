"""Float tiles of an elementwise instruction mix (docs/isa.md 2.4): each input is read as
f32, the f32 result is rounded once to the output's float type. An f32 op writing bf16
or f16 stores, bit for bit, what the op into an f32 tile followed by VCOPY stores, and
VFUSED rounds its intermediate to X's type. Binaries are built word by word (novabin)
and run traced (the event loop) and untraced (the decoupled replay)."""

from __future__ import annotations

import numpy as np
import pytest
from novabin import build, f64bits, tile, word

from nova.binary.isa import NO_TILE, Engine, Opcode
from nova.runtime import load_binary
from nova.sim import Simulator
from nova.sim.numerics import unary_fn

HBM, SRAM = 0, 1
F32, BF16, F16 = 0, 1, 2
SHAPE, ROW = (4, 8), (1, 8)
EXP, ADD, SUB, MUL = 3, 32, 33, 34  # elementwise kinds (docs/isa.md 2.4)
HALT = word(opcode=Opcode.HALT, engine=Engine.SCALAR)
# Registers: r1 x's sram address, r2 a's, r3 the result's, r4 the f32 intermediate's,
# r5..r7 the hbm addresses of x, a, y.
X_SRAM, A_SRAM, Y_SRAM, T_SRAM = 0, 256, 512, 1024
X_HBM, A_HBM, Y_HBM = 0, 256, 512


def program(out: int, a_dtype: int, instr: dict, through_f32: bool, x_dtype: int = F32,
            out_shape: tuple[int, ...] = SHAPE) -> bytes:
    """x (``x_dtype``) and a (``a_dtype``, one row) loaded, one vector instruction
    (``instr``'s fields, ra = x, rb = a), y stored. ``through_f32``: the instruction
    writes an f32 tile and VCOPY rounds it into y."""
    tiles = [tile(HBM, x_dtype, SHAPE), tile(SRAM, x_dtype, SHAPE), tile(HBM, a_dtype, ROW),
             tile(SRAM, a_dtype, ROW), tile(SRAM, out, out_shape), tile(HBM, out, out_shape)]
    li = lambda rd, v: word(opcode=Opcode.LI, engine=Engine.SCALAR, rd=rd, imm0=v)  # noqa: E731
    words = [li(1, X_SRAM), li(2, A_SRAM), li(3, Y_SRAM), li(4, T_SRAM), li(5, X_HBM), li(6, A_HBM),
             li(7, Y_HBM),
             word(opcode=Opcode.DMA_COPY, engine=Engine.DMA, ra=5, tile_a=0, rdst=1, tile_d=1, signal=1),
             word(opcode=Opcode.DMA_COPY, engine=Engine.DMA, ra=6, tile_a=2, rdst=2, tile_d=3, signal=2)]
    if through_f32:
        words += [word(engine=Engine.VECTOR, wait=3, ra=1, tile_a=1, rdst=4, tile_d=1, **instr),
                  word(opcode=Opcode.VCOPY, engine=Engine.VECTOR, ra=4, tile_a=1, rdst=3, tile_d=4, signal=4)]
    else:
        words += [word(engine=Engine.VECTOR, wait=3, ra=1, tile_a=1, rdst=3, tile_d=4, signal=4, **instr)]
    words += [word(opcode=Opcode.DMA_COPY, engine=Engine.DMA, ra=3, tile_a=4, rdst=7, tile_d=5, wait=4,
                   signal=8),
              word(opcode=Opcode.SEM_WAIT, engine=Engine.SCALAR, wait=8), HALT]
    io = [(0, 0, "x", x_dtype, SHAPE, X_HBM), (1, 0, "a", a_dtype, ROW, A_HBM),
          (2, 1, "y", out, out_shape, Y_HBM)]
    return build(words, tiles, io=io, isa_version=5)


def rounded(v: np.ndarray, dtype: int) -> np.ndarray:
    import torch

    t = {BF16: torch.bfloat16, F16: torch.float16}[dtype]
    return torch.from_numpy(np.asarray(v, np.float32)).to(t).float().numpy()


rng = np.random.default_rng(3)
X = (rng.standard_normal(SHAPE) * 3).astype(np.float32)
A_ROW = (rng.standard_normal(ROW) + 0.5).astype(np.float32)

#: name -> (the instruction's fields, a's dtype, the f32 result in numpy).
CASES = {
    # The unit's own f32 exp (numpy's SIMD exp may differ in the last bit between CPUs).
    "vunary-exp": (dict(opcode=Opcode.VUNARY, kind=EXP), F32, lambda x, a: unary_fn(EXP, F32)(x)),
    "vscalar-mul": (dict(opcode=Opcode.VSCALAR, kind=MUL, imm0=f64bits(0.1)), F32,
                    lambda x, a: x * np.float32(0.1)),
    "vbinary-add-bf16-row": (dict(opcode=Opcode.VBINARY, kind=ADD, rb=2, tile_b=3), BF16,
                             lambda x, a: x + rounded(a, BF16)),
    "vfused-sub-mul": (dict(opcode=Opcode.VFUSED, kind=SUB, imm2=MUL, rb=2, tile_b=3, tile_c=NO_TILE,
                            imm1=f64bits(0.3)), F32, lambda x, a: (x - a) * np.float32(0.3)),
}


def bits(v: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(v, dtype=np.float32).view(np.uint32)


@pytest.mark.parametrize("out", [BF16, F16], ids=["bf16", "f16"])
@pytest.mark.parametrize("case", list(CASES))
def test_an_f32_op_writing_a_narrow_float_rounds_once_like_the_copy(case, out):
    instr, a_dtype, fn = CASES[case]
    given = {"x": X, "a": A_ROW}
    direct, through = program(out, a_dtype, instr, False), program(out, a_dtype, instr, True)
    want = rounded(fn(X, A_ROW), out)
    for trace in (True, False):
        got = Simulator(load_binary(direct), trace=trace).run(given)[0]["y"]
        two = Simulator(load_binary(through), trace=trace).run(given)[0]["y"]
        np.testing.assert_array_equal(bits(got), bits(two), err_msg=f"trace={trace}")
        np.testing.assert_array_equal(bits(got), bits(want), err_msg=f"trace={trace}")


def test_vfused_rounds_its_intermediate_to_xs_type_not_ys():
    """T = x - 0 = 1 + 2^-8 keeps its f32 bits, and T + 2^-20 rounds up to 1 + 2^-7 in
    bf16. Rounded to bf16 first, T would be a tie that goes to 1, and y would be 1."""
    given = {"x": np.full(SHAPE, 1.0 + 2.0 ** -8, np.float32), "a": np.zeros(ROW, np.float32)}
    instr = dict(opcode=Opcode.VFUSED, kind=SUB, imm2=ADD, rb=2, tile_b=3, tile_c=NO_TILE,
                 imm1=f64bits(2.0 ** -20))
    for trace in (True, False):
        got = Simulator(load_binary(program(BF16, F32, instr, False)), trace=trace).run(given)[0]["y"]
        np.testing.assert_array_equal(got, np.full(SHAPE, 1.0 + 2.0 ** -7, np.float32))


def test_vreduce_of_a_bf16_tile_into_f32_sums_the_values_in_f32():
    """A bias gradient's sum over rows reads the bf16 tile itself: the f32 sum of its
    values, as the widened copy's sum was."""
    instr = dict(opcode=Opcode.VREDUCE, kind=0, imm0=0)  # sum over axis 0
    given = {"x": X, "a": A_ROW}
    want = rounded(X, BF16).sum(axis=0, keepdims=True, dtype=np.float32)
    for trace in (True, False):
        got = Simulator(load_binary(program(F32, F32, instr, False, x_dtype=BF16, out_shape=ROW)),
                        trace=trace).run(given)[0]["y"]
        np.testing.assert_array_equal(bits(got), bits(want), err_msg=f"trace={trace}")
