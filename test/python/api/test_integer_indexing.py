"""Integer, bool and index tensors through nova.compile, against torch eager:
integer arithmetic with torch's rounding (negative operands), casts, masks,
argmax/argmin, gathers (embedding, gather, index_select, take_along_dim),
scatters (scatter_add, scatter, index_add, index_put), cumsum/cumprod,
sort and topk, and an out-of-range embedding id caught at run time.

Integer and bool results must match exactly, float ones at rtol 1e-4 /
atol 1e-5. Inputs are tiny (2x8 and the like) so the file runs quickly."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

import nova
from nova.sim.errors import AssertionFailedError, EngineFaultError

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)


class Fn(nn.Module):
    """A model whose forward is ``fn(self, *args)``, with optional submodules."""

    def __init__(self, fn, **modules) -> None:
        super().__init__()
        self.fn = fn
        for name, module in modules.items():
            setattr(self, name, module)

    def forward(self, *args):
        return self.fn(self, *args)


def _check(got, expected) -> None:
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _check(g, e)
        return
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if expected.is_floating_point():
        torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL, equal_nan=True)
    else:
        assert torch.equal(got, expected), f"got\n{got}\nexpected\n{expected}"


def _run(fn, *args, **modules):
    model = Fn(fn, **modules).eval()
    program = nova.compile(model, *args, target="nova-t1")
    with torch.no_grad():
        expected = model(*args)
    _check(program(*args), expected)


def _signed(*shape, low=-9, high=10, dtype=torch.int64):
    return torch.randint(low, high, shape, dtype=dtype)


def _nonzero(*shape, dtype=torch.int64):
    magnitude = torch.randint(1, 5, shape, dtype=dtype)
    return torch.where(torch.rand(shape) < 0.5, -magnitude, magnitude)


# -- integer arithmetic, casts, masks -------------------------------------------


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("op", [
    pytest.param(lambda s, a, b: a // b, id="floordiv"),
    pytest.param(lambda s, a, b: torch.div(a, b, rounding_mode="floor"), id="div_floor"),
    pytest.param(lambda s, a, b: torch.div(a, b, rounding_mode="trunc"), id="div_trunc"),
    pytest.param(lambda s, a, b: a % b, id="mod"),
    pytest.param(lambda s, a, b: torch.remainder(a, b), id="remainder"),
    pytest.param(lambda s, a, b: torch.fmod(a, b), id="fmod"),
    pytest.param(lambda s, a, b: a * b - 3 * a + b, id="mul_add"),
    pytest.param(lambda s, a, b: torch.stack([a < b, a <= b, a == b, a != b, a > b, a >= b]),
                 id="compare"),
    pytest.param(lambda s, a, b: torch.maximum(a, b) - torch.minimum(a, b).abs(), id="minmax"),
])
def test_integer_arithmetic_negative_operands(op, dtype):
    _run(op, _signed(2, 8, dtype=dtype), _nonzero(2, 8, dtype=dtype))


def test_float_floor_division_and_remainder_negative_operands():
    a, b = torch.randn(2, 8) * 5, torch.randn(2, 8) * 3
    _run(lambda s, a, b: (a // b, a % b, torch.fmod(a, b)), a, b)


def test_int_casts_both_ways():
    x = torch.randn(2, 8) * 7  # float -> int truncates toward zero
    i = _signed(2, 8)
    _run(lambda s, x, i: (x.to(torch.int64), x.to(torch.int32), i.float() * 0.5,
                          i.to(torch.int32) + 1, (x > 0).to(torch.int64), i.to(torch.bool)), x, i)


def test_bool_masks():
    a, b = _signed(2, 8), _signed(2, 8)
    _run(lambda s, a, b: (((a > 0) & (b < 0)) | ~(a == b), (a > 0) ^ (b > 0)), a, b)


def test_where():
    x, y = torch.randn(2, 8), torch.randn(2, 8)
    i = _signed(2, 8)
    _run(lambda s, x, y, i: (torch.where(x > y, x, y), torch.where(i < 0, -i, i),
                             torch.where(i > 0, x, 0.0)), x, y, i)


def test_causal_mask_from_arange():
    def fn(s, scores):
        n = scores.shape[-1]
        causal = torch.arange(n)[None, :] > torch.arange(n)[:, None]
        return scores.masked_fill(causal, float("-inf")).softmax(-1)
    _run(fn, torch.randn(2, 8, 8))


def test_padding_mask_from_int_attention_mask():
    def fn(s, scores, attention_mask):
        n = scores.shape[-1]
        causal = torch.arange(n)[None, :] <= torch.arange(n)[:, None]
        keep = causal[None] & (attention_mask[:, None, :] == 1)
        positions = attention_mask.cumsum(-1) - 1
        return scores.masked_fill(~keep, -1e9).softmax(-1), positions.masked_fill(attention_mask == 0, 1)
    mask = torch.tensor([[1] * 8, [0] * 3 + [1] * 5])
    _run(fn, torch.randn(2, 8, 8), mask)


# -- argmax / argmin / max with indices -----------------------------------------


@pytest.mark.parametrize("op", [
    pytest.param(lambda s, x: x.argmax(-1), id="argmax_last"),
    pytest.param(lambda s, x: x.argmin(0, keepdim=True), id="argmin_keepdim"),
    pytest.param(lambda s, x: x.argmax(), id="argmax_flat"),
    pytest.param(lambda s, x: tuple(torch.max(x, 1)), id="max_dim"),
    pytest.param(lambda s, x: tuple(torch.min(x, 0, keepdim=True)), id="min_dim"),
])
def test_argmax_argmin_float(op):
    _run(op, torch.randn(2, 8))


def test_argmax_int_first_occurrence():
    # Few distinct values, so ties are common: torch returns the first.
    x = torch.randint(-2, 3, (2, 8))
    _run(lambda s, x: (x.argmax(-1), x.argmin(-1), *torch.max(x, 0)), x)


def test_argmax_nan_is_the_maximum():
    x = torch.randn(2, 8)
    x[0, 5] = x[0, 2] = float("nan")
    _run(lambda s, x: (x.argmax(-1), x.argmin(-1)), x)


# -- gathers --------------------------------------------------------------------


def test_embedding():
    ids = torch.randint(0, 10, (2, 8))
    _run(lambda s, ids: s.emb(ids), ids, emb=nn.Embedding(10, 4))


def test_gather():
    x = torch.randn(2, 8)
    _run(lambda s, x, i: (torch.gather(x, 1, i), torch.gather(x, 0, i[:, :3] % 2)),
         x, torch.randint(0, 8, (2, 5)))


# torch-mlir's gather (bounds checks in the payload) fused into a consumer:
# the checks stay with the consumer (nova-fuse-elementwise).
def test_gather_then_elementwise():
    _run(lambda s, x, i: -torch.gather(x, 1, i), torch.randn(2, 8), torch.randint(0, 8, (2, 8)))


def test_cross_entropy_from_int_targets():
    _run(lambda s, x, t: nn.functional.cross_entropy(x, t), torch.randn(2, 8), torch.tensor([3, 5]))


def test_index_select():
    x = torch.randn(4, 8)
    _run(lambda s, x, i: (torch.index_select(x, 1, i), torch.index_select(x, 0, i % 4)),
         x, torch.tensor([3, 0, 7, 3]))


def test_take_along_dim():
    x = torch.randn(2, 8)
    _run(lambda s, x: torch.take_along_dim(x, x.argsort(-1, descending=True)[:, :3], 1), x)


class LookupModule(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, ids):
        return self.emb(ids) * 2.0


class LookupFunctional(LookupModule):
    def forward(self, ids):
        return nn.functional.embedding(ids, self.emb.weight) * 2.0


@pytest.mark.parametrize("model_class", [LookupModule, LookupFunctional],
                         ids=["nn_embedding", "functional"])
def test_embedding_out_of_range_id_raises_with_model_line(model_class):
    ids = torch.randint(0, 10, (2, 8))
    program = nova.compile(model_class().eval(), ids, target="nova-t1")
    lines, first = inspect.getsourcelines(model_class.forward)
    line = first + next(k for k, text in enumerate(lines) if "return" in text)
    bad = ids.clone()
    bad[1, 3] = 10
    with pytest.raises(AssertionFailedError) as raised:  # a failed vassert
        program(bad)
    message = f"{raised.value} {raised.value.location}"
    assert f"{__file__.rsplit('/', 1)[-1]}:{line}:" in message, message
    assert "index must be smaller than dim size" in message, message


# -- scatters -------------------------------------------------------------------


def test_scatter_add():
    x = torch.randn(3, 8)
    index = torch.tensor([[0, 1, 2, 0, 0, 2, 1, 1], [2, 2, 2, 0, 1, 0, 0, 0]])
    _run(lambda s, x, i, src: (x.scatter_add(0, i, src), x.scatter_add(1, i[:, :5] % 3, src)),
         x, index, torch.randn(2, 8))


def test_scatter_add_int64():
    x = _signed(2, 4)
    index = torch.tensor([[0, 3, 3, 1, 0, 3], [1, 1, 1, 2, 0, 0]])
    _run(lambda s, x, i, src: x.scatter_add(1, i, src), x, index, _signed(2, 6))


def test_scatter_src_and_value():
    x = torch.randn(2, 8)
    index = torch.tensor([[7, 0, 3, 5], [1, 2, 6, 4]])  # no duplicates: torch's order is defined
    _run(lambda s, x, i, src: (x.scatter(1, i, src), x.scatter(1, i, -1.5)),
         x, index, torch.randn(2, 4))


def test_scatter_one_writer_per_row():
    # One index per row along the scattered dim (nll_loss's backward): a
    # one-hot select; rows and columns the index does not reach keep x.
    x = torch.randn(4, 8)
    index = torch.tensor([[5], [0], [7]])
    _run(lambda s, x, i, src: (x.scatter(1, i, src), x.scatter(1, i, -1.5),
                               x.scatter(0, i.T % 4, src.T)),
         x, index, torch.randn(3, 2))


def test_index_add():
    x = torch.randn(4, 8)
    index = torch.tensor([0, 3, 3, 1, 0])
    _run(lambda s, x, i, src: (x.index_add(0, i, src), x.index_add(1, i, src.T[:4], alpha=2.0)),
         x, index, torch.randn(5, 8))


@pytest.mark.parametrize("mask_shape", [(4, 6), (6,), ()], ids=["full", "broadcast_row", "scalar"])
def test_masked_scatter(mask_shape):
    torch.manual_seed(3)
    x, source = torch.randn(4, 6), torch.randn(5, 6)
    mask = torch.rand(mask_shape) < 0.5
    _run(lambda s, x, m, src: x.masked_scatter(m, src), x, mask, source)


def test_index_add_of_a_zero_dim_tensor():
    # A 0-d tensor indexes as one element along dim 0 (OpInfo's samples).
    _run(lambda s, x, i, src: (x.index_add(0, i, src, alpha=-1), x.index_add(0, i, src)),
         torch.tensor(1.5), torch.tensor([0]), torch.tensor(0.25))


def test_index_put_accumulate():
    x = torch.randn(6, 4)
    index = torch.tensor([5, 0, 5, 2, -1])
    _run(lambda s, x, i, v: torch.index_put(x, (i,), v, accumulate=True), x, index, torch.randn(5, 4))


def test_index_put_accumulate_int64_two_indices():
    x = _signed(4, 5)
    rows, cols = torch.tensor([0, 3, 0, 1]), torch.tensor([4, 4, 4, 0])
    _run(lambda s, x, r, c, v: torch.index_put(x, (r, c), v, accumulate=True),
         x, rows, cols, _signed(4))


def test_index_put_assign():
    x = torch.randn(6, 4)
    index = torch.tensor([5, 0, 2, -3])  # distinct after wrapping
    _run(lambda s, x, i, v: torch.index_put(x, (i,), v), x, index, torch.randn(4, 4))


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    x = torch.randn(2, 6)
    index = torch.tensor([[0, 5, 5, 1, 0, 5, 2, 0], [3, 3, 3, 0, 1, 1, 4, 4]])
    _run(lambda s, x, i, src: x.scatter_reduce(1, i, src, reduce, include_self=include_self),
         x, index, torch.randn(2, 8))


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_integer_mean_rounds_down(include_self):
    # torch divides an integer mean with floor rounding (-3 / 2 -> -2).
    x = _signed(2, 6)
    index = torch.tensor([[0, 5, 5, 1, 0, 5, 2, 0], [3, 3, 3, 0, 1, 1, 4, 4]])
    _run(lambda s, x, i, src: x.scatter_reduce(1, i, src, "mean", include_self=include_self),
         x, index, _signed(2, 8))


def test_scatter_add_out_of_range_index_raises():
    model = Fn(lambda s, x, i, src: x.scatter_add(1, i, src)).eval()
    x, index, src = torch.randn(2, 4), torch.tensor([[0, 3, 1], [2, 2, 0]]), torch.randn(2, 3)
    program = nova.compile(model, x, index, src, target="nova-t1")
    _check(program(x, index, src), model(x, index, src))
    with pytest.raises(EngineFaultError, match="index 4 at position .* is outside"):
        program(x, torch.tensor([[0, 4, 1], [2, 2, 0]]), src)


def test_bool_mask_assignment():
    def fn(s, x):
        y = x.clone()
        y[x > 0.5] = -1.0
        y[torch.arange(3) == 1] = x[0]  # a mask over rows, one row of values
        return y
    _run(fn, torch.randn(3, 8))


def test_slice_assignment_with_index_tensor():
    def fn(s, x, i):
        y = x.clone()
        y[:, i] = 0.0
        return y
    _run(fn, torch.randn(3, 8), torch.tensor([1, 6, 2]))


# -- scans, sort, topk ----------------------------------------------------------


def test_cumsum_float():
    _run(lambda s, x: (x.cumsum(-1), x.cumsum(0)), torch.randn(2, 8))


def test_cumsum_int64():
    _run(lambda s, x: (x.cumsum(1), (x > 0).cumsum(1), x.to(torch.int32).cumsum(0)), _signed(2, 8))


def test_cumprod():
    _run(lambda s, x, i: (x.cumprod(-1), i.cumprod(-1)), torch.randn(2, 8), _nonzero(2, 8))


def test_logcumsumexp():
    _run(lambda s, x: torch.logcumsumexp(x, -1), torch.randn(2, 8) * 3)


def test_cummax_cummin():
    x = torch.randn(2, 8)
    x[0, 4] = x[0, 2]  # a tie: torch's index moves to the later one
    x[1, 5] = float("nan")
    i = torch.randint(-2, 3, (2, 8))
    _run(lambda s, x, i: (*torch.cummax(x, -1), *torch.cummin(x, -1), *torch.cummax(i, 1),
                          *torch.cummin(i, 0)), x, i)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_float(descending):
    _run(lambda s, x: tuple(torch.sort(x, -1, descending=descending)), torch.randn(2, 8))


@pytest.mark.parametrize("descending", [False, True])
def test_sort_int_stable(descending):
    x = torch.randint(-2, 3, (2, 8))  # ties: stable keeps their order
    _run(lambda s, x: tuple(torch.sort(x, dim=0 if descending else 1, descending=descending,
                                       stable=True)), x)


def test_sort_nan_last():
    x = torch.randn(2, 8)
    x[0, 1] = x[1, 6] = x[1, 2] = float("nan")
    _run(lambda s, x: (*torch.sort(x, dim=-1, stable=True),
                       *torch.sort(x, dim=-1, descending=True, stable=True)), x)


@pytest.mark.parametrize("largest", [True, False])
def test_topk(largest):
    _run(lambda s, x: tuple(torch.topk(x, 3, dim=-1, largest=largest)), torch.randn(2, 8))


@pytest.mark.parametrize("right", [False, True])
def test_bucketize_float_and_int(right):
    boundaries = torch.tensor([-1.0, 0.0, 0.5, 0.5, 2.0])
    x = torch.randn(4, 7)
    x[0, :3] = torch.tensor([0.5, -1.0, 2.0])  # on the boundaries
    _run(lambda m, a, b: torch.bucketize(a, b, right=right), x, boundaries)
    _run(lambda m, a, b: torch.bucketize(a, b, right=right, out_int32=True),
         _signed(3, 5), torch.tensor([-4, 0, 0, 3]))


def test_searchsorted_batched_with_sorter():
    seq = torch.randn(3, 6)
    _run(lambda m, s, v, o: torch.searchsorted(s, v, sorter=o, side="right"),
         seq, torch.randn(3, 4), torch.argsort(seq, -1))
    _run(lambda m, s, v: torch.searchsorted(s, v), torch.sort(torch.randn(8)).values,
         torch.randn(3, 4))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("form", ["offsets", "empty_bag", "last_offset", "padding", "2d"])
def test_embedding_bag(mode, form):
    torch.manual_seed(5)
    kw = {}
    if form == "last_offset":
        kw["include_last_offset"] = True
    if form == "padding":
        kw["padding_idx"] = 2
    bag = torch.nn.EmbeddingBag(10, 4, mode=mode, **kw).eval()
    indices = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = {"offsets": torch.tensor([0, 3, 5]), "empty_bag": torch.tensor([0, 0, 3, 8]),
               "last_offset": torch.tensor([0, 2, 6, 8]), "padding": torch.tensor([0, 3, 5]),
               "2d": None}[form]
    if form == "2d":
        _run(lambda s, i: s.bag(i), indices.reshape(2, 4), bag=bag)
    else:
        _run(lambda s, i, o: s.bag(i, o), indices, offsets, bag=bag)


def test_embedding_bag_per_sample_weights():
    torch.manual_seed(6)
    bag = torch.nn.EmbeddingBag(10, 4, mode="sum").eval()
    _run(lambda s, i, o, w: s.bag(i, o, per_sample_weights=w),
         torch.tensor([1, 2, 4, 5, 4]), torch.tensor([0, 3]), torch.randn(5), bag=bag)


@pytest.mark.parametrize("shape, dim, size, step", [
    ((5, 5, 5, 5), 1, 3, 1),   # a rank-5 result
    ((2, 11), 1, 4, 3),        # strided windows, a remainder left out
    ((7,), 0, 7, 2),           # one window
], ids=["rank5", "strided", "one_window"])
def test_unfold(shape, dim, size, step):
    torch.manual_seed(7)
    _run(lambda s, x: x.unfold(dim, size, step) * 2, torch.randn(*shape))
