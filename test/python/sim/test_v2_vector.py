"""ISA v2 vector instructions: vreduce prod/argmax/argmin, viota, vscan, vsort, vassert,
against torch; their cost formulas; integer collectives."""

import math

import numpy as np
import pytest
import torch

from asm import Asm, run_tiles, target
from nova.sim import AssertionFailedError, ProgramError, Simulator

rng = np.random.default_rng(3)


def reduce(kind, x, dtype, axis, out_dtype=None):
    shape = list(x.shape)
    shape[axis] = 1
    out, _ = run_tiles(lambda s, t: s.vreduce(kind, *t["x"], *t["y"], axis, signal=[1]),
                       {"x": (x, dtype)}, {"y": (shape, out_dtype or dtype)})
    return out["y"]


@pytest.mark.parametrize("axis", [0, 1])
def test_vreduce_prod_and_integer_sums_wrap(axis):
    x = (rng.random((4, 6)) + 0.5).astype(np.float32)
    np.testing.assert_allclose(reduce("prod", x, "f32", axis), x.prod(axis=axis, keepdims=True), rtol=1e-6)
    xi = rng.integers(-128, 128, (4, 6)).astype(np.int8)
    ti = torch.from_numpy(xi)
    np.testing.assert_array_equal(reduce("sum", xi, "i8", axis),
                                  ti.sum(dim=axis, keepdim=True, dtype=torch.int8).numpy())
    np.testing.assert_array_equal(reduce("prod", xi, "i8", axis),
                                  ti.prod(dim=axis, keepdim=True, dtype=torch.int8).numpy())
    np.testing.assert_array_equal(reduce("max", xi, "i8", axis), xi.max(axis=axis, keepdims=True))
    np.testing.assert_array_equal(reduce("min", xi, "i8", axis), xi.min(axis=axis, keepdims=True))


@pytest.mark.parametrize("kind", ["argmax", "argmin"])
@pytest.mark.parametrize("out_dtype", ["i64", "i32"])
def test_argmax_argmin_first_position_ties_and_nan_like_torch(kind, out_dtype):
    x = np.array([[1.0, 3.0, 3.0, 0.0, 0.0, 2.0],
                  [np.nan, 1.0, np.nan, -5.0, 9.0, 9.0],
                  [2.0, 2.0, 2.0, 2.0, 2.0, 2.0],
                  [-1.0, 4.0, np.nan, -7.0, -7.0, 4.0]], np.float32)
    fn = torch.argmax if kind == "argmax" else torch.argmin
    for axis in (0, 1):
        y = reduce(kind, x, "f32", axis, out_dtype)
        np.testing.assert_array_equal(y, fn(torch.from_numpy(x), dim=axis, keepdim=True).numpy())
        assert y.dtype == np.dtype(out_dtype.replace("i", "int"))
    xi = np.array([[5, 1, 5, 1], [0, 0, -3, -3]], np.int32)
    np.testing.assert_array_equal(reduce(kind, xi, "i32", 1, out_dtype),
                                  fn(torch.from_numpy(xi), dim=1, keepdim=True).numpy())


def test_viota():
    out, _ = run_tiles(lambda s, t: (s.viota(*t["a"], 1), s.viota(*t["b"], 0), s.viota(*t["c"], 2, signal=[1])),
                       {}, {"a": ((3, 5), "i32"), "b": ((4, 2), "f32"), "c": ((2, 2, 300), "bf16")}, slot=2048)
    np.testing.assert_array_equal(out["a"], np.broadcast_to(np.arange(5), (3, 5)))
    np.testing.assert_array_equal(out["b"], np.broadcast_to(np.arange(4)[:, None], (4, 2)).astype(np.float32))
    ref = torch.arange(300).to(torch.bfloat16).float().numpy()  # 257 -> 256 etc.
    np.testing.assert_array_equal(out["c"][1, 0], ref)


