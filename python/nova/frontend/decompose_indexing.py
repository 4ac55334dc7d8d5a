"""ATen decompositions of the scans, sorts and scatters that torch-mlir lowers to
its own ``tm_tensor`` dialect (``scan``, ``sort``, ``topk``, ``scatter``), and of
the value-and-index reductions it lowers to ``linalg.generic``s with two
results (argmax, argmin, ``max.dim``, ``min.dim``). Nova takes neither; each op
here is rewritten into comparisons, ``where`` and single-result reductions
over an extra axis, which torch-mlir lowers to one-result ``linalg.generic``s.

Every rewrite is exact: integer results are computed in their own type, and
the float ones either select one element (a one-hot sum adds one value to
zeros) or, for ``cumsum``/``cumprod``, reduce the same elements as torch in
another order.

Costs, for ``n`` elements along the op's dim and ``r`` elements across the
others (the vector unit does all of it but the accumulating row scatters
below; a sorting network is future work):

- ``cumsum``/``cumprod``/``logcumsumexp``/``cummax``/``cummin``: an
  ``n x n`` triangular mask, ``r * n^2`` (twice for cummax/cummin);
- ``argmax``/``argmin``/``max.dim``/``min.dim``: two reductions, ``2 * r * n``;
- ``searchsorted``/``bucketize``: each of ``m`` values counts the ``n``
  boundaries below it, ``m * n`` (torch-mlir's own lowering is a max with its
  index, a two-result generic);
- ``sort``: ranks by pairwise comparison, then a one-hot select, ``r * n^2``
  each; ``topk`` selects only ``k`` ranks, ``r * n * (n + k)``;
- ``scatter_add``/``scatter``/``index_add``/``index_put``: a one-hot over the
  ``P`` output positions for each of the ``M`` written elements, ``r * M * P``,
  plus one gather of the ``M`` indices that checks their range (``index out of
  range`` in torch; the indexed DMA's bounds check on Nova). A float
  ``index_add`` or accumulating ``index_put`` with one index tensor is a
  one-hot matmul that ``nova-form-scatter`` turns into a DMA scatter-add of
  ``M`` slices, ``2 * M * r`` bytes moved.

NaN: argmax/argmin and ``max.dim``/``min.dim`` return the first NaN as torch
does; ``sort``/``topk`` order NaN above every number (last ascending, first
descending), as torch does.
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import torch

aten = torch.ops.aten


def indexing_decompositions() -> dict[torch._ops.OperatorBase, Callable]:
    """The rewrites of this module, keyed by the overloads torch.export emits."""
    table = {
        aten.cumsum.default: _cumsum,
        aten.cumprod.default: _cumprod,
        aten.logcumsumexp.default: _logcumsumexp,
        aten.cummax.default: _cummax,
        aten.cummin.default: _cummin,
        aten.argmax.default: _argmax,
        aten.argmin.default: _argmin,
        aten.max.dim: _max_dim,
        aten.min.dim: _min_dim,
        aten.sort.default: _sort,
        aten.sort.stable: _sort_stable,
        aten.topk.default: _topk,
        aten.kthvalue.default: _kthvalue,
        aten.masked_scatter.default: _masked_scatter,
        aten.unfold.default: _unfold,
        aten._embedding_bag.default: _embedding_bag,
        aten._embedding_bag_forward_only.default: _embedding_bag,
        aten.scatter_add.default: _scatter_add,
        aten.scatter.src: _scatter_src,
        aten.scatter.value: _scatter_value,
        aten.scatter_reduce.two: _scatter_reduce,
        aten.index_add.default: _index_add,
        aten.index_put.default: _index_put,
        aten._unsafe_index_put.default: _index_put,
        aten.searchsorted.Tensor: _searchsorted,
        aten.searchsorted.Scalar: _searchsorted_scalar,
        aten.bucketize.Tensor: _bucketize,
        aten.bucketize.Scalar: _bucketize_scalar,
    }
    return {op: _unless_empty(fn) for op, fn in table.items()}


def _unless_empty(fn: Callable) -> Callable:
    """``fn``, except on tensors without elements: those ops stay as they are
    for :mod:`nova.frontend.zero_size` (an empty result is known, an empty
    index writes nothing), and the rewrites' reductions over an empty extra
    axis would fail anyway (``amax`` of nothing)."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
    from torch.utils import _pytree as pytree

    @functools.wraps(fn)
    def unless_empty(*args, **kwargs):
        tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        # A size known only at run time (``x[mask]``): left for nova.frontend.masked_lanes.
        if any(free_unbacked_symbols(t.shape) for t in tensors):
            return NotImplemented
        if any(t.numel() == 0 for t in tensors):
            return NotImplemented
        return fn(*args, **kwargs)

    return unless_empty



# -- helpers --------------------------------------------------------------------


def _along(values: torch.Tensor, dim: int, ndim: int) -> torch.Tensor:
    """1-d ``values`` viewed so that it runs along ``dim`` of an ``ndim``-d
    tensor (size 1 everywhere else)."""
    shape = [1] * ndim
    shape[dim] = values.numel()
    return values.reshape(shape)


