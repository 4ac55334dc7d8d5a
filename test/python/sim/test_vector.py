"""Every vector instruction on whole tiles vs numpy (f32 in SRAM, bf16 rounding, broadcasting)."""

import numpy as np
import pytest

from asm import Asm, target
from nova.sim import Simulator
from nova.binary import opcodes as oc
from nova.sim.numerics import round_to

SHAPE = (4, 8)
X, Z, C, Y = 0, 256, 512, 768  # HBM addresses (f32 4x8 = 128 bytes)


def run(build, inputs, out_shape=SHAPE, dtype="f32", in_shapes=None):
    """Stages inputs HBM->SRAM, runs ``build`` on SRAM tiles, copies the output back."""
    s = Asm()
    in_shapes = in_shapes or {}
    tiles = {}
    for i, (name, addr) in enumerate((("x", X), ("z", Z), ("c", C))):
        if name in inputs:
            shp = in_shapes.get(name, SHAPE)
            s.input(i, name, dtype, shp, addr)
            s.li(10 + i, addr)
            s.li(20 + i, 1024 + addr)
            tiles[name] = s.tile("sram", dtype, shp)
            s.dma(10 + i, s.tile("hbm", dtype, shp), 20 + i, tiles[name], queue=0, signal=[0])
            s.sem_wait([0])
    s.output(3, "y", dtype, out_shape, Y)
    s.li(13, Y)
    s.li(23, 1024 + Y)
    ty = s.tile("sram", dtype, out_shape)
    build(s, tiles, ty)
    s.sem_wait([1])
    s.dma(23, ty, 13, s.tile("hbm", dtype, out_shape), queue=1, signal=[2])
    s.sem_wait([2])
    out, _ = Simulator(s.program(target("tiny", chips=1))).run(inputs)
    return out["y"]


rng = np.random.default_rng(1)
xpos = (rng.random(SHAPE) + 0.5).astype(np.float32)
xs = rng.standard_normal(SHAPE).astype(np.float32)
zs = rng.standard_normal(SHAPE).astype(np.float32)

REF_UNARY = {
    "copy": lambda x: x, "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "recip": lambda x: 1 / x, "tanh": np.tanh,
    "erf": lambda x: np.vectorize(__import__("math").erf)(x), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0),
}
REF_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
    "min": np.minimum, "pow": np.power, "cmp_eq": np.equal, "cmp_ne": np.not_equal, "cmp_lt": np.less,
    "cmp_le": np.less_equal, "cmp_gt": np.greater, "cmp_ge": np.greater_equal,
}


@pytest.mark.parametrize("kind", sorted(REF_UNARY))
def test_vunary(kind):
    x = xpos if kind in ("log", "sqrt", "rsqrt") else xs
    y = run(lambda s, t, ty: s.vunary(kind, 20, t["x"], 23, ty, signal=[1]), {"x": x})
    np.testing.assert_allclose(y, REF_UNARY[kind](x.astype(np.float64)), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("kind", sorted(REF_BINARY))
def test_vbinary(kind):
    x = xpos if kind == "pow" else xs
    z = zs.copy()
    z[0, :4] = x[0, :4]  # some equal elements for the comparisons
    y = run(lambda s, t, ty: s.vbinary(kind, 20, t["x"], 21, t["z"], 23, ty, signal=[1]), {"x": x, "z": z})
    np.testing.assert_allclose(y, REF_BINARY[kind](x, z).astype(np.float32), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("kind", ["add", "mul", "max", "cmp_gt", "div"])
def test_vscalar(kind):
    y = run(lambda s, t, ty: s.vscalar(kind, 20, t["x"], 0.25, 23, ty, signal=[1]), {"x": xs})
    np.testing.assert_allclose(y, REF_BINARY[kind](xs, np.float32(0.25)).astype(np.float32), rtol=1e-6)


def test_vbinary_broadcasts_size_one_dims():
    row = rng.standard_normal((1, 8)).astype(np.float32)
    col = rng.standard_normal((4, 1)).astype(np.float32)
    y = run(lambda s, t, ty: s.vbinary("add", 20, t["x"], 21, t["z"], 23, ty, signal=[1]),
            {"x": row, "z": col}, in_shapes={"x": (1, 8), "z": (4, 1)})
    np.testing.assert_allclose(y, row + col)


def test_vselect():
    c = (xs > 0).astype(np.float32)
    y = run(lambda s, t, ty: s.vselect(22, t["c"], 20, t["x"], 21, t["z"], 23, ty, signal=[1]),
            {"x": xs, "z": zs, "c": c})
    np.testing.assert_array_equal(y, np.where(c != 0, xs, zs))


@pytest.mark.parametrize("kind", ["sum", "max", "min", "avg"])
@pytest.mark.parametrize("axis", [0, 1])
def test_vreduce(kind, axis):
    ref = {"sum": np.sum, "max": np.max, "min": np.min, "avg": np.mean}[kind](xs, axis=axis, keepdims=True)
    y = run(lambda s, t, ty: s.vreduce(kind, 20, t["x"], 23, ty, axis, signal=[1]), {"x": xs},
            out_shape=ref.shape)
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)


def test_vtranspose():
    y = run(lambda s, t, ty: s.vtranspose(20, t["x"], 23, ty, [1, 0], signal=[1]), {"x": xs}, out_shape=(8, 4))
    np.testing.assert_array_equal(y, xs.T)


def test_vfill():
    y = run(lambda s, t, ty: s.vfill(-1.5, 23, ty, signal=[1]), {"x": xs})
    np.testing.assert_array_equal(y, np.full(SHAPE, -1.5, np.float32))


def test_vcopy_rounds_to_bf16_and_bf16_arithmetic():
    s = Asm()
    s.input(0, "x", "f32", SHAPE, X)
    s.output(1, "y", "bf16", SHAPE, Y)
    s.li(1, X); s.li(2, 1024); s.li(3, 2048); s.li(4, Y)
    s.dma(1, s.tile("hbm", "f32", SHAPE), 2, s.tile("sram", "f32", SHAPE), signal=[0])
    tb = s.tile("sram", "bf16", SHAPE)
    s.vcopy(2, s.tile("sram", "f32", SHAPE), 3, tb, wait=[0])
    s.vbinary("mul", 3, tb, 3, tb, 3, tb, signal=[1])
    s.dma(3, tb, 4, s.tile("hbm", "bf16", SHAPE), wait=[1], signal=[2])
    s.sem_wait([2])
    out, _ = Simulator(s.program(target("tiny", chips=1))).run({"x": xs})
    r = round_to(xs, oc.BF16)
    np.testing.assert_array_equal(out["y"], round_to(r * r, oc.BF16))


def test_vector_cost_formula():
    s = Asm()
    t = s.tile("sram", "f32", [4, 8])
    s.li(1, 512)
    s.vunary("exp", 0, t, 1, t)
    s.vbinary("add", 0, t, 0, t, 1, t)
    s.vtranspose(0, t, 1, s.tile("sram", "f32", [8, 4]), [1, 0])
    tg = target("tiny", chips=1)
    _, rep = Simulator(s.program(tg)).run()
    lanes = tg.vector_lanes
    expect = (16 + 32 // lanes * 4) + (16 + 32 // lanes) + (16 + 32 // lanes * 2)
    assert rep.busy("vector") == pytest.approx(expect * tg.cycle_ns)
    assert rep.instructions == 3 + 2  # li + halt on the sequencer