@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("axis", [0, 1])
def test_vscan_against_torch(kind, axis):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    x[1, 2] = np.nan
    tx = torch.from_numpy(x)
    ref = {"sum": lambda: torch.cumsum(tx, axis), "prod": lambda: torch.cumprod(tx, axis),
           "max": lambda: torch.cummax(tx, axis).values, "min": lambda: torch.cummin(tx, axis).values}[kind]()
    out, _ = run_tiles(lambda s, t: s.vscan(kind, *t["x"], *t["y"], axis, signal=[1]),
                       {"x": (x, "f32")}, {"y": (x.shape, "f32")})
    np.testing.assert_allclose(out["y"], ref.numpy(), rtol=1e-5, atol=1e-6)
    xi = rng.integers(-100, 100, (4, 6)).astype(np.int8)
    ti = torch.from_numpy(xi)
    ref = {"sum": lambda: torch.cumsum(ti, axis, dtype=torch.int8), "prod": lambda: torch.cumprod(ti, axis, dtype=torch.int8),
           "max": lambda: torch.cummax(ti, axis).values, "min": lambda: torch.cummin(ti, axis).values}[kind]()
    out, _ = run_tiles(lambda s, t: s.vscan(kind, *t["x"], *t["y"], axis, signal=[1]),
                       {"x": (xi, "i8")}, {"y": (xi.shape, "i8")})
    np.testing.assert_array_equal(out["y"], ref.numpy())  # wraps