def _iota(n: int, dim: int, ndim: int, device) -> torch.Tensor:
    return _along(torch.arange(n, dtype=torch.int64, device=device), dim, ndim)


def _sum(t: torch.Tensor, dim: int, dtype: torch.dtype) -> torch.Tensor:
    """``t.sum(dim)`` in ``dtype`` (torch's sum would widen integers to int64)."""
    if dtype == torch.bool:
        return t.to(torch.int64).sum(dim) != 0
    return t.sum(dim, dtype=dtype)


def _scan_dtype(x: torch.Tensor, dtype: torch.dtype | None) -> torch.dtype:
    if dtype is not None:
        return dtype
    return torch.int64 if not (x.is_floating_point() or x.is_complex()) else x.dtype


def _checked(index: torch.Tensor, size: int) -> torch.Tensor:
    """``index`` itself, read back through a gather of ``arange(size)``: the
    gather is bounds-checked (torch raises for an index out of range, Nova's
    indexed DMA faults), so a bad index never writes silently nowhere."""
    flat = aten.index_select.default(
        torch.arange(size, dtype=torch.int64, device=index.device), 0,
        index.reshape(-1).to(torch.int64))
    return flat.reshape(index.shape)


# -- scans ----------------------------------------------------------------------


def _scan(x: torch.Tensor, dim: int, dtype: torch.dtype | None, neutral, reduce):
    x = x.to(_scan_dtype(x, dtype))
    if x.dim() == 0:
        return x.clone()
    dim = dim % x.dim()
    n = x.shape[dim]
    # out[..., i, ...] = reduce_j where(j <= i, x[..., j, ...], neutral), with
    # i on `dim` and j on a new axis right after it.
    i = _iota(n, dim, x.dim() + 1, x.device)
    j = _iota(n, dim + 1, x.dim() + 1, x.device)
    terms = torch.where(j <= i, x.unsqueeze(dim), neutral)
    return reduce(terms, dim + 1, x.dtype)


