"""A model that returns one value twice (after CSE both results are one
buffer): each result gets a buffer of its own and both match torch."""

import pytest
import torch

import nova


@pytest.mark.parametrize("fn", [lambda a: (a * 2, a * 2), lambda a: (a @ a.T, a @ a.T),
                                lambda a: (a, a.sum(0), a)], ids=["elementwise", "matmul", "input"])
def test_same_value_returned_twice(fn) -> None:
    torch.manual_seed(0)
    x = torch.randn(4, 8)
    outputs = nova.compile(fn, x)(x)
    for got, want in zip(outputs, fn(x), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
