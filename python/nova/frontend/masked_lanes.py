"""Boolean-mask reads that only feed mask writes, computed without a size
known only at run time.

``x[mask] += y[mask]`` exports as ``index(x, [mask])`` and ``index(y, [mask])``
(each of ``u`` elements, ``u`` the mask's count, an unbacked size), their sum,
and ``index_put(x, [mask], sum)``. Nova's programs have static shapes, but
the ``u`` elements need never be packed: each such tensor is kept *dense*,
at the shape of the indexed tensor (``mask.shape + rest``), meaningful where
the mask is set. On the exported graph (after the decomposition table, before
torch-mlir):

- ``index(src, [..., mask, i, ...])`` (one bool mask, integer indices of one
  element each and whole dims, in any order) is dense as ``src`` with the
  integer indices picked (a bounds-checked ``index_select`` each);
- an elementwise op of dense tensors of the same mask and of operands without
  the unbacked size (scalars, tensors broadcast over the trailing dims) is the
  op on the dense tensors;
- ``index_put(x, [..., mask, i, ...], values, accumulate)`` with dense
  values of the same layout, with one value (a tensor of one element), or
  with values of the packed size filled with one value (a training trace's
  zeros), is ``where(mask & (position == i)..., x + values or values, x)``;
  an index write pairing a mask with an index of several elements (or a
  second mask) is refused at the model's line: which element goes with which
  set position depends on the mask's count;
- masks are compared by value: a training trace recomputes ``h > 0`` for the
  backward, a second node of the same mask;
- ``sum()`` / ``mean()`` of a dense tensor sum it where the mask is set (the
  mean divides by the count of the mask times the trailing elements).

Whatever else reads a packed ``x[mask]`` (returning it, a matmul...) keeps its
data-dependent shape and is refused at the model's line as before.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Graph, Node
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

from nova.frontend.fx_emit import Emitter

aten = torch.ops.aten

_PUTS = {aten.index_put.default, aten._unsafe_index_put.default}
_REDUCTIONS = {aten.sum.default, aten.mean.default, aten.sum.dim_IntList, aten.mean.dim}


class _Dense:
    """A packed tensor's dense form: ``value`` at ``lead + mask.shape + rest``
    (the indexed tensor without the picked dims; the mask's dims start at
    ``offset``); the integer indices (dim of the indexed tensor, index node)
    the read picked."""

    def __init__(self, mask: Node, picks: tuple[tuple[int, Node], ...], value: Node,
                 offset: int = 0, same: tuple = ()) -> None:
        self.mask, self.picks, self.value, self.offset = mask, picks, value, offset
        #: What makes two dense forms line up: the picks' dims and index values.
        self.same = same

    def key(self) -> tuple:
        return (self.mask, self.same, self.offset)


def _val(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, Node) else None


def _unbacked(node: Any) -> bool:
    val = _val(node)
    return isinstance(val, torch.Tensor) and bool(free_unbacked_symbols(val.shape))


def _same(a: Any, b: Any) -> bool:
    """Whether two FX arguments compute the same value: the same node, or the
    same pure op of the same arguments (a training trace recomputes
    ``h > 0`` for the backward: a second node of the same mask)."""
    if isinstance(a, Node) and isinstance(b, Node):
        if a is b:
            return True
        if a.op != "call_function" or b.op != "call_function" or a.target is not b.target \
                or not isinstance(a.target, torch._ops.OpOverload) \
                or torch.Tag.nondeterministic_seeded in a.target.tags \
                or a.target._schema.is_mutable:
            return False
        return _same(list(a.args), list(b.args)) and _same(dict(a.kwargs), dict(b.kwargs))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


class _Masks:
    """One representative node per distinct value (of masks and index tensors)."""

    def __init__(self) -> None:
        self.seen: list[Node] = []

    def __call__(self, mask: Node) -> Node:
        for known in self.seen:
            if _same(known, mask):
                return known
        self.seen.append(mask)
        return mask


def _mask_and_picks(src: Node, indices: Any) -> tuple[Node, int, list[tuple[int, Node]]] | None:
    """An index list over ``src`` of one bool mask, integer indices of one
    element each (torch broadcasts them against the mask's positions) and
    ``None`` (whole dims), in any order: the mask, the dim of ``src`` its
    dims start at, and each integer index with its dim; else None."""
    if not isinstance(indices, (list, tuple)) or not indices:
        return None
    src_val = _val(src)
    dim, mask, mask_dim, picks = 0, None, 0, []
    for entry in indices:
        if entry is None:
            dim += 1
            continue
        val = _val(entry)
        if not isinstance(val, torch.Tensor) or free_unbacked_symbols(val.shape):
            return None
        if val.dtype == torch.bool:
            if mask is not None or list(val.shape) != list(src_val.shape[dim:dim + val.dim()]):
                return None
            mask, mask_dim = entry, dim
            dim += val.dim()
        elif val.dtype in (torch.int64, torch.int32) and val.numel() == 1:
            picks.append((dim, entry))
            dim += 1
        else:
            return None
    if mask is None or dim > src_val.dim():
        return None
    return mask, mask_dim, picks


def _pairs_with_mask(node: Node) -> bool:
    """An index write whose bool mask pairs with another index of several
    elements (or another mask): which element goes with which set position
    depends on the mask's count, known only at run time."""
    indices = node.args[1] if isinstance(node.args[1], (list, tuple)) else ()
    vals = [_val(i) for i in indices if i is not None]
    masks = [v for v in vals if isinstance(v, torch.Tensor) and v.dtype == torch.bool]
    many = [v for v in vals if isinstance(v, torch.Tensor) and v.dtype != torch.bool
            and (free_unbacked_symbols(v.shape) or v.numel() != 1)]
    return bool(masks) and (len(masks) > 1 or bool(many))


def _refuse_pairing(node: Node) -> None:
    from nova.compiler.errors import NovaUnsupportedOpError
    from nova.frontend.export import frame_of_node

    raise NovaUnsupportedOpError(
        f"{node.target} pairing a boolean mask with another index of several elements (or a "
        f"second mask): each element goes with one set position of the mask, a count known "
        f"only at run time; index with integer positions (mask.nonzero() outside the "
        f"program) or write with torch.where", frame_of_node(node))


def _dense_offset(mask_dim: int, picks: list[tuple[int, Node]] | tuple) -> int:
    """The mask's first dim once the picked dims are gone."""
    return mask_dim - sum(1 for dim, _ in picks if dim < mask_dim)


def _has_mask_write(graph: Graph) -> bool:
    return any(n.op == "call_function" and n.target in _PUTS and isinstance(n.args[1], (list, tuple))
               and any(isinstance(_val(i), torch.Tensor) and _val(i).dtype == torch.bool
                       for i in n.args[1]) for n in graph.nodes)


def densify_masked_lanes(graph: Graph) -> None:
    """Rewrites ``graph`` in place (see the module docstring)."""
    if not any(_unbacked(n) for n in graph.nodes) and not _has_mask_write(graph):
        return
    dense: dict[Node, _Dense] = {}
    masks = _Masks()
    rewritten = []
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        emit = Emitter(graph, node)
        if node.target is aten.index.Tensor and _unbacked(node):
            found = _mask_and_picks(node.args[0], node.args[1])
            if found is not None:
                mask, mask_dim, picks = found
                dense[node] = _dense_read(emit, node.args[0], masks(mask), mask_dim, picks)
                dense[node].same = tuple((dim, masks(i)) for dim, i in picks)
        elif node.target in _PUTS and _pairs_with_mask(node):
            _refuse_pairing(node)
        elif node.target in _PUTS and _one_value(node.args[2]) is not None:
            result = _put_fill(emit, node, masks)
            if result is not None:
                node.replace_all_uses_with(result)
                rewritten.append(node)
        elif node.target in _PUTS and any(a in dense for a in node.all_input_nodes):
            result = _put(emit, node, dense, masks)
            if result is not None:
                node.replace_all_uses_with(result)
                rewritten.append(node)
        elif node.target in _REDUCTIONS and node.args[0] in dense and _whole(node):
            node.replace_all_uses_with(_reduce(emit, node, dense[node.args[0]]))
            rewritten.append(node)
        elif _is_pointwise(node) and any(a in dense for a in node.all_input_nodes):
            result = _pointwise(emit, node, dense)
            if result is not None:
                dense[node] = result
    if rewritten:
        _erase_dead(graph)


def _dense_read(emit: Emitter, src: Node, mask: Node, mask_dim: int,
                picks: list[tuple[int, Node]]) -> _Dense:
    value, checked = src, []
    # Later dims first, so that each pick leaves the earlier dims' numbers.
    for dim, index in reversed(picks):
        index = _checked_index(emit, index, _val(src).shape[dim])
        value = emit(aten.squeeze.dim, emit(aten.index_select.default, value, dim, index), dim)
        checked.append((dim, index))
    return _Dense(mask, tuple(reversed(checked)), value, _dense_offset(mask_dim, picks))


def _checked_index(emit: Emitter, index: Node, size: int) -> Node:
    """The index as one int64 element in ``[0, size)``: negative ones wrapped,
    read back through a gather of ``arange(size)`` whose bounds check faults on
    an index out of range (torch raises)."""
    flat = emit(aten.reshape.default, emit(aten._to_copy.default, index, dtype=torch.int64), [1])
    wrapped = emit(aten.where.self, emit(aten.lt.Scalar, flat, 0),
                   emit(aten.add.Tensor, flat, size), flat)
    positions = emit(aten.arange.start_step, 0, size, 1, dtype=torch.int64)
    return emit(aten.index_select.default, positions, 0, wrapped)


def _is_pointwise(node: Node) -> bool:
    return torch.Tag.pointwise in getattr(node.target, "tags", ())


def _pointwise(emit: Emitter, node: Node, dense: dict[Node, _Dense]) -> _Dense | None:
    forms = {dense[a].key() for a in node.all_input_nodes if a in dense}
    if len(forms) != 1:
        return None
    first = next(dense[a] for a in node.all_input_nodes if a in dense)
    rest_rank = _val(first.value).dim() - _val(first.mask).dim() - first.offset
    for a in node.all_input_nodes:
        if a in dense:
            continue
        val = _val(a)
        # Operands broadcast against the packed [u, *rest]: over rest only.
        if isinstance(val, torch.Tensor) and (free_unbacked_symbols(val.shape)
                                              or val.dim() > rest_rank):
            return None
    args = torch.fx.node.map_arg(node.args, lambda a: dense[a].value if a in dense else a)
    kwargs = torch.fx.node.map_arg(dict(node.kwargs),
                                   lambda a: dense[a].value if a in dense else a)
    return _Dense(first.mask, first.picks, emit(node.target, *args, **kwargs), first.offset,
                  first.same)


def _written(emit: Emitter, x: Node, mask: Node, mask_dim: int,
             picks: tuple[tuple[int, Node], ...]) -> Node:
    """The bool mask of the positions of ``x`` the write reaches, broadcast to x."""
    x_val, mask_val = _val(x), _val(mask)
    trailing = x_val.dim() - mask_dim - mask_val.dim()
    where = emit(aten.reshape.default, mask, [1] * mask_dim + list(mask_val.shape) + [1] * trailing)
    for dim, index in picks:
        shape = [1] * x_val.dim()
        shape[dim] = x_val.shape[dim]
        positions = emit(aten.reshape.default,
                         emit(aten.arange.start_step, 0, x_val.shape[dim], 1, dtype=torch.int64),
                         shape)
        where = emit(aten.logical_and.default, where, emit(aten.eq.Tensor, positions, index))
    return where


#: Ops that fill a new tensor with one value (a training trace's zeros of the
#: packed size, ``full_like(empty_strided([u0]), 0)``): the fill's position.
_FILLS = {aten.full_like.default: 1, aten.full.default: 1, aten.zeros_like.default: None,
          aten.zeros.default: None, aten.new_zeros.default: None}


def _one_value(values: Any) -> Node | int | float | bool | None:
    """What a write of ``values`` writes at every position when that is one
    value: a packed tensor of the unbacked size filled with one value (a
    training trace's zeros: the fill), or a tensor of one element (the node);
    else None."""
    if not isinstance(values, Node) or values.op not in ("call_function", "placeholder", "get_attr"):
        return None
    if values.op == "call_function" and values.target in _FILLS and _unbacked(values):
        position = _FILLS[values.target]
        if position is None:
            return 0
        fill = values.args[position] if len(values.args) > position else None
        return fill if isinstance(fill, (int, float, bool)) else None
    val = _val(values)
    if isinstance(val, torch.Tensor) and not free_unbacked_symbols(val.shape) and val.numel() == 1:
        return values
    return None


def _put_fill(emit: Emitter, node: Node, masks: _Masks) -> Node | None:
    """``index_put(x, [.., mask, i, ..], one value c)``: ``c`` (or ``x + c``
    accumulating; each position is written once) where the mask and the
    indices are set."""
    x, indices, values = node.args[:3]
    accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
    found = _mask_and_picks(x, indices)
    if found is None:
        return None
    mask, mask_dim, ints = found
    x_val = _val(x)
    picks = tuple((dim, _checked_index(emit, i, x_val.shape[dim])) for dim, i in ints)
    one = _one_value(values)
    if isinstance(one, Node):
        fill = emit(aten.reshape.default, emit(aten._to_copy.default, one, dtype=x_val.dtype), [])
    else:
        fill = emit(aten.full_like.default, x, one)
    where = _written(emit, x, masks(mask), mask_dim, picks)
    new = emit(aten.add.Tensor, x, fill) if accumulate else fill
    if _val(new).shape != x_val.shape:
        new = emit(aten.expand.default, new, list(x_val.shape))
    return emit(aten.where.self, where, new, x)


def _put(emit: Emitter, node: Node, dense: dict[Node, _Dense], masks: _Masks) -> Node | None:
    x, indices, values = node.args[:3]
    accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
    found = _mask_and_picks(x, indices)
    if found is None or values not in dense:
        return None
    mask, mask_dim, ints = found
    form = dense[values]
    # The dense values must hold the mask's dims where the write puts them.
    if form.mask is not masks(mask) or form.offset != _dense_offset(mask_dim, ints):
        return None
    x_val = _val(x)
    # The dense values are indexed by the mask's positions, like the write:
    # read at x[m, 1] and written at x[m, 2] moves each row's element.
    value = form.value
    picks = tuple((dim, _checked_index(emit, i, x_val.shape[dim])) for dim, i in ints)
    for dim, _ in picks:
        value = emit(aten.unsqueeze.default, value, dim)
    if _val(value).dim() != x_val.dim() or \
            list(torch.broadcast_shapes(_val(value).shape, x_val.shape)) != list(x_val.shape):
        return None
    value = emit(aten._to_copy.default, value, dtype=x_val.dtype)
    where = _written(emit, x, form.mask, mask_dim, picks)
    new = emit(aten.add.Tensor, x, value) if accumulate else value
    return emit(aten.where.self, where, new, x)


def _whole(node: Node) -> bool:
    """A reduction over every element (``x[mask].sum()``, ``sum(x[mask], [])``)
    into a 0-d result, in the operand's dtype."""
    val = _val(node)
    return (isinstance(val, torch.Tensor) and val.dim() == 0 and not node.kwargs.get("dtype")
            and not (len(node.args) > 3 and node.args[3] is not None))


def _reduce(emit: Emitter, node: Node, form: _Dense) -> Node:
    """sum / mean of the packed elements: of the dense ones where the mask is set."""
    value = form.value
    mask_val = _val(form.mask)
    trailing = _val(value).dim() - mask_val.dim() - form.offset
    where = emit(aten.reshape.default, form.mask,
                 [1] * form.offset + list(mask_val.shape) + [1] * trailing)
    kept = emit(aten.where.self, where, value, emit(aten.zeros_like.default, value))
    total = emit(aten.sum.default, kept)
    if node.target in (aten.sum.default, aten.sum.dim_IntList):
        return emit(aten._to_copy.default, total, dtype=_val(node).dtype)
    per_position = 1  # the packed elements per set mask position: the other dims
    for size in _val(value).shape[:form.offset] + _val(value).shape[form.offset + mask_val.dim():]:
        per_position *= int(size)
    count = emit(aten.sum.default, emit(aten._to_copy.default, form.mask, dtype=total.meta["val"].dtype))
    return emit(aten.div.Tensor, total, emit(aten.mul.Tensor, count, per_position))


def _erase_dead(graph: Graph) -> None:
    """Erases what the rewrite left unread: the replaced ops, then each packed
    read no tensor op reads any more, with the size queries and runtime asserts
    on its unbacked size (``u0 >= 0``, ``u0 <= 32``)."""
    stale = _PUTS | _REDUCTIONS
    for node in reversed(list(graph.nodes)):
        if node.op == "call_function" and not node.users and (
                node.target in stale or _is_pointwise(node) or _unbacked(node)):
            graph.erase_node(node)
    for node in reversed(list(graph.nodes)):
        if node.op != "call_function" or not _unbacked(node):
            continue
        closure = _size_checks(node)
        if closure is None:
            continue
        for check in reversed([n for n in graph.nodes if n in closure]):
            graph.erase_node(check)
        graph.erase_node(node)
    graph.lint()


def _size_checks(node: Node) -> set[Node] | None:
    """The nodes that only query ``node``'s size and assert on it, if nothing
    else reads ``node``; else None."""
    closure, todo = set(), list(node.users)
    while todo:
        user = todo.pop()
        if user in closure:
            continue
        is_check = (user.target is aten.sym_size.int or user.target is aten._assert_scalar.default
                    or (user.op == "call_function"
                        and not isinstance(user.target, torch._ops.OpOverload)
                        and isinstance(_val(user), (torch.SymInt, torch.SymBool, int, bool))))
        if not is_check:
            return None
        closure.add(user)
        todo.extend(user.users)
    return closure
