"""uint8 and int16 tensors carried in int32, with torch's wrap-around.

Nova's tiles hold int8, int32 and int64 (docs/isa.md); torch-mlir lowers
unsigned tensors to signless integers with signed conversions. So on the
exported graph (after the decomposition table, before torch-mlir) every uint8
or int16 tensor becomes an int32 one holding the same value, always in the
narrow type's range (uint8 in [0, 255], int16 in [-32768, 32767]):

- each op is re-typed from its int32 operands; where torch's result was
  uint8 / int16 it is now int32, wrapped back into range after every op that
  can leave it (``x & 255`` for uint8, ``((x + 32768) & 65535) - 32768`` for
  int16; the int32 results of ops on in-range values never overflow first:
  ``255 * 255`` and ``32767 * 32767`` fit). Views, copies, selections and
  comparisons keep values in range and are not wrapped;
- conversions into uint8 / int16 convert to int32 and wrap, which is torch's
  modular conversion from integers (``x.to(torch.uint8)`` of an int64) and
  its CPU conversion from floats in range (it truncates toward zero);
- promotion is torch's: the exported graph carries the dtype torch chose for
  each result (uint8 + int8 is int16, uint8 + int64 is int64), and a value in
  range converts exactly to any wider type;
- a uint8 index tensor is a mask in torch: it is compared with 0 first.

Inputs, results and state of these dtypes cross the boundary as int32: the
binding converts the caller's tensors on the way in and out
(:mod:`nova.runtime.binding`, ``host_dtype``).

int8 has a tile type and stays int8 in memory, but torch-mlir's lowering of
several int8 ops crashes the process (``x * 3``, ``x - 1``, ``x // 3``,
``x % 3`` and ``x.max()`` reach an unimplemented scalar conversion, then a
null dereference). So each op computing an int8 result, other than those that
only move or pick values, reads its int8 operands converted to int32, wraps
its int32 result (``((x + 128) & 255) - 128``, torch's int8 wrap-around) and
converts it back to int8 (:func:`compute_int8_in_int32`, one of every compile
path's :mod:`nova.frontend.idioms`).
"""

from __future__ import annotations

import operator

import torch
from torch.fx import Graph, Node

from nova.frontend.fx_emit import HOST_DTYPE, Emitter, node_vals, set_val

aten = torch.ops.aten
prims = torch.ops.prims

_NARROW = (torch.uint8, torch.int16)

#: Node metadata: the narrow dtype torch gave this (now int32) result.
_RESULT = "nova_narrow_result"

#: Ops that move, copy, pick or compare values: an in-range operand gives an
#: in-range result, so no wrap follows them.
_IN_RANGE = {
    aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.slice.Tensor,
    aten.select.int, aten.permute.default, aten.transpose.int, aten.t.default,
    aten.expand.default, aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims,
    aten.squeeze.default, aten.clone.default, aten.alias.default, aten.cat.default,
    aten.stack.default, aten.index.Tensor, aten.index_select.default, aten.gather.default,
    aten.flip.default, aten.roll.default, aten.repeat.default, aten.where.self,
    aten.maximum.default, aten.minimum.default, aten.amax.default, aten.amin.default,
    aten.max.default, aten.min.default, aten.slice_scatter.default,
    aten.select_scatter.default, aten.diagonal.default, aten.tril.default,
    aten.triu.default, operator.getitem, aten.bitwise_and.Tensor, aten.bitwise_or.Tensor,
    aten.bitwise_xor.Tensor, aten.bitwise_and.Scalar, aten.bitwise_or.Scalar,
    aten.bitwise_xor.Scalar, aten.max.dim, aten.min.dim, aten.sort.default,
    aten.topk.default, aten.scatter.src, aten.index_put.default, aten.split.Tensor,
    aten.split_with_sizes.default, aten.unsafe_split.Tensor, aten.unbind.int,
}


