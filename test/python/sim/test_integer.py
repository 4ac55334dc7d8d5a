"""Integer and i1 tiles (docs/isa.md 2.6): wrapping arithmetic, C / Python division,
bitwise kinds and shifts, comparisons, conversions, immediate and register scalars,
and the run-time faults, against Python-int / torch references."""

import numpy as np
import pytest
import torch

from asm import Asm, run_tiles, target
from nova.sim import EngineFaultError, ProgramError, Simulator

BITS = {"i64": 64, "i32": 32, "i8": 8}
rng = np.random.default_rng(7)


def wrap(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


REF = {
    "add": lambda a, b, n: wrap(a + b, n), "sub": lambda a, b, n: wrap(a - b, n),
    "mul": lambda a, b, n: wrap(a * b, n), "div": lambda a, b, n: wrap(c_div(a, b), n),
    "rem": lambda a, b, n: wrap(a - c_div(a, b) * b, n), "floordiv": lambda a, b, n: wrap(a // b, n),
    "max": lambda a, b, n: max(a, b), "min": lambda a, b, n: min(a, b),
    "and": lambda a, b, n: a & b, "or": lambda a, b, n: a | b, "xor": lambda a, b, n: a ^ b,
    "shl": lambda a, b, n: wrap(a << b, n), "shr": lambda a, b, n: a >> b,
    "shru": lambda a, b, n: wrap((a & ((1 << n) - 1)) >> b, n),
    "cmp_eq": lambda a, b, n: int(a == b), "cmp_ne": lambda a, b, n: int(a != b),
    "cmp_lt": lambda a, b, n: int(a < b), "cmp_le": lambda a, b, n: int(a <= b),
    "cmp_gt": lambda a, b, n: int(a > b), "cmp_ge": lambda a, b, n: int(a >= b),
}


def operands(dtype: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
    n = BITS[dtype]
    lo, hi = -(1 << (n - 1)), (1 << (n - 1)) - 1
    x = np.array([lo, hi, -7, 7, -7, 7, 0, 1, -1, 5, lo, 100, hi, -100, 3, -3], dtype=object)
    if kind in ("shl", "shr", "shru"):
        z = np.array([(i * 5) % n for i in range(16)], dtype=object)
    else:
        z = np.array([-1, 1, 2, 2, -2, -2, 3, hi, lo, 5, 2, -3, -1, 7, 3, -3], dtype=object)
    return x.astype(dtype.replace("i", "int")), z.astype(dtype.replace("i", "int"))


def binary(kind, x, z, dtype, out_dtype=None):
    out_dtype = out_dtype or dtype
    out, _ = run_tiles(lambda s, t: s.vbinary(kind, *t["x"], *t["z"], *t["y"], signal=[1]),
                       {"x": (x, dtype), "z": (z, dtype)}, {"y": (x.shape, out_dtype)})
    return out["y"]


@pytest.mark.parametrize("dtype", ["i64", "i32", "i8"])
@pytest.mark.parametrize("kind", sorted(REF))
def test_integer_binary_kinds_wrap_like_twos_complement(kind, dtype):
    x, z = operands(dtype, kind)
    y = binary(kind, x, z, dtype)
    ref = [REF[kind](int(a), int(b), BITS[dtype]) for a, b in zip(x, z)]
    assert y.tolist() == ref


def test_rem_is_c_and_floordiv_is_python_against_torch():
    x = np.array([7, -7, 7, -7, 6, -6, 0, 1], np.int32)
    z = np.array([2, 2, -2, -2, 4, 4, 3, -3], np.int32)
    tx, tz = torch.from_numpy(x), torch.from_numpy(z)
    rem, fdiv, div = binary("rem", x, z, "i32"), binary("floordiv", x, z, "i32"), binary("div", x, z, "i32")
    np.testing.assert_array_equal(rem, torch.fmod(tx, tz).numpy())                 # sign of the dividend
    np.testing.assert_array_equal(fdiv, torch.div(tx, tz, rounding_mode="floor").numpy())
    np.testing.assert_array_equal(div, torch.div(tx, tz, rounding_mode="trunc").numpy())
    assert (rem != torch.remainder(tx, tz).numpy()).any()  # C rem is not Python %
    # x == floordiv * z + python remainder
    np.testing.assert_array_equal(fdiv * z + torch.remainder(tx, tz).numpy(), x)


def test_float_rem_is_fmod_and_floordiv_floors():
    x = np.array([7.5, -7.5, 7.5, -7.5, 1.0, -0.25, 5.0, 3.0], np.float32)
    z = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 1.0, 2.5, 0.5], np.float32)
    tx, tz = torch.from_numpy(x), torch.from_numpy(z)
    np.testing.assert_array_equal(binary("rem", x, z, "f32"), torch.fmod(tx, tz).numpy())
    np.testing.assert_array_equal(binary("floordiv", x, z, "f32"), torch.div(tx, tz, rounding_mode="floor").numpy())


@pytest.mark.parametrize("dtype", ["i64", "i32", "i8"])
def test_integer_unary_kinds(dtype):
    n = BITS[dtype]
    lo = -(1 << (n - 1))
    x = np.array([lo, lo + 1, -5, 0, 5, (1 << (n - 1)) - 1], dtype.replace("i", "int"))
    for kind, ref in (("neg", lambda a: wrap(-a, n)), ("abs", lambda a: wrap(abs(a), n)),
                      ("not", lambda a: ~a), ("copy", lambda a: a)):
        out, _ = run_tiles(lambda s, t: s.vunary(kind, *t["x"], *t["y"], signal=[1]),
                           {"x": (x, dtype)}, {"y": (x.shape, dtype)})
        assert out["y"].tolist() == [ref(int(a)) for a in x], kind
    assert wrap(abs(lo), n) == lo  # abs of the minimum is the minimum


@pytest.mark.parametrize("kind", ["floor", "ceil", "round", "trunc", "sin", "cos", "log1p"])
def test_float_unary_kinds_against_torch(kind):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -1.7, 1.7, 0.2, 3.9, -3.9, 0.0], np.float32)
    if kind == "log1p":
        x = np.abs(x)
    ref = {"floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc,
           "sin": torch.sin, "cos": torch.cos, "log1p": torch.log1p}[kind](torch.from_numpy(x)).numpy()
    out, _ = run_tiles(lambda s, t: s.vunary(kind, *t["x"], *t["y"], signal=[1]),
                       {"x": (x, "f32")}, {"y": (x.shape, "f32")})
    np.testing.assert_allclose(out["y"], ref, rtol=1e-6, atol=1e-7)
    if kind == "round":  # half to even
        assert out["y"][:6].tolist() == [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0]


