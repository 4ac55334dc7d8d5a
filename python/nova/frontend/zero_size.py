"""Zero-size tensors: folded away on the exported graph, before torch-mlir.

A tensor without elements is fully known from its shape and dtype, so the
accelerator never has to compute one (and Nova's normal form has no
zero-size tensors; torch-mlir's lowering can even die of a division by zero
on one). :func:`fold_zero_size` walks the exported graph with the shapes of
``node.meta["val"]`` and:

- leaves every node whose results are all empty where it is, as a value the
  host knows (the signature then drops empty inputs and state from the
  program and returns empty results host-side, see
  :mod:`nova.frontend.signature`; :func:`drop_zero_size` erases them);
- folds a node that reads only host-known values but makes a non-empty
  result (``sum`` over an empty dim is zeros, ``var`` NaN, ``mm`` with K=0
  zeros, ``new_full`` of an empty tensor...) by running the op in eager on
  real empty tensors: its result, uniform in practice, becomes an
  ``aten.full`` the accelerator fills;
- rewrites the few ops that mix empty and non-empty operands into a
  non-empty result: ``cat`` drops its empty operands, ``addmm``/``baddbmm``/
  ``addmv``/``addbmm`` with an empty product become ``beta * input``,
  scatters and ``index_put`` with an empty index, and ``slice_scatter`` of an
  empty slice, are their ``self``,
  ``split_with_sizes`` drops its empty pieces;
- refuses anything else that reads an empty tensor into a non-empty result
  with a :class:`~nova.frontend.errors.NovaZeroSizeError` naming the op.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
from torch.fx import Graph, Node
from torch.fx.node import map_aggregate

from nova.frontend.errors import NovaZeroSizeError

aten = torch.ops.aten

#: Ops without a result that only check their operand (dropped with it).
_KNOWN = "nova_zero_size_known"

#: Ops whose result has no defined contents (``x.new_empty(3)`` of an empty x).
_UNINITIALIZED = {aten.new_empty.default, aten.new_empty_strided.default,
                  aten.empty_like.default}

_CHECKS = {aten._assert_tensor_metadata.default, aten._assert_async.msg,
           aten.sym_constrain_range_for_size.default}


def _tensors(val: Any) -> list[torch.Tensor]:
    if isinstance(val, torch.Tensor):
        return [val]
    if isinstance(val, (list, tuple)):
        return [t for v in val for t in _tensors(v)]
    return []


def is_empty(val: Any) -> bool:
    """Whether ``val`` (a node's ``meta["val"]``) is tensors, all without elements."""
    tensors = _tensors(val)
    return bool(tensors) and all(t.numel() == 0 for t in tensors)


def is_empty_node(node: Any) -> bool:
    return isinstance(node, Node) and node.op != "output" and is_empty(node.meta.get("val"))


def _host_value(val: Any) -> Any:
    """Real (non-fake) empty tensors standing for ``val``, strides kept."""
    if isinstance(val, torch.Tensor):
        return torch.empty_strided(tuple(val.shape), tuple(val.stride()), dtype=val.dtype)
    if isinstance(val, (list, tuple)):
        return type(val)(_host_value(v) for v in val)
    return val


def fold_zero_size(graph: Graph) -> bool:
    """Rewrites ``graph`` in place (see the module docstring); whether it has
    zero-size tensors at all."""
    from nova.frontend.export import frame_of_node

    known: dict[Node, Any] = {}  # node -> its host value (empty, or folded from empties)
    # Marked so that drop_zero_size erases them (and the empty placeholders they read).
    for node in list(graph.nodes):
        if node.op in ("output", "get_attr"):
            continue
        val = node.meta.get("val")
        if is_empty(val):
            known[node] = _host_value(val)
            node.meta[_KNOWN] = True
            continue
        if node.op != "call_function":
            continue
        inputs = node.all_input_nodes
        if not any(i in known for i in inputs):
            if _partly_empty(val):
                _rewrite_partly_empty(graph, node, frame_of_node(node))
            continue
        if val is None and node.target in _CHECKS:
            graph.erase_node(node)
        elif all(i in known for i in inputs):
            node.meta[_KNOWN] = True
            known[node] = _fold(graph, node, known, frame_of_node(node))
        elif node.target in _REWRITES:
            _REWRITES[node.target](graph, node)
        else:
            empty = next((i for i in inputs if is_empty_node(i)), None)
            shape = tuple(_tensors(empty.meta["val"])[0].shape) if empty is not None else ()
            raise NovaZeroSizeError(
                f"{node.target} reads", shape,
                frame_of_node(node),
                reason="into a non-empty result, which Nova does not compute for this op")
    return bool(known)


def drop_zero_size(graph: Graph) -> None:
    """Erases the empty nodes left by :func:`fold_zero_size` once the
    signature no longer returns them (and what only they used)."""
    for node in reversed(list(graph.nodes)):
        if node.meta.get(_KNOWN) and not node.users:
            graph.erase_node(node)
    graph.eliminate_dead_code()
    graph.lint()


# Folding ----------------------------------------------------------------------------------
def _fold(graph: Graph, node: Node, known: dict[Node, Any], frame) -> Any:
    """Runs ``node`` in eager on its host-known inputs; a tensor result
    replaces the node by an ``aten.full`` (tuples wait for their getitems)."""
    args, kwargs = map_aggregate((node.args, node.kwargs),
                                 lambda a: known[a] if isinstance(a, Node) else a)
    what = f"{node.target} of"
    shape = tuple(next(t for i in node.all_input_nodes for t in _tensors(i.meta["val"])
                       if t.numel() == 0).shape) if node.target is not operator.getitem else ()
    try:
        with torch.no_grad():
            if node.target in _UNINITIALIZED:  # any contents do: zeros, not garbage
                value = torch.zeros(tuple(node.meta["val"].shape), dtype=node.meta["val"].dtype)
            else:
                value = node.target(*args, **kwargs)
    except Exception as error:  # eager's own refusal (amax over nothing...)
        raise NovaZeroSizeError(what, shape, frame,
                                reason=f"fails in eager too ({error})") from error
    if isinstance(value, torch.Tensor):
        fill = _uniform(value)
        if fill is None:
            raise NovaZeroSizeError(what, shape, frame,
                                    reason="makes a result that is not one value repeated")
        with graph.inserting_before(node):
            full = _full(graph, node.meta["val"], fill)
        node.replace_all_uses_with(full)
        graph.erase_node(node)
    return value


def _uniform(value: torch.Tensor) -> Any:
    """The one value every element of ``value`` holds, or None."""
    flat = value.detach().reshape(-1)
    if flat.numel() == 0:
        return None
    first = flat[0]
    same = (flat == first) | (flat.isnan() & first.isnan()) if flat.is_floating_point() else \
        flat == first
    if not bool(same.all()):
        return None
    fill = first.item()
    return fill if not isinstance(fill, float) or not math.isnan(fill) else float("nan")


def _full(graph: Graph, like: torch.Tensor, fill: Any) -> Node:
    """An ``aten.full`` node of ``like``'s shape and dtype holding ``fill``."""
    node = graph.call_function(aten.full.default, (list(like.shape), fill),
                               {"dtype": like.dtype, "layout": torch.strided,
                                "device": like.device, "pin_memory": False})
    _set_val(node, like)
    return node


def _set_val(node: Node, like: torch.Tensor, dtype: torch.dtype | None = None) -> None:
    from torch.fx.passes.shape_prop import _extract_tensor_metadata

    with like.fake_mode:
        val = torch.empty(tuple(like.shape), dtype=dtype or like.dtype, device=like.device)
    node.meta["val"] = val
    node.meta["tensor_meta"] = _extract_tensor_metadata(val)
    return node


# Mixed operands ---------------------------------------------------------------------------
def _cat(graph: Graph, node: Node) -> None:
    """``cat`` without its empty operands (eager's result dtype kept)."""
    pieces = [p for p in node.args[0] if not is_empty_node(p)]
    dtype = node.meta["val"].dtype
    converted = []
    for piece in pieces:
        if piece.meta["val"].dtype != dtype:
            with graph.inserting_before(node):
                wide = graph.call_function(torch.ops.prims.convert_element_type.default,
                                           (piece, dtype))
            _set_val(wide, piece.meta["val"], dtype)
            piece = wide
        converted.append(piece)
    node.args = (converted, *node.args[1:])


def _beta_input(graph: Graph, node: Node) -> None:
    """``addmm(input, a, b)`` (and kin) whose product has no terms: ``beta * input``
    broadcast to the result (``beta == 0`` ignores ``input``, as eager does)."""
    beta = node.kwargs.get("beta", 1)
    val = node.meta["val"]
    with graph.inserting_before(node):
        zeros = _full(graph, val, 0)
        if beta == 0:
            result = zeros
        else:
            result = graph.call_function(aten.add.Tensor, (zeros, node.args[0]),
                                         {"alpha": beta} if beta != 1 else {})
            _set_val(result, val)
    node.replace_all_uses_with(result)
    graph.erase_node(node)


def _unwritten(graph: Graph, node: Node) -> None:
    """A scatter, ``index_put``, ``index_add``... whose index is empty writes
    nothing: the result is ``self`` (its first operand, not empty here)."""
    with graph.inserting_before(node):
        copy = graph.call_function(aten.clone.default, (node.args[0],))
    _set_val(copy, node.meta["val"])
    node.replace_all_uses_with(copy)
    graph.erase_node(node)


def _zeros(graph: Graph, node: Node) -> None:
    """``searchsorted``/``bucketize`` against no boundaries: every value goes
    before all of them, at position 0."""
    with graph.inserting_before(node):
        zeros = _full(graph, node.meta["val"], 0)
    node.replace_all_uses_with(zeros)
    graph.erase_node(node)


_REWRITES = {
    aten.cat.default: _cat,
    aten.searchsorted.Tensor: _zeros,
    aten.searchsorted.Scalar: _zeros,
    aten.bucketize.Tensor: _zeros,
    aten.addmm.default: _beta_input,
    aten.baddbmm.default: _beta_input,
    aten.addmv.default: _beta_input,
    aten.addbmm.default: _beta_input,
    **{op: _unwritten for op in (
        aten.index_put.default, aten._unsafe_index_put.default, aten.index_add.default,
        aten.index_copy.default, aten.index_fill.int_Scalar, aten.index_fill.int_Tensor,
        aten.scatter.src, aten.scatter.value, aten.scatter_add.default,
        aten.scatter_reduce.two, aten.masked_scatter.default,
        # The backward of a slice that took nothing (Phi-3's rotary "pass" part).
        aten.slice_scatter.default, aten.select_scatter.default)},
}


# Multi-result ops with some empty results -------------------------------------------------
def _partly_empty(val: Any) -> bool:
    tensors = _tensors(val)
    return len(tensors) > 1 and any(t.numel() == 0 for t in tensors)


def _rewrite_partly_empty(graph: Graph, node: Node, frame) -> None:
    """``split_with_sizes`` without its empty pieces (their getitems are empty
    themselves); any other op with some empty results is refused."""
    if node.target not in (aten.split_with_sizes.default, aten.split.Tensor,
                           aten.split.sizes):
        empty = next(t for t in _tensors(node.meta["val"]) if t.numel() == 0)
        raise NovaZeroSizeError(f"{node.target} makes", tuple(empty.shape), frame,
                                reason="among its results, which Nova does not compile")
    val = list(node.meta["val"])
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
    dim = dim % val[0].dim()
    keep = [i for i, t in enumerate(val) if t.numel() != 0]
    node.target = aten.split_with_sizes.default
    node.args = (node.args[0], [int(val[i].shape[dim]) for i in keep], dim)
    node.kwargs = {}
    node.meta["val"] = [val[i] for i in keep]
    for user in list(node.users):
        index = user.args[1]
        if index in keep:
            user.args = (node, keep.index(index))
        else:  # an empty piece: the host knows it; it no longer reads the split
            user.args = (None, index)


# Ops whose lowering makes empty pieces of non-empty tensors ---------------------------------
def zero_size_decompositions() -> dict:
    """Decompositions for ops that torch-mlir lowers through empty
    intermediates: ``roll`` by a multiple of the size slices off nothing."""
    return {aten.roll.default: _roll}


def _roll(x: torch.Tensor, shifts, dims=()) -> torch.Tensor:
    """``torch.roll`` as one ``cat`` of two non-empty slices per rolled dim
    (a whole turn is no change)."""
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if x.numel() == 0:
        return NotImplemented  # empty: known, left as it is
    if not dims:  # rolled flat
        return _roll(x.reshape(-1), shifts, [0]).reshape(x.shape)
    out = x
    for shift, dim in zip(shifts, dims):
        size = x.shape[dim]
        shift = shift % size
        if shift:
            out = torch.cat([out.narrow(dim, size - shift, shift),
                             out.narrow(dim, 0, size - shift)], dim)
    return out.clone() if out is x else out