#: Ops that only move or pick int8 values, which torch-mlir lowers for int8.
_INT8_MOVES = {
    aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.slice.Tensor,
    aten.select.int, aten.permute.default, aten.transpose.int, aten.t.default,
    aten.expand.default, aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims,
    aten.squeeze.default, aten.clone.default, aten.alias.default, aten.cat.default,
    aten.stack.default, aten.flip.default, aten.where.self, operator.getitem,
    aten.split.Tensor, aten.split_with_sizes.default, aten.unsafe_split.Tensor,
    aten.unbind.int, aten.diagonal.default, aten.index.Tensor, aten.index_select.default,
    aten.gather.default, aten.copy.default, aten.fill.Scalar, aten.full.default,
    aten.full_like.default, aten.zeros_like.default, aten.empty_like.default,
    prims.convert_element_type.default, aten._to_copy.default,
}


def _narrow(value) -> torch.dtype | None:
    if isinstance(value, torch.Tensor) and value.dtype in _NARROW:
        return value.dtype
    return None


def _narrow_of(node: Node) -> list[torch.dtype | None]:
    val = node.meta.get("val")
    vals = val if isinstance(val, (list, tuple)) else [val]
    return [_narrow(v) for v in vals]


def widen_narrow_ints(graph: Graph) -> None:
    """Rewrites ``graph`` in place (see the module docstring). Placeholders and
    returned values that were narrow carry :data:`HOST_DTYPE` metadata naming
    the caller's dtype."""
    if not any(any(_narrow_of(n)) for n in graph.nodes):
        return
    widened: set[Node] = set()
    for node in list(graph.nodes):
        if node.op == "placeholder" and any(_narrow_of(node)):
            val = node.meta["val"]
            node.meta[HOST_DTYPE] = str(val.dtype).removeprefix("torch.")
            set_val(node, val.to(torch.int32))
            widened.add(node)
        elif node.op == "call_function" and (
                any(a in widened for a in node.all_input_nodes) or any(_narrow_of(node))
                or _names_narrow_dtype(node)):
            _retype(graph, node, widened)
        elif node.op == "output":
            _mark_results(graph, node)
    graph.lint()


def compute_int8_in_int32(graph: Graph) -> None:
    """Rewrites ``graph`` in place: every op with an int8 result that reads an
    int8 tensor and is not in :data:`_INT8_MOVES` runs on int32 copies of its
    int8 operands; its int32 result is wrapped into int8's range (unless the op
    keeps values in range) and converted back, so every other node sees the
    int8 value torch computes."""
    for node in list(graph.nodes):
        if (node.op != "call_function" or node.target in _INT8_MOVES
                or not any(_is_int8(a) for a in node.all_input_nodes)):
            continue
        results = _int8_results(node)
        if not any(results):
            continue
        emit, made = Emitter(graph, node), []

        def widen(a):  # int8 operands and a ``dtype=torch.int8`` become int32
            if _is_int8(a):
                made.append(_as_int32(emit, a))
                return made[-1]
            return torch.int32 if a == torch.int8 else a

        args, kwargs = node.args, dict(node.kwargs)
        node.args = torch.fx.node.map_aggregate(args, widen)
        node.kwargs = torch.fx.node.map_aggregate(kwargs, widen)
        try:
            set_val(node, node.target(*node_vals(node.args), **node_vals(dict(node.kwargs))))
        except Exception:  # noqa: BLE001 - the op has no int32 form: leave it int8
            node.args, node.kwargs = args, kwargs
            for conversion in made:
                graph.erase_node(conversion)
            continue
        if len(results) == 1:
            _back_to_int8(graph, node, node)
            continue
        for user in list(node.users):  # a tuple: its int8 parts, each through getitem
            if user.target is operator.getitem and results[user.args[1]]:
                set_val(user, node.meta["val"][user.args[1]])
                _back_to_int8(graph, user, node)


def _is_int8(value) -> bool:
    return (isinstance(value, Node)
            and getattr(value.meta.get("val"), "dtype", None) == torch.int8)