def _cumsum(x: torch.Tensor, dim: int, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    return _scan(x, dim, dtype, 0, _sum)


def _cumprod(x: torch.Tensor, dim: int, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    def prod(t, d, dt):
        return t.prod(d, dtype=dt) if dt != torch.bool else t.to(torch.int64).prod(d) != 0
    return _scan(x, dim, dtype, 1, prod)


def _logcumsumexp(x: torch.Tensor, dim: int) -> torch.Tensor:
    if x.dim() == 0:
        return x.clone()
    # logsumexp of an all -inf row is -inf; j = 0 <= i keeps one term anyway.
    return _scan(x, dim, None, float("-inf"), lambda t, d, dt: torch.logsumexp(t, d))


def _cum_extremum(x: torch.Tensor, dim: int, largest: bool):
    """(values, indices) of ``cummax``/``cummin``: the index is the last
    j <= i holding the running extremum (torch's kernel updates on ties), and
    NaN, once seen, is the extremum (the index of the latest NaN)."""
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    dim = dim % x.dim()
    if x.dtype == torch.bool:
        values, indices = _cum_extremum(x.to(torch.uint8), dim, largest)
        return values.to(torch.bool), indices
    n, nd = x.shape[dim], x.dim() + 1
    if x.is_floating_point():
        neutral = float("-inf") if largest else float("inf")
    else:
        info = torch.iinfo(x.dtype)
        neutral = info.min if largest else info.max
    i, j = _iota(n, dim, nd, x.device), _iota(n, dim + 1, nd, x.device)
    seen = j <= i
    terms = torch.where(seen, x.unsqueeze(dim), neutral)
    values = terms.amax(dim + 1) if largest else terms.amin(dim + 1)
    xj, vi = x.unsqueeze(dim), values.unsqueeze(dim + 1)
    hit = xj == vi
    if x.is_floating_point():
        hit = hit | (torch.isnan(xj) & torch.isnan(vi))
    indices = torch.where(seen & hit, j, -1).amax(dim + 1)
    return values, indices


def _cummax(x: torch.Tensor, dim: int):
    return _cum_extremum(x, dim, largest=True)


def _cummin(x: torch.Tensor, dim: int):
    return _cum_extremum(x, dim, largest=False)


# -- value-and-index reductions -------------------------------------------------


def _extremum_with_index(x: torch.Tensor, dim: int, keepdim: bool, largest: bool):
    """(values, first index of the values) along ``dim``, NaN counting as the
    extremum as in torch."""
    dim = dim % x.dim()
    if x.dtype == torch.bool:
        values, indices = _extremum_with_index(x.to(torch.uint8), dim, keepdim, largest)
        return values.to(torch.bool), indices
    n = x.shape[dim]
    m = x.amax(dim, keepdim=True) if largest else x.amin(dim, keepdim=True)
    hit = x == m
    if x.is_floating_point():
        # amax/amin propagate NaN, so if x holds one m is NaN and only the
        # NaNs hit; otherwise isnan is false everywhere.
        hit = hit | torch.isnan(x)
    candidates = torch.where(hit, _iota(n, dim, x.dim(), x.device), n)
    indices = candidates.amin(dim, keepdim=keepdim)
    return (m if keepdim else m.squeeze(dim)), indices


def _arg_extremum(x: torch.Tensor, dim: int | None, keepdim: bool, largest: bool):
    if x.dim() == 0:
        return torch.zeros((), dtype=torch.int64, device=x.device)
    if dim is None:
        indices = _extremum_with_index(x.reshape(-1), 0, False, largest)[1]
        return indices.reshape([1] * x.dim()) if keepdim else indices
    return _extremum_with_index(x, dim, keepdim, largest)[1]


def _searchsorted(sorted_sequence: torch.Tensor, values: torch.Tensor, *,
                  out_int32: bool = False, right: bool = False, side: str | None = None,
                  sorter: torch.Tensor | None = None) -> torch.Tensor:
    """The insertion index of each value: how many boundaries lie below it
    (``right``: at or below it). A 1-D sequence serves every value; an N-D one
    holds one sequence per leading index, matched with ``values``' own."""
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    right = right or side == "right"
    if sorted_sequence.dim() == 1:
        bounds = sorted_sequence.reshape((1,) * values.dim() + (-1,))
    else:
        bounds = sorted_sequence.unsqueeze(-2)
    v = values.unsqueeze(-1)
    below = bounds <= v if right else bounds < v
    return below.sum(-1, dtype=torch.int32 if out_int32 else torch.int64)


def _searchsorted_scalar(sorted_sequence: torch.Tensor, self, *, out_int32: bool = False,
                         right: bool = False, side: str | None = None,
                         sorter: torch.Tensor | None = None) -> torch.Tensor:
    values = torch.full(sorted_sequence.shape[:-1], self, dtype=sorted_sequence.dtype)
    return _searchsorted(sorted_sequence, values, out_int32=out_int32, right=right,
                         side=side, sorter=sorter)


def _bucketize(self: torch.Tensor, boundaries: torch.Tensor, *, out_int32: bool = False,
               right: bool = False) -> torch.Tensor:
    return _searchsorted(boundaries, self, out_int32=out_int32, right=right)


def _bucketize_scalar(self, boundaries: torch.Tensor, *, out_int32: bool = False,
                      right: bool = False) -> torch.Tensor:
    values = torch.full((), self, dtype=boundaries.dtype)
    return _searchsorted(boundaries, values, out_int32=out_int32, right=right)


def _argmax(x: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> torch.Tensor:
    return _arg_extremum(x, dim, keepdim, largest=True)


def _argmin(x: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> torch.Tensor:
    return _arg_extremum(x, dim, keepdim, largest=False)


def _max_dim(x: torch.Tensor, dim: int, keepdim: bool = False):
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    return _extremum_with_index(x, dim, keepdim, largest=True)


def _min_dim(x: torch.Tensor, dim: int, keepdim: bool = False):
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    return _extremum_with_index(x, dim, keepdim, largest=False)


# -- sort and topk --------------------------------------------------------------


def _ranks(x: torch.Tensor, dim: int, descending: bool) -> torch.Tensor:
    """The stable sort position of each element along ``dim`` (int64):
    rank[i] = #{j: x[j] sorts before x[i]} + #{j < i: x[j] ties x[i]}."""
    nd = x.dim() + 1
    xi, xj = x.unsqueeze(dim + 1), x.unsqueeze(dim)  # i on dim, j on dim + 1
    before = xj > xi if descending else xj < xi
    tie = xj == xi
    if x.is_floating_point():
        # NaN sorts above every number and ties every NaN.
        ni, nj = torch.isnan(xi), torch.isnan(xj)
        before = before | ((nj & ~ni) if descending else (ni & ~nj))
        tie = tie | (ni & nj)
    n = x.shape[dim]
    earlier = _iota(n, dim + 1, nd, x.device) < _iota(n, dim, nd, x.device)
    return (before | (tie & earlier)).sum(dim + 1)


def _select_ranks(x: torch.Tensor, dim: int, ranks: torch.Tensor, k: int):
    """(values, indices) of the elements of rank 0..k-1 along ``dim``."""
    nd = x.dim() + 1
    n = x.shape[dim]
    # r on dim, i on dim + 1; exactly one i has each rank.
    onehot = ranks.unsqueeze(dim) == _iota(k, dim, nd, x.device)
    values = _sum(torch.where(onehot, x.unsqueeze(dim), 0), dim + 1, x.dtype)
    indices = torch.where(onehot, _iota(n, dim + 1, nd, x.device), 0).sum(dim + 1)
    return values, indices


def _sort_impl(x: torch.Tensor, dim: int, descending: bool, k: int | None = None):
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    dim = dim % x.dim()
    if x.dtype == torch.bool:
        # As int32: Nova has no unsigned tensors (and false < true either way).
        values, indices = _sort_impl(x.to(torch.int32), dim, descending, k)
        return values.to(torch.bool), indices
    k = x.shape[dim] if k is None else k
    return _select_ranks(x, dim, _ranks(x, dim, descending), k)


def _sort(x: torch.Tensor, dim: int = -1, descending: bool = False):
    # torch's sort is not promised stable; the stable order is one it may give.
    return _sort_impl(x, dim, descending)


def _sort_stable(x: torch.Tensor, *, stable: bool | None = None, dim: int = -1,
                 descending: bool = False):
    return _sort_impl(x, dim, descending)


def _topk(x: torch.Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    # Sorted whatever `sorted` says (torch leaves the order unspecified then);
    # among ties the lower index comes first.
    return _sort_impl(x, dim, largest, k)


def _kthvalue(x: torch.Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """(value, index) of the k-th smallest along ``dim``: the element of
    ascending rank k - 1 (among ties the lower index, as for sort)."""
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    dim = dim % x.dim()
    if x.dtype == torch.bool:
        values, indices = _kthvalue(x.to(torch.int32), k, dim, keepdim)
        return values.to(torch.bool), indices
    ranks = _ranks(x, dim, descending=False)
    hit = ranks == k - 1
    n = x.shape[dim]
    values = _sum(torch.where(hit, x, 0), dim, x.dtype)
    indices = torch.where(hit, _iota(n, dim, x.dim(), x.device), 0).sum(dim)
    if keepdim:
        values, indices = values.unsqueeze(dim), indices.unsqueeze(dim)
    return values, indices


def _masked_scatter(x: torch.Tensor, mask: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """The mask's i-th true position (in row-major order) takes source's
    i-th element: a running count of the mask (a cumsum without tm_tensor's
    scan) indexes the flattened source."""
    mask = mask.expand(x.shape) if mask.shape != x.shape else mask
    flat = mask.reshape(-1)
    if flat.numel() == 0:
        return NotImplemented
    count = _cumsum(flat.to(torch.int64), 0) - 1
    # Positions the mask skips read element 0 (any valid one), then drop it.
    picked = aten.index_select.default(source.reshape(-1), 0, count.clamp(min=0))
    return torch.where(mask, picked.reshape(x.shape).to(x.dtype), x)


def _embedding_bag(weight: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor,
                   scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                   per_sample_weights: torch.Tensor | None = None,
                   include_last_offset: bool = False, padding_idx: int = -1):
    """``aten._embedding_bag{,_forward_only}`` (nn.EmbeddingBag) without its
    data-dependent intermediates: bag b holds the indices from offsets[b] up
    to the next offset; a [bags, indices] membership mask weighs the gathered
    rows (a matmul for sum and mean, a masked amax for max). Empty bags give
    0, indices equal to ``padding_idx`` are left out, as in torch."""
    if indices.dim() != 1 or weight.dim() != 2 or indices.numel() == 0:
        return NotImplemented
    starts = offsets[:-1] if include_last_offset else offsets
    bags, n = starts.shape[0], indices.shape[0]
    position = torch.arange(n, dtype=torch.int64, device=indices.device)
    # Bag of each index: how many bags start at or before it, minus one.
    bag = (starts.unsqueeze(1) <= position.unsqueeze(0)).to(torch.int64).sum(0) - 1
    member = bag.unsqueeze(0) == torch.arange(bags, dtype=torch.int64,
                                              device=indices.device).unsqueeze(1)
    if padding_idx >= 0:
        member = member & (indices != padding_idx).unsqueeze(0)
    rows = aten.index_select.default(weight, 0, _checked(indices, weight.shape[0]))
    count = member.to(torch.int64).sum(1)
    if mode == 2:  # max
        lowest = torch.finfo(weight.dtype).min if weight.is_floating_point() else \
            torch.iinfo(weight.dtype).min
        terms = torch.where(member.unsqueeze(2), rows.unsqueeze(0), lowest)
        output = torch.where(count.unsqueeze(1) > 0, terms.amax(1), 0).to(weight.dtype)
        max_indices = torch.where(member, position.unsqueeze(0), 0).amax(1)
    else:
        scale = member.to(weight.dtype)
        if per_sample_weights is not None:
            scale = scale * per_sample_weights.to(weight.dtype).unsqueeze(0)
        output = scale @ rows
        if mode == 1:  # mean
            output = output / count.clamp(min=1).unsqueeze(1).to(weight.dtype)
        max_indices = torch.zeros(bags, dtype=torch.int64, device=indices.device)
    return output, bag, count, max_indices


def _unfold(x: torch.Tensor, dim: int, size: int, step: int) -> torch.Tensor:
    """``x.unfold(dim, size, step)``: window element j of every window is the
    strided slice starting at j, stacked on a new last dim. (torch-mlir reads
    the windows through an indexing map ``i * step + j``, which is not a
    projected permutation and lowers to no tile.)"""
    if x.dim() == 0:
        return NotImplemented
    dim = dim % x.dim()
    count = (x.shape[dim] - size) // step + 1
    if count <= 0 or size > 256:
        return NotImplemented
    taps = [aten.slice.Tensor(x, dim, j, j + (count - 1) * step + 1, step) for j in range(size)]
    return torch.stack(taps, dim=x.dim())


# -- scatters -------------------------------------------------------------------


def _pad_to(t: torch.Tensor, shape: Sequence[int], value) -> torch.Tensor:
    """``t`` padded at the end of each dim up to ``shape``."""
    pad = []
    for have, want in reversed(list(zip(t.shape, shape))):
        pad += [0, want - have]
    if not any(pad):
        return t
    return aten.constant_pad_nd.default(t, pad, value)


def _narrow_to(t: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    for d, size in enumerate(shape):
        if t.shape[d] != size:
            t = t.narrow(d, 0, size)
    return t


def _onehot_along(index: torch.Tensor, dim: int, size: int) -> torch.Tensor:
    """onehot[.., p, i, ..] = index[.., i, ..] == p: p on ``dim`` (``size``
    output positions), the index's own ``dim`` moved to ``dim + 1``."""
    return index.unsqueeze(dim) == _iota(size, dim, index.dim() + 1, index.device)


def _last_writer(index: torch.Tensor, dim: int, size: int) -> torch.Tensor:
    """last[.., p, ..] = the largest i with index[.., i, ..] == p, or -1."""
    onehot = _onehot_along(index, dim, size)
    writers = _iota(index.shape[dim], dim + 1, index.dim() + 1, index.device)
    return torch.where(onehot, writers, -1).amax(dim + 1)


def _scatter_add(x: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    if x.dim() == 0:
        return NotImplemented
    dim = dim % x.dim()
    size = x.shape[dim]
    index = _checked(index, size)
    src = _narrow_to(src, index.shape)
    onehot = _onehot_along(index, dim, size)
    added = _sum(torch.where(onehot, src.unsqueeze(dim).to(x.dtype), 0), dim + 1, x.dtype)
    return x + _pad_to(added, x.shape, 0)


def _scatter_last(x: torch.Tensor, dim: int, index: torch.Tensor, src) -> torch.Tensor:
    """``x.scatter(dim, index, src)``: the last write to a position wins (the
    order torch's CPU kernel writes in; torch leaves duplicates unspecified)."""
    if x.dim() == 0:
        return NotImplemented
    dim = dim % x.dim()
    size = x.shape[dim]
    index = _checked(index, size)
    if index.shape[dim] == 1:
        # One writer per row along ``dim`` (nll_loss's backward writing each
        # row's target class): it is the last, so a one-hot select does it,
        # with no [.., size, writers] index tensors.
        hit = _pad_to(index == _iota(size, dim, index.dim(), index.device), x.shape, False)
        if isinstance(src, torch.Tensor):
            row = list(x.shape)
            row[dim] = 1
            src = _pad_to(_narrow_to(src, index.shape).to(x.dtype), row, 0)
        return torch.where(hit, src, x)
    last = _last_writer(index, dim, size)
    if isinstance(src, torch.Tensor):
        src = _narrow_to(src, index.shape).to(x.dtype)
        pick = last.unsqueeze(dim + 1) == _iota(index.shape[dim], dim + 1, x.dim() + 1, x.device)
        written = _sum(torch.where(pick, src.unsqueeze(dim), 0), dim + 1, x.dtype)
        written = _pad_to(written, x.shape, 0)
    else:
        written = src
    return torch.where(_pad_to(last, x.shape, -1) >= 0, written, x)


def _scatter_src(x, dim, index, src):
    return _scatter_last(x, dim, index, src)


def _scatter_value(x, dim, index, value):
    return _scatter_last(x, dim, index, value)


def _scatter_reduce(x: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor,
                    reduce: str, *, include_self: bool = True) -> torch.Tensor:
    """``x.scatter_reduce(dim, index, src, reduce, include_self=...)`` for
    ``sum``, ``prod``, ``amax``, ``amin`` and ``mean`` (an integer mean
    rounds down, as torch's kernel divides)."""
    if x.dim() == 0 or reduce not in ("sum", "prod", "amax", "amin", "mean"):
        return NotImplemented
    if reduce == "mean" and x.dtype == torch.bool:
        return NotImplemented
    dim = dim % x.dim()
    size = x.shape[dim]
    index = _checked(index, size)
    src = _narrow_to(src, index.shape).to(x.dtype).unsqueeze(dim)
    onehot = _onehot_along(index, dim, size)
    hits = _pad_to(onehot.sum(dim + 1), x.shape, 0)  # int64 writers per position
    if reduce in ("sum", "mean"):
        reduced = _pad_to(_sum(torch.where(onehot, src, 0), dim + 1, x.dtype), x.shape, 0)
        if include_self:
            reduced = reduced + x
        if reduce == "mean":
            count = (hits + int(include_self)).clamp(min=1).to(x.dtype)
            reduced = (reduced / count if x.is_floating_point()
                       else torch.div(reduced, count, rounding_mode="floor"))
    elif reduce == "prod":
        reduced = _pad_to(torch.where(onehot, src, 1).prod(dim + 1, dtype=x.dtype), x.shape, 1)
        if include_self:
            reduced = reduced * x
    else:
        largest = reduce == "amax"
        if x.is_floating_point():
            neutral = float("-inf") if largest else float("inf")
        elif x.dtype == torch.bool:
            neutral = not largest
        else:
            info = torch.iinfo(x.dtype)
            neutral = info.min if largest else info.max
        terms = torch.where(onehot, src, neutral)
        reduced = terms.amax(dim + 1) if largest else terms.amin(dim + 1)
        reduced = _pad_to(reduced, x.shape, neutral)
        if include_self:
            reduced = torch.maximum(reduced, x) if largest else torch.minimum(reduced, x)
    return torch.where(hits > 0, reduced, x)


def _index_add(x: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor,
               *, alpha=1) -> torch.Tensor:
    if x.dim() == 0:
        # A 0-d tensor indexes as one element along dim 0.
        return _index_add(x.reshape(1), 0, index, source.reshape(-1), alpha=alpha).reshape(())
    dim = dim % x.dim()
    if x.dtype.is_floating_point:
        # Whole slices of source added at positions along dim: an accumulating
        # index_put (a one-hot matmul, which nova-form-scatter turns into a
        # DMA scatter-add of rows).
        if alpha != 1:
            source = source * alpha
        return _int_put(x, [None] * dim + [index.reshape(-1)], source, True)
    size = x.shape[dim]
    index = _checked(index.reshape(-1), size)
    # onehot[.., p, i, ..]: source's dim i matches output position p.
    onehot = _along(index, dim + 1, x.dim() + 1) == _iota(size, dim, x.dim() + 1, x.device)
    if alpha != 1:
        source = source * alpha
    added = _sum(torch.where(onehot, source.unsqueeze(dim).to(x.dtype), 0), dim + 1, x.dtype)
    return x + added


def _index_put(x: torch.Tensor, indices: Sequence[torch.Tensor | None], values: torch.Tensor,
               accumulate: bool = False) -> torch.Tensor:
    """``x[indices] = values`` (or ``+=`` with ``accumulate``) for integer
    index tensors; bool masks are left to torch-mlir.

    The indexed dims are flattened into one of ``Q`` positions and moved to
    the front; the ``M`` written elements (the indices broadcast together)
    become a one-hot over ``Q``. Without ``accumulate`` the last write to a
    position wins, as torch's CPU kernel does (torch leaves it unspecified).
    """
    if any(t is not None and t.dtype in (torch.bool, torch.uint8) for t in indices):
        put = _mask_put(x, indices, values, accumulate)
        return put if put is not NotImplemented else _mixed_put(x, indices, values, accumulate)
    return _int_put(x, indices, values, accumulate)


def _int_put(x: torch.Tensor, indices: Sequence[torch.Tensor | None], values: torch.Tensor,
             accumulate: bool, valid: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`_index_put` for integer index tensors; ``valid`` (bool, the
    indices' broadcast shape) leaves out the writes where it is False."""
    if x.dim() == 0 or all(t is None for t in indices):
        return NotImplemented
    nd = x.dim()
    advanced = [d for d, t in enumerate(indices) if t is not None]
    rest = [d for d in range(nd) if d not in advanced]
    index_tensors = torch.broadcast_tensors(*[indices[d] for d in advanced])
    bshape = list(index_tensors[0].shape)
    # torch's result layout: the broadcast index dims replace the indexed dims
    # in place if those are adjacent, else they come first.
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    first = advanced[0] if adjacent else 0
    rest_shape = [x.shape[d] for d in rest]
    target = rest_shape[:first] + bshape + rest_shape[first:]
    values = values.to(x.dtype).expand(target) if list(values.shape) != target else values.to(x.dtype)
    nb = len(bshape)
    order = list(range(first, first + nb)) + list(range(first)) + list(range(first + nb, len(target)))
    if order != list(range(len(target))):
        values = values.permute(order)
    m = 1
    for s in bshape:
        m *= s
    values = values.reshape([m] + rest_shape)

    # Linear position over the indexed dims (row-major), negatives wrapped.
    q, position = 1, None
    for d, t in zip(advanced, index_tensors):
        t = t.reshape(-1).to(torch.int64)
        t = torch.where(t < 0, t + x.shape[d], t)
        t = _checked(t, x.shape[d])
        position = t if position is None else position * x.shape[d] + t
        q *= x.shape[d]
    if valid is not None:
        # A write left out aims at position q, which no output position matches.
        position = torch.where(valid.expand(bshape).reshape(-1), position, q)

    perm = advanced + rest
    xp = x.permute(perm) if perm != list(range(nd)) else x
    xp = xp.reshape([q] + rest_shape)
    ndp = xp.dim() + 1
    if accumulate and x.dtype.is_floating_point:
        # A one-hot [q, m] times the values [m, rest]: with one index tensor
        # (its ids read out of the iota the one-hot compares against, which
        # bounds-checks them), nova-form-scatter makes it a DMA scatter-add of
        # the m rows (the embedding backward: 2·m·rest bytes moved instead of
        # 2·q·m·rest FLOPs); otherwise it runs on the matrix unit. Exact up to
        # the order of the float sums (torch's kernel has its own order too).
        weights = (position.unsqueeze(0) == _iota(q, 0, 2, x.device)).to(x.dtype)
        added = weights @ values.reshape(m, -1)
        out = (xp + added.reshape([q] + rest_shape))
        out = out.reshape([x.shape[d] for d in perm])
        if perm != list(range(nd)):
            out = out.permute([perm.index(d) for d in range(nd)])
        return out
    onehot = _along(position, 1, ndp) == _iota(q, 0, ndp, x.device)  # [q, m, 1..]
    if accumulate:
        out = xp + _sum(torch.where(onehot, values.unsqueeze(0), 0), 1, x.dtype)
    else:
        writers = _iota(m, 1, ndp, x.device)
        last = torch.where(onehot, writers, -1).amax(1, keepdim=True)
        pick = writers == last  # one-hot over m, or nothing where last is -1
        written = _sum(torch.where(pick, values.unsqueeze(0), 0), 1, x.dtype)
        out = torch.where(last.squeeze(1) >= 0, written, xp)
    out = out.reshape([x.shape[d] for d in perm])
    if perm != list(range(nd)):
        inverse = [perm.index(d) for d in range(nd)]
        out = out.permute(inverse)
    return out


def _mask_put(x: torch.Tensor, indices, values: torch.Tensor, accumulate: bool):
    """``x[mask] = v`` (or ``+=``) with one bool mask over x's leading dims
    and values that broadcast over the masked elements (a scalar, or one
    value per trailing position): ``where(mask, v, x)``. Values given one per
    True element (a count known only at run time) keep torch-mlir's lowering."""
    if len(indices) != 1 or indices[0] is None or indices[0].dtype != torch.bool:
        return NotImplemented
    mask = indices[0]
    if list(mask.shape) != list(x.shape[:mask.dim()]):
        return NotImplemented
    trailing = x.dim() - mask.dim()
    shape = list(values.shape)
    leading = shape[:max(len(shape) - trailing, 0)]
    if not all(isinstance(size, int) and size == 1 for size in leading):
        return NotImplemented
    values = values.to(x.dtype).reshape(shape[len(leading):])
    mask = mask.reshape(list(mask.shape) + [1] * trailing)
    return torch.where(mask, x + values if accumulate else values, x)


def _mixed_put(x: torch.Tensor, indices, values: torch.Tensor, accumulate: bool):
    """``x[indices] = values`` (or ``+=``) with bool masks among integer
    indices, in any position. torch replaces a mask of ``k`` dims by the ``k``
    coordinate tensors of its set positions (``nonzero``, ``c`` of them in
    row-major order), broadcast with the other indices. ``c`` is known only
    at run time, so the mask becomes coordinates of a static length ``L``:

    - when the other indices or the values have a dim of ``L > 1`` elements
      where the mask's ``c`` broadcasts, torch pairs them element by element:
      the coordinates of the first ``L`` set positions (a running count of the
      mask, one-hot over its positions), with a runtime assert that ``c`` is
      ``L`` (or 1 against an index, which broadcasts: its one position
      ``L`` times), which torch's shape check raises for otherwise;
    - else every position of the mask's dims, each write left out where the
      mask is not set (a single mask with integer indices of one element is
      left to :mod:`nova.frontend.masked_lanes`, which needs no one-hot).

    Then it is an integer ``index_put``; duplicates follow :func:`_int_put`."""
    indices = [t.to(torch.bool) if t is not None and t.dtype == torch.uint8 else t
               for t in indices]
    masks = [t for t in indices if t is not None and t.dtype == torch.bool]
    ints = [t for t in indices if t is not None and t.dtype != torch.bool]
    if any(t.dtype not in (torch.int64, torch.int32) for t in ints):
        return NotImplemented
    slots = _slots(x.dim(), x.shape, indices)
    if slots is None:
        return NotImplemented  # torch's own shape error
    int_shape = list(torch.broadcast_shapes(*[t.shape for t in ints])) if ints else []
    by_index = int_shape[-1] if int_shape else 1
    # Where the masks' count lands in the values' target shape (torch's layout).
    advanced = [d for d, s in enumerate(slots) if s is not None]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    first = advanced[0] if adjacent else 0
    bdims = max(len(int_shape), 1)
    target_len = x.dim() - len(advanced) + bdims
    c_at = first + bdims - 1 - (target_len - values.dim())
    by_values = values.shape[c_at] if 0 <= c_at < values.dim() else 1
    if by_index > 1 and by_values not in (1, by_index):
        return NotImplemented  # torch's own shape error
    length = by_index if by_index > 1 else by_values
    if length <= 1:
        if len(masks) == 1 and all(t.numel() == 1 for t in ints):
            return NotImplemented  # nova.frontend.masked_lanes
        if len(masks) > 1:
            return NotImplemented
        return _all_positions_put(x, slots, indices, values, accumulate)
    return _int_put(x, _coordinates(slots, length, by_index > 1), values, accumulate)


def _coordinates(slots: list, length: int, may_broadcast: bool, check: bool = True) -> list:
    """The index list with each mask's slots replaced by the coordinates of its
    first ``length`` set positions (every one of them its only position when
    ``may_broadcast`` and it has one), and a runtime assert on its count."""
    coordinates: dict[int, list[torch.Tensor]] = {}
    new_indices: list = []
    seen: dict[int, int] = {}
    for s in slots:
        if s is None or s[0] == "int":
            new_indices.append(None if s is None else s[1])
            continue
        mask = s[1]
        if id(mask) not in coordinates:
            coordinates[id(mask)] = _set_positions(mask, length, may_broadcast, check)
        k = seen.get(id(mask), 0)
        seen[id(mask)] = k + 1
        new_indices.append(coordinates[id(mask)][k])
    return _trim(new_indices)


def count_message(length: int) -> str:
    """The runtime assert's message for a mask paired with ``length`` elements."""
    return (f"boolean mask index: the mask has a number of set elements other than the "
            f"{length} it is paired with (torch: shape mismatch)")


def _set_positions(mask: torch.Tensor, length: int, may_broadcast: bool,
                   check: bool = True) -> list[torch.Tensor]:
    """Coordinates (one tensor of ``length`` per dim of ``mask``) of its first
    ``length`` set positions in row-major order: a running count of the mask,
    one-hot against ``0..length-1``. Asserts that the mask has ``length`` set
    positions (or 1, when ``may_broadcast``)."""
    flat = mask.reshape(-1)
    count = flat.to(torch.int64).sum()
    allowed = count == length
    if may_broadcast:
        allowed = allowed | (count == 1)
    if check:
        torch._assert_async(allowed, count_message(length))
    rank = _cumsum(flat.to(torch.int64), 0) - 1
    wanted = torch.arange(length, dtype=torch.int64, device=mask.device)
    if may_broadcast:
        wanted = torch.where(count == 1, 0, wanted)
    hit = (rank.unsqueeze(0) == wanted.unsqueeze(1)) & flat.unsqueeze(0)
    where = torch.arange(flat.numel(), dtype=torch.int64, device=mask.device)
    position = torch.where(hit, where.unsqueeze(0), 0).sum(1)
    return _unravel(position, list(mask.shape))


def _slots(x_dim: int, x_shape, indices) -> list | None:
    """Each dim of x: None (whole), ("int", t) or ("mask", mask, first dim);
    None when the masks do not match x's dims (torch's own error)."""
    slots, dim = [], 0
    for t in indices:
        if t is None:
            slots.append(None)
            dim += 1
        elif t.dtype == torch.bool:
            if t.dim() == 0 or list(t.shape) != list(x_shape[dim:dim + t.dim()]):
                return None
            slots.extend([("mask", t, dim)] * t.dim())
            dim += t.dim()
        else:
            slots.append(("int", t))
            dim += 1
    if dim > x_dim:
        return None
    return slots + [None] * (x_dim - dim)


def mixed_index(x: torch.Tensor, indices, result_shape: Sequence[int],
                check: bool = True) -> torch.Tensor:
    """``x[indices]`` with bool masks among the indices and a result of the
    static ``result_shape`` (torch.export fixes the masks' count when the
    result meets a tensor of known size): the integer gather of the masks'
    set positions (:func:`_coordinates`, with its assert on the count)."""
    indices = [t.to(torch.bool) if t is not None and t.dtype == torch.uint8 else t
               for t in indices]
    slots = _slots(x.dim(), x.shape, indices)
    if slots is None:
        raise ValueError("mask shapes do not match the indexed tensor")
    ints = [t for t in indices if t is not None and t.dtype != torch.bool]
    int_shape = list(torch.broadcast_shapes(*[t.shape for t in ints])) if ints else []
    by_index = int_shape[-1] if int_shape else 1
    return aten.index.Tensor(x, _coordinates(slots, read_length(x.dim(), x.shape, indices,
                                                                result_shape),
                                             by_index > 1, check))


def read_length(x_dim: int, x_shape, indices, result_shape: Sequence[int]) -> int:
    """The size a read's masks are paired with: the result's dim where their
    count lands (torch's layout)."""
    slots = _slots(x_dim, x_shape, indices)
    ints = [t for t in indices if t is not None and t.dtype != torch.bool]
    int_shape = list(torch.broadcast_shapes(*[t.shape for t in ints])) if ints else []
    advanced = [d for d, s in enumerate(slots) if s is not None]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    first = advanced[0] if adjacent else 0
    return int(result_shape[first + max(len(int_shape), 1) - 1])


def _all_positions_put(x, slots, indices, values, accumulate):
    """The one mask's every position as coordinates (``P`` of them), each
    write valid where the mask is set; the values are the same along the
    mask's count (its dim is 1 or absent), so they broadcast over ``P``."""
    mask = next(t for t in indices if t is not None and t.dtype == torch.bool)
    n = mask.numel()
    coords = _unravel(torch.arange(n, dtype=torch.int64, device=x.device), list(mask.shape))
    new_indices, k = [], 0
    for s in slots:
        if s is None:
            new_indices.append(None)
        elif s[0] == "int":
            new_indices.append(s[1])
        else:
            new_indices.append(coords[k])
            k += 1
    ints = [t for t in new_indices if t is not None]
    valid = mask.reshape(-1).expand(torch.broadcast_shapes(*[t.shape for t in ints]))
    return _int_put(x, _trim(new_indices), values, accumulate, valid)


def _unravel(position: torch.Tensor, shape: list[int]) -> list[torch.Tensor]:
    """Row-major coordinates of flat ``position`` in ``shape``."""
    coords = []
    for size in reversed(shape):
        coords.append(torch.remainder(position, size))
        position = torch.div(position, size, rounding_mode="floor")
    return coords[::-1]


def _trim(indices: list) -> list:
    """Trailing whole dims dropped (as torch's own index lists end)."""
    while indices and indices[-1] is None:
        indices = indices[:-1]
    return indices