def test_i1_kinds_and_comparisons_writing_i1():
    a = np.array([0, 1, 0, 1], bool)
    b = np.array([0, 0, 1, 1], bool)
    for kind, ref in (("and", a & b), ("or", a | b), ("xor", a ^ b), ("max", a | b), ("min", a & b),
                      ("cmp_eq", a == b), ("cmp_ne", a != b)):
        np.testing.assert_array_equal(binary(kind, a, b, "i1"), ref, err_msg=kind)
    out, _ = run_tiles(lambda s, t: s.vunary("not", *t["x"], *t["y"], signal=[1]),
                       {"x": (a, "i1")}, {"y": (a.shape, "i1")})
    np.testing.assert_array_equal(out["y"], ~a)
    x = np.array([1.0, np.nan, -2.0, 3.0], np.float32)
    z = np.array([1.0, 1.0, 2.0, 2.0], np.float32)
    np.testing.assert_array_equal(binary("cmp_lt", x, z, "f32", "i1"), x < z)
    xi, zi = np.array([-1, 2, 3, 4], np.int32), np.array([1, 2, -3, 5], np.int32)
    np.testing.assert_array_equal(binary("cmp_lt", xi, zi, "i32"), (xi < zi).astype(np.int32))
    np.testing.assert_array_equal(binary("cmp_ge", xi, zi, "i32", "i1"), xi >= zi)


def test_vselect_takes_any_condition_type():
    c = np.array([0, 3, -1, 0], np.int8)
    x, z = np.array([1, 2, 3, 4], np.int64), np.array([10, 20, 30, 40], np.int64)
    out, _ = run_tiles(lambda s, t: s.vselect(*t["c"], *t["x"], *t["z"], *t["y"], signal=[1]),
                       {"c": (c, "i8"), "x": (x, "i64"), "z": (z, "i64")}, {"y": (x.shape, "i64")})
    np.testing.assert_array_equal(out["y"], np.where(c != 0, x, z))


def convert(x, src, dst, kind="vcopy"):
    def build(s, t):
        if kind == "vcopy":
            s.vcopy(*t["x"], *t["y"], signal=[1])
        else:
            s.vunary("copy", *t["x"], *t["y"], signal=[1])
    out, _ = run_tiles(build, {"x": (x, src)}, {"y": (np.shape(x), dst)})
    return out["y"]


