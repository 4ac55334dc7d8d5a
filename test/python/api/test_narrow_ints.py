"""uint8 / int16 tensors carried in int32 with torch's wrap-around and
promotion (nova.frontend.narrow_ints), int8 ops computed in int32 and
wrapped back, and int8 matmuls with int32
accumulation on the matrix unit (torch._int_mm), exactly as eager."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree

import nova


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


_G = torch.Generator().manual_seed(0)
LONGS = torch.randint(0, 1000, (8,), generator=_G)
U8 = torch.randint(0, 256, (4, 8), dtype=torch.uint8, generator=_G)
U8B = torch.randint(0, 256, (4, 8), dtype=torch.uint8, generator=_G)
I8 = torch.randint(-128, 128, (4, 8), dtype=torch.int8, generator=_G)
I16 = torch.randint(-32768, 32767, (16,), dtype=torch.int16, generator=_G)

CASES = {
    "int64_to_uint8_wraps": (lambda t: (t * 100).to(torch.uint8), (LONGS,)),
    "int16_mul_wraps": (lambda t: t.to(torch.int16) * 300, (LONGS,)),
    "uint8_arithmetic": (lambda a, b: (a + b, a - b, a * b, a * 3 + 7, ~a, a > b),
                         (U8, U8B)),
    "uint8_plus_int8_is_int16": (lambda a, b: (a + b) * 200, (U8, I8)),
    "uint8_promotes": (lambda a: (a.sum(), a + torch.tensor(5), a.float() / 3,
                                  a.to(torch.int64) * 1000), (U8,)),
    "int16_arithmetic": (lambda a: (a * a, a - 30000, a.abs(), -a, a % 7), (I16,)),
    "float_to_uint8": (lambda x: (x * 50).to(torch.uint8),
                       (torch.rand(16, generator=_G) * 5,)),
    # torch-mlir's int8 lowering of these crashed the process (a null
    # dereference after "unimplemented: for conversion to byte or char type").
    "int8_scalar_arithmetic": (lambda a: (a * 3, a - 1, a // 3, a % 3, a * -1,
                                          a.div(3, rounding_mode="trunc")), (I8,)),
    "int8_reductions_and_sort": (lambda a: (a.max(), a.max(1), a.amax(0),
                                            torch.sort(a, 1), torch.topk(a, 3),
                                            a.sum(1, dtype=torch.int8)), (I8,)),
    "int8_wraps": (lambda a: (a * a + a, -a, a.abs(), (a * 5) >> 1, a << 3, ~a), (I8,)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_narrow_integers_match_eager(name: str) -> None:
    fn, args = CASES[name]
    out = nova.compile(_Fn(fn), *args)(*args)
    expected = fn(*args)
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=0)
    for got, want in zip(pytree.tree_leaves(out), pytree.tree_leaves(expected), strict=True):
        assert got.dtype == want.dtype


@pytest.mark.parametrize("k", [64, 2304])
def test_int_mm_matches_eager(k: int) -> None:
    g = torch.Generator().manual_seed(k)
    a = torch.randint(-128, 128, (32, k), dtype=torch.int8, generator=g)
    b = torch.randint(-128, 128, (k, 16), dtype=torch.int8, generator=g)
    if k > 1024:  # sums beyond f32's exact integers: chunked in int32
        a[:4], b[:, :4] = -128, -128
    fn = lambda a, b: torch._int_mm(a, b)  # noqa: E731
    out = nova.compile(_Fn(fn), a, b)(a, b)
    assert out.dtype == torch.int32
    torch.testing.assert_close(out, fn(a, b), rtol=0, atol=0)