def sort(x, dtype, axis, descending, idx_dtype="i64"):
    out, _ = run_tiles(lambda s, t: s.vsort(*t["x"], *t["v"], *t["i"], axis, descending, signal=[1]),
                       {"x": (x, dtype)}, {"v": (x.shape, dtype), "i": (x.shape, idx_dtype)})
    return out["v"], out["i"]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_vsort_is_stable_with_nan_largest_like_torch(descending, axis):
    x = np.array([[3.0, 1.0, np.nan, 1.0, 2.0, 3.0, -np.inf, np.inf],
                  [0.0, -0.0, 5.0, np.nan, 5.0, 5.0, 1.0, np.nan],
                  [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
                  [7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0]], np.float32)
    v, i = sort(x, "f32", axis, descending)
    ref = torch.sort(torch.from_numpy(x), dim=axis, descending=descending, stable=True)
    np.testing.assert_array_equal(v, ref.values.numpy())
    np.testing.assert_array_equal(i, ref.indices.numpy())


@pytest.mark.parametrize("descending", [False, True])
def test_vsort_integers_and_i32_indices(descending):
    lo = -(2**31)
    x = np.array([[4, lo, 4, 2**31 - 1, 0, 4, -1, lo]], np.int32)
    v, i = sort(x, "i32", 1, descending, "i32")
    ref = torch.sort(torch.from_numpy(x), dim=1, descending=descending, stable=True)
    np.testing.assert_array_equal(v, ref.values.numpy())
    np.testing.assert_array_equal(i, ref.indices.numpy().astype(np.int32))


def vassert_program(debug=None):
    """A program that loads a [2, 3] bool input ``c`` and asserts it."""
    s = Asm()
    s.input(0, "c", "i1", [2, 3], 0)
    t = s.tile("sram", "i1", [2, 3])
    s.li(1, 0)
    s.dma(1, s.tile("hbm", "i1", [2, 3]), 1, t, signal=[0])
    s.vassert(1, t, wait=[0], signal=[1])
    if debug:
        s.at(debug)
    s.sem_wait([1])
    return s.program(target("tiny", chips=1))


def assert_program(cond, debug=None):
    return Simulator(vassert_program(debug)).run({"c": cond})


def test_vassert_passes_when_every_element_is_nonzero():
    assert_program(np.ones((2, 3), bool))


def test_vassert_fault_carries_the_debug_text():
    cond = np.ones((2, 3), bool)
    cond[1, 2] = False
    text = "model.py:12:3: index 9 is out of bounds for dimension 0 with size 8"
    with pytest.raises(AssertionFailedError, match=r"instruction 2 \(vassert\): assertion failed: " + text) as e:
        assert_program(cond, debug=text)
    assert e.value.location == text and e.value.instruction == 2
    assert "[1, 2]" in str(e.value)


def test_vassert_without_debug_entry_names_the_instruction():
    with pytest.raises(AssertionFailedError, match=r"chip 0: instruction 2 \(vassert\): assertion failed"):
        assert_program(np.zeros((2, 3), bool))


def test_v2_vector_cost_formulas():
    tg = target("tiny", chips=1)
    lanes, cyc = tg.vector_lanes, tg.cycle_ns
    s = Asm()
    f = s.tile("sram", "f32", [4, 16])
    i = s.tile("sram", "i32", [4, 16])
    s.li(1, 1024); s.li(2, 2048)
    s.vunary("sin", 0, f, 1, f)
    s.vbinary("rem", 0, i, 0, i, 1, i)
    s.vbinary("and", 0, i, 0, i, 1, i)
    s.vscan("sum", 0, f, 1, f, 1)
    s.vsort(0, f, 1, f, 2, i, 1)
    s.viota(1, i, 1)
    s.vassert(0, i)
    _, rep = Simulator(s.program(tg), functional=False).run()  # timing only: zeros would fault
    e = 64 // lanes
    sort_stages = math.ceil(math.log2(16)) * (math.ceil(math.log2(16)) + 1) // 2
    expect = (16 + e * 4) * 2 + (16 + e) + (16 + e * 2) + (16 + e * sort_stages) + (16 + e) * 2
    assert rep.busy("vector") == pytest.approx(expect * cyc)


def test_vsort_of_axis_size_one_costs_one_stage():
    tg = target("tiny", chips=1)
    s = Asm()
    f, i = s.tile("sram", "f32", [8, 1]), s.tile("sram", "i64", [8, 1])
    s.li(1, 1024)
    s.vsort(0, f, 0, f, 1, i, 1)
    _, rep = Simulator(s.program(tg)).run()
    assert rep.busy("vector") == pytest.approx((16 + 1) * tg.cycle_ns)


def collective(kind, xs, dtype, op="all_reduce"):
    tg = target("tiny", chips=2)
    s = Asm()
    shape = xs[0].shape
    out_shape = (shape[0] // 2,) + shape[1:] if op == "reduce_scatter" else shape
    s.input(0, "x", dtype, shape, 0)
    s.output(1, "y", dtype, out_shape, 1024)
    s.li(1, 0); s.li(2, 1024)
    tx, ty = s.tile("hbm", dtype, shape), s.tile("hbm", dtype, out_shape)
    if op == "reduce_scatter":
        s.reduce_scatter(kind, 1, tx, 2, ty, 0, [[0, 1]], signal=[0])
    else:
        s.all_reduce(kind, 1, tx, 2, ty, [[0, 1]], signal=[0])
    s.sem_wait([0])
    out, _ = Simulator(s.program(tg)).run(per_chip={0: {"x": xs[0]}, 1: {"x": xs[1]}})
    return [c["y"] for c in out["chips"]]


def test_integer_all_reduce_wraps_and_reduce_scatter():
    a = np.array([[100, -100, 5, 0]], np.int8)
    b = np.array([[100, -100, -7, 1]], np.int8)
    y0, y1 = collective("sum", [a, b], "i8")
    np.testing.assert_array_equal(y0, (a.astype(np.int64) + b).astype(np.int8))
    np.testing.assert_array_equal(y1, y0)
    np.testing.assert_array_equal(collective("max", [a, b], "i8")[0], np.maximum(a, b))
    c = np.arange(8, dtype=np.int64).reshape(4, 2) * (2**40)
    y0, y1 = collective("sum", [c, c], "i64", op="reduce_scatter")
    np.testing.assert_array_equal(np.concatenate([y0, y1]), 2 * c)


def test_integer_collective_avg_is_a_program_error():
    with pytest.raises(ProgramError, match="all_reduce avg takes float tiles, got i32"):
        collective("avg", [np.zeros((1, 4), np.int32)] * 2, "i32")
