"""Boolean-mask reads whose size is known: ``x[mask]`` next to a tensor of
static size (``x[mask] += v`` with ``v`` of 17 elements) makes torch.export
assert that the mask's count is 17, and the read's shape is static. torch-mlir
would lower the read through ``nonzero`` (a ``tm_tensor`` scan, or no end to
its pipeline); here it becomes the integer gather of the mask's first 17 set
positions, with a runtime assert on the count
(:func:`nova.frontend.decompose_indexing.mixed_index`). Reads of a size known
only at run time are :mod:`nova.frontend.masked_lanes`'."""

from __future__ import annotations

import operator

import torch
from torch.fx import Graph, Node
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

from nova.frontend.fx_emit import Emitter

aten = torch.ops.aten

#: Python operators on sizes that fold once the size is a constant.
_FOLDABLE = {operator.ge, operator.gt, operator.le, operator.lt, operator.eq, operator.ne,
             operator.add, operator.sub, operator.mul, operator.floordiv, operator.and_,
             operator.or_}


def _static_mask_read(node: Node) -> bool:
    if node.op != "call_function" or node.target is not aten.index.Tensor:
        return False
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or free_unbacked_symbols(val.shape):
        return False
    return any(isinstance(i, Node) and isinstance(i.meta.get("val"), torch.Tensor)
               and i.meta["val"].dtype in (torch.bool, torch.uint8) for i in node.args[1])


def gather_static_mask_reads(graph: Graph) -> None:
    """Rewrites ``graph`` in place (see the module docstring)."""
    from nova.frontend.decompose_indexing import count_message, mixed_index, read_length

    for node in [n for n in graph.nodes if _static_mask_read(n)]:
        source, indices = node.args[0], list(node.args[1])
        shape = [int(s) for s in node.meta["val"].shape]
        present = [i for i in indices if i is not None]
        vals = [None if i is None else i.meta["val"] for i in indices]
        length = read_length(source.meta["val"].dim(), source.meta["val"].shape, vals, shape)
        masks = [i for i, v in zip(indices, vals) if v is not None and v.dtype != torch.int64
                 and v.dtype != torch.int32]
        # The write of the same mask (x[mask] += v) asserts its count already;
        # a second identical assert would be merged into it by torch-mlir.
        check = not all(_asserted(graph, m, count_message(length)) for m in masks)

        def read(src, *tensors, _indices=indices, _shape=shape, _check=check):
            given = iter(tensors)
            return mixed_index(src, [None if i is None else next(given) for i in _indices],
                               _shape, _check)

        new = Emitter(graph, node).decomposed(read, source, *present)
        for user in list(node.users):
            if user.op == "call_function" and user.target is aten.sym_size.int:
                _replace_with_constant(graph, user, shape[user.args[1]])
        node.replace_all_uses_with(new)
        graph.erase_node(node)


def _replace_with_constant(graph: Graph, node: Node, value) -> None:
    """``node`` (a size, or arithmetic on sizes) replaced by its value, and the
    comparisons on it folded, so the asserts torch.export put on the size
    become constant ones (which nova.frontend.shape_asserts folds)."""
    users = list(node.users)
    node.replace_all_uses_with(value)
    graph.erase_node(node)
    for user in users:
        if user.op == "call_function" and user.target in _FOLDABLE and not any(
                isinstance(a, Node) for a in user.args):
            _replace_with_constant(graph, user, user.target(*user.args))


def _asserted(graph: Graph, mask: Node, message: str) -> bool:
    """Whether an ``_assert_async`` with ``message`` checks a count of ``mask``."""
    for node in graph.nodes:
        if node.op != "call_function" or node.target not in (
                aten._assert_async.msg, aten._functional_assert_async.msg):
            continue
        if node.args[1] != message:
            continue
        seen, stack = set(), [node.args[0]]
        while stack:
            current = stack.pop()
            if current is mask:
                return True
            if isinstance(current, Node) and current not in seen and len(seen) < 64:
                seen.add(current)
                stack.extend(current.all_input_nodes)
    return False