def _int8_results(node: Node) -> list[bool]:
    val = node.meta.get("val")
    vals = val if isinstance(val, (list, tuple)) else [val]
    return [getattr(v, "dtype", None) == torch.int8 for v in vals]


def _as_int32(emit: Emitter, value: Node) -> Node:
    return emit(prims.convert_element_type.default, value, torch.int32)


def _back_to_int8(graph: Graph, node: Node, op: Node) -> None:
    """Every user of ``node`` (an int32 value that torch computed as int8)
    reads it wrapped into int8's range and converted to int8."""
    emit = Emitter(graph, node.next, location=op)
    value = node
    if op.target not in _IN_RANGE:
        value = emit(aten.sub.Tensor,
                     emit(aten.bitwise_and.Scalar, emit(aten.add.Tensor, node, 128), 255), 128)
    narrowed = emit(prims.convert_element_type.default, value, torch.int8)
    node.replace_all_uses_with(narrowed, delete_user_cb=lambda user: not _feeds(user, narrowed))


def _names_narrow_dtype(node: Node) -> bool:
    found = []
    torch.fx.node.map_aggregate((node.args, dict(node.kwargs)),
                                lambda a: found.append(a) if a in _NARROW else a)
    return bool(found)


def _retype(graph: Graph, node: Node, widened: set[Node]) -> None:
    before = _narrow_of(node)
    node.args = torch.fx.node.map_aggregate(node.args, _wide_dtype)
    node.kwargs = torch.fx.node.map_aggregate(dict(node.kwargs), _wide_dtype)
    if node.target in (aten.index.Tensor, aten.index_put.default, aten._unsafe_index_put.default):
        _masks_as_bool(graph, node, widened)
    set_val(node, node.target(*node_vals(node.args), **node_vals(dict(node.kwargs))))
    if not any(before):
        return
    widened.add(node)
    if len(before) == 1:
        node.meta[_RESULT] = str(before[0]).removeprefix("torch.")
    if node.target in _IN_RANGE or len(before) != 1:
        return
    # The wrap reads the op's int32 result; every other user reads the wrap.
    wrapped = _wrap(Emitter(graph, node.next, location=node), node, before[0])
    node.replace_all_uses_with(wrapped, delete_user_cb=lambda user: not _feeds(user, wrapped))
    wrapped.meta[_RESULT] = str(before[0]).removeprefix("torch.")


def _feeds(user: Node, wrapped: Node) -> bool:
    """Whether ``user`` is one of the wrap's own ops (they read the raw result)."""
    todo, seen = [wrapped], set()
    while todo:
        n = todo.pop()
        if n is user:
            return True
        if n in seen:
            continue
        seen.add(n)
        todo.extend(n.all_input_nodes)
    return False


def _wrap(emit: Emitter, node: Node, dtype: torch.dtype) -> Node:
    if dtype == torch.uint8:
        return emit(aten.bitwise_and.Scalar, node, 255)
    shifted = emit(aten.add.Tensor, node, 32768)
    return emit(aten.sub.Tensor, emit(aten.bitwise_and.Scalar, shifted, 65535), 32768)


def _wide_dtype(value):
    return torch.int32 if value in _NARROW else value


def _masks_as_bool(graph: Graph, node: Node, widened: set[Node]) -> None:
    """uint8 index tensors are masks in torch: compared with 0 once widened."""
    indices = node.args[1]
    emit = Emitter(graph, node)
    new = []
    for index in indices:
        if isinstance(index, Node) and index in widened:
            index = emit(aten.ne.Scalar, index, 0)
        new.append(index)
    node.args = (node.args[0], new, *node.args[2:])


def _mark_results(graph: Graph, output: Node) -> None:
    """A narrow result is returned as int32, marked with the caller's dtype."""
    for value in output.all_input_nodes:
        original = value.meta.get(_RESULT) or value.meta.get(HOST_DTYPE)
        if original is not None:
            value.meta[HOST_DTYPE] = original