@pytest.mark.parametrize("kind", ["vcopy", "copy"])
def test_conversions(kind):
    i32 = np.array([300, -129, 127, -1, 2**31 - 1, -2**31], np.int32)
    np.testing.assert_array_equal(convert(i32, "i32", "i8", kind), i32.astype(np.int8))  # wraps
    i8 = np.array([-128, -1, 0, 127], np.int8)
    np.testing.assert_array_equal(convert(i8, "i8", "i64", kind), i8.astype(np.int64))  # sign-extends
    big = np.array([2**24 + 1, 2**24 + 3, -(2**24 + 1), 7], np.int64)
    np.testing.assert_array_equal(convert(big, "i64", "f32", kind),
                                  torch.from_numpy(big).to(torch.float32).numpy())  # nearest even
    f = np.array([-1.7, 1.7, -0.5, 2.5e9, -2.5e9, 0.0], np.float32)
    np.testing.assert_array_equal(convert(f, "f32", "i64", kind), [-1, 1, 0, 2500000000, -2500000000, 0])
    np.testing.assert_array_equal(convert(f[:3], "f32", "i8", kind), [-1, 1, 0])
    g = np.array([0.0, -0.0, np.nan, 0.5, -3.0], np.float32)
    np.testing.assert_array_equal(convert(g, "f32", "i1", kind), [False, False, True, True, True])
    b = np.array([True, False, True], bool)
    np.testing.assert_array_equal(convert(b, "i1", "f32", kind), [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(convert(b, "i1", "i32", kind), [1, 0, 1])
    np.testing.assert_array_equal(convert(np.array([0, 5, -2], np.int32), "i32", "i1", kind), [False, True, True])
    small = np.array([1, 255, 256, 257, -3], np.int32)
    np.testing.assert_array_equal(convert(small, "i32", "bf16", kind),
                                  torch.from_numpy(small).to(torch.bfloat16).float().numpy())


@pytest.mark.parametrize("value, dst", [(np.nan, "i32"), (3e9, "i32"), (-3e9, "i32"), (200.0, "i8"),
                                        (9.3e18, "i64"), (-np.inf, "i64"), (np.inf, "i32"),
                                        (np.nan, "i8"), (3e9, "i8")])
def test_float_to_int_out_of_range_is_torchs_cast(value, dst):
    """NaN and out-of-range values convert as torch's CPU casts do (INT_MIN of a 32- or
    64-bit conversion; i8 the low bits of the 32-bit one): T5's position buckets cast
    log(0) = -inf and discard it with torch.where."""
    x = np.array([1.0, value], np.float32)
    torch_dtype = {"i32": torch.int32, "i64": torch.int64, "i8": torch.int8}[dst]
    np.testing.assert_array_equal(convert(x, "f32", dst), torch.from_numpy(x).to(torch_dtype).numpy())


def fault_program(kind, z_value, dtype="i32"):
    s = Asm()
    t = s.tile("sram", dtype, [4])
    s.li(1, 0); s.li(2, 64)
    s.vfill(3, 1, t)
    s.vfill(z_value, 2, t)
    s.vbinary(kind, 1, t, 2, t, 1, t, signal=[1])
    s.at("model.py:7:12")
    s.sem_wait([1])
    return s.program(target("tiny", chips=1))


@pytest.mark.parametrize("kind", ["div", "rem", "floordiv"])
def test_integer_division_by_zero_is_a_fault_with_the_source_line(kind):
    with pytest.raises(EngineFaultError, match=r"instruction 4 \(vbinary at model.py:7:12\): integer division by zero") as e:
        Simulator(fault_program(kind, 0)).run()
    assert e.value.instruction == 4 and e.value.location == "model.py:7:12" and e.value.chip == 0


@pytest.mark.parametrize("kind, amount", [("shl", 32), ("shr", -1), ("shru", 40)])
def test_shift_amount_out_of_range_is_a_fault(kind, amount):
    with pytest.raises(EngineFaultError, match=rf"shift amount {amount} is outside \[0, 32\)"):
        Simulator(fault_program(kind, amount)).run()


def test_float_division_by_zero_is_not_a_fault():
    s = Asm()
    t = s.tile("sram", "f32", [4])
    s.li(1, 0); s.li(2, 64)
    s.vfill(0.0, 2, t)
    s.vbinary("div", 1, t, 2, t, 1, t, signal=[1])
    s.sem_wait([1])
    Simulator(s.program(target("tiny", chips=1))).run()


def test_vscalar_and_vfill_immediates_on_integer_tiles():
    x = np.array([100, -100, 7, 0], np.int8)
    out, _ = run_tiles(lambda s, t: s.vscalar("add", *t["x"], 100, *t["y"], signal=[1]),
                       {"x": (x, "i8")}, {"y": (x.shape, "i8")})
    np.testing.assert_array_equal(out["y"], (x.astype(np.int64) + 100).astype(np.int8))  # wraps
    out, _ = run_tiles(lambda s, t: s.vscalar("shr", *t["x"], 2, *t["y"], signal=[1]),
                       {"x": (x, "i8")}, {"y": (x.shape, "i8")})
    np.testing.assert_array_equal(out["y"], x >> 2)
    out, _ = run_tiles(lambda s, t: s.vfill(-(2**40) - 5, *t["y"], signal=[1]), {}, {"y": ((3,), "i64")})
    assert out["y"].tolist() == [-(2**40) - 5] * 3
    out, _ = run_tiles(lambda s, t: s.vfill(2, *t["y"], signal=[1]), {}, {"y": ((3,), "i1")})
    assert out["y"].tolist() == [True] * 3


def test_register_scalars_are_read_at_dispatch():
    x = np.arange(8, dtype=np.int32)

    def build(s, t):
        s.li(7, 3)
        s.vscalar("mul", *t["x"], "r7", *t["y"])
        s.li(7, 1000)  # after the dispatch: the vscalar still multiplies by 3
        s.vfill("r7", *t["f"], signal=[1])

    out, _ = run_tiles(build, {"x": (x, "i32")}, {"y": (x.shape, "i32"), "f": ((2, 2), "f32")})
    np.testing.assert_array_equal(out["y"], 3 * x)
    np.testing.assert_array_equal(out["f"], np.full((2, 2), 1000.0, np.float32))


def test_loop_index_enters_tile_arithmetic():
    s = Asm()
    t = s.tile("sram", "f32", [4])
    h = s.tile("hbm", "f32", [4])
    s.output(0, "y", "f32", [4], 0)
    s.li(1, 0); s.li(2, 0)
    s.vfill(0.0, 1, t)
    with s.loop(3, 0, 5):
        s.vscalar("add", 1, t, "r3", 1, t)  # y += i
    s.nop(oc_vector(), signal=[1])
    s.sem_wait([1])
    s.dma(1, t, 2, h, signal=[2])
    s.sem_wait([2])
    out, _ = Simulator(s.program(target("tiny", chips=1))).run()
    np.testing.assert_array_equal(out["y"], np.full(4, 0 + 1 + 2 + 3 + 4, np.float32))


def oc_vector() -> int:
    from nova.binary import opcodes as oc
    return oc.VECTOR


@pytest.mark.parametrize("build, message", [
    (lambda s, i, f: s.vunary("exp", 0, i, 0, i), "exp takes float tiles, got i32"),
    (lambda s, i, f: s.vbinary("and", 0, f, 0, f, 0, f), "and takes integer or i1 tiles, got f32"),
    (lambda s, i, f: s.vbinary("add", 0, i, 0, f, 0, f), "add operands must have one element type"),
    (lambda s, i, f: s.vreduce("avg", 0, i, 0, s.tile("sram", "i32", [1, 4]), 0), "vreduce avg takes float tiles"),
    (lambda s, i, f: s.vreduce("argmax", 0, f, 0, s.tile("sram", "f32", [1, 4]), 0), "writes an i64 or i32 tile"),
    (lambda s, i, f: s.matmul(0, i, 0, i, 0, s.tile("acc", "f32", [4, 4])), "matmul takes float tiles only"),
    (lambda s, i, f: s.vbinary("add", 0, s.tile("sram", "i1", [4, 4]), 0, s.tile("sram", "i1", [4, 4]), 0,
                               s.tile("sram", "i1", [4, 4])), "add is not defined on i1 tiles"),
])
def test_type_rules_are_program_errors(build, message):
    s = Asm()
    build(s, s.tile("sram", "i32", [4, 4]), s.tile("sram", "f32", [4, 4]))
    with pytest.raises(ProgramError, match=message):
        Simulator(s.program(target("tiny", chips=1))).run()
