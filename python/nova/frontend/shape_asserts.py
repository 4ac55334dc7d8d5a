"""Scalars read from tensors (``t.item()``) and the symbolic-shape asserts on
them (``torch._check``, ``torch._check_is_size``, ``torch.sym_constrain_range``),
rewritten on the exported graph before torch-mlir.

torch.export traces ``k = t.item()`` as ``_local_scalar_dense(t)``, an unbacked
symbol, and each assert on it as ``_assert_scalar`` of a Python comparison
(``u0 >= 0``, ``u0 < 100``). torch-mlir lowers the scalar to a
``tensor.extract`` that elementwise ops read from outside their body, which
Nova does not take, and it drops runtime asserts. Here:

- an elementwise op reading ``k`` reads the 0-d tensor ``t`` instead (a 0-d
  tensor promotes as a Python scalar does), converted to ``k``'s kind;
- an assert on ``k`` (comparisons, ``and``/``or``/``not`` of them, arithmetic
  with constants) becomes the same test on ``t`` as a 0-d bool tensor, and a
  check that faults at run time when it is false, at the assert's line: a
  bounds-checked read of ``arange(2)`` at position ``0`` if the test holds,
  ``2`` if not (Nova's indexed loads check their positions,
  ``nova.assert``; the fault reads "index out of range" at the assert's source
  line). The check is tied into the program's first result (times 1), so
  nothing removes it as dead;
- asserts that hold for every value are folded away: the ones torch.export adds
  on sizes it knows (``u0 >= 0`` of ``_check_is_size`` on a non-negative
  count); anything else that reads ``k`` (a shape, a slice bound) keeps its
  data-dependent shape and is refused at the model's line as before.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.fx import Graph, Node

from nova.frontend.fx_emit import Emitter

aten = torch.ops.aten

_CONSTRAINTS = {aten.sym_constrain_range.default, aten.sym_constrain_range_for_size.default}

#: Python operators on symbols, as aten ops on 0-d tensors (``a op b``).
_COMPARE = {operator.ge: aten.ge.Tensor, operator.gt: aten.gt.Tensor,
            operator.le: aten.le.Tensor, operator.lt: aten.lt.Tensor,
            operator.eq: aten.eq.Tensor, operator.ne: aten.ne.Tensor}
_ARITH = {operator.add: aten.add.Tensor, operator.sub: aten.sub.Tensor,
          operator.mul: aten.mul.Tensor, operator.floordiv: aten.floor_divide.default,
          operator.and_: aten.logical_and.default, operator.or_: aten.logical_or.default}


def _is_pointwise(node: Node) -> bool:
    return torch.Tag.pointwise in getattr(node.target, "tags", ())


def lower_item_scalars(graph: Graph) -> None:
    """Rewrites ``graph`` in place (see the module docstring)."""
    items = [n for n in graph.nodes if n.op == "call_function"
             and n.target is aten._local_scalar_dense.default]
    if not items:
        return
    checks: list[Node] = []
    tensors: dict[Node, Node] = {}  # symbolic node -> its 0-d tensor form
    for item in items:
        tensors[item] = item.args[0]
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        emit = Emitter(graph, node)
        if node.target is aten._assert_scalar.default:
            condition = _as_tensor(emit, node.args[0], tensors)
            if condition is not None:
                checks.append(_check(emit, condition))
                graph.erase_node(node)
        elif node.target in _CONSTRAINTS and node.args[0] in tensors:
            value = tensors[node.args[0]]
            low = node.kwargs.get("min", node.args[1] if len(node.args) > 1 else None)
            high = node.kwargs.get("max", node.args[2] if len(node.args) > 2 else None)
            if node.target is aten.sym_constrain_range_for_size.default and low is None:
                low = 0
            for bound, compare in ((low, aten.ge.Scalar), (high, aten.le.Scalar)):
                if bound is not None:
                    checks.append(_check(emit, emit(compare, value, bound)))
            graph.erase_node(node)
        elif _is_pointwise(node) and any(a in tensors for a in node.all_input_nodes):
            node.args = torch.fx.node.map_arg(node.args, lambda a: tensors.get(a, a))
            node.kwargs = torch.fx.node.map_arg(dict(node.kwargs), lambda a: tensors.get(a, a))
    if checks:
        _keep_alive(graph, checks)
    for node in reversed(list(graph.nodes)):
        if node.op == "call_function" and not node.users and (
                node in tensors or node.target is aten._local_scalar_dense.default
                or not isinstance(node.target, torch._ops.OpOverload)):
            graph.erase_node(node)
    graph.lint()


def _as_tensor(emit: Emitter, value: Any, tensors: dict[Node, Node]) -> Node | None:
    """The symbolic expression ``value`` over item() scalars as a 0-d tensor,
    or None when it reads no item() scalar (left as torch exported it)."""
    if not isinstance(value, Node):
        return None
    if value in tensors:
        return tensors[value]
    if value.op != "call_function":
        return None
    if value.target is operator.not_ or value.target is torch.sym_not:
        inner = _as_tensor(emit, value.args[0], tensors)
        return None if inner is None else emit(aten.logical_not.default, inner)
    op = _COMPARE.get(value.target) or _ARITH.get(value.target)
    if op is None or len(value.args) != 2:
        return None
    a, b = value.args
    ta, tb = _as_tensor(emit, a, tensors), _as_tensor(emit, b, tensors)
    if ta is None and tb is None:
        return None
    ta = ta if ta is not None else _constant(emit, a)
    tb = tb if tb is not None else _constant(emit, b)
    if ta is None or tb is None:
        return None
    result = emit(op, ta, tb)
    tensors[value] = result
    return result


def _constant(emit: Emitter, value: Any) -> Node | None:
    if isinstance(value, bool):
        return emit(aten.scalar_tensor.default, value, dtype=torch.bool)
    if isinstance(value, int):
        return emit(aten.scalar_tensor.default, value, dtype=torch.int64)
    if isinstance(value, float):
        return emit(aten.scalar_tensor.default, value, dtype=torch.float32)
    return None


def _check(emit: Emitter, condition: Node) -> Node:
    """A 0-d int64 tensor holding 1 that faults at run time when
    ``condition`` (a 0-d bool tensor) is false: ``arange(2)`` read at position 0
    if it holds, 2 (out of range) if not, plus 1."""
    if condition.meta["val"].dtype != torch.bool:
        condition = emit(aten.ne.Scalar, condition, 0)
    failed = emit(aten._to_copy.default, emit(aten.logical_not.default, condition),
                  dtype=torch.int64)
    position = emit(aten.reshape.default, emit(aten.mul.Tensor, failed, 2), [1])
    # Two distinct elements: a read of a splat, or along a dim of size 1, folds away.
    zero = emit(aten.arange.start_step, 0, 2, 1, dtype=torch.int64)
    read = emit(aten.index_select.default, zero, 0, position)
    return emit(aten.add.Tensor, emit(aten.reshape.default, read, []), 1)


def _keep_alive(graph: Graph, checks: list[Node]) -> None:
    """The program's first tensor result, times each check's 1."""
    output = graph.output_node()
    results = list(output.args[0]) if isinstance(output.args[0], (list, tuple)) \
        else [output.args[0]]
    for position, result in enumerate(results):
        val = result.meta.get("val") if isinstance(result, Node) else None
        if isinstance(val, torch.Tensor) and val.numel() > 0:
            break
    else:
        from nova.compiler.errors import NovaUnsupportedOpError
        from nova.frontend.export import frame_of_node

        raise NovaUnsupportedOpError("a runtime assert (torch._check) in a program without "
                                     "tensor results", frame_of_node(checks[0]))
    emit = Emitter(graph, output, location=checks[0])
    tied = result
    for check in checks:
        if val.dtype == torch.bool:
            tied = emit(aten.logical_and.default, tied, emit(aten.ne.Scalar, check, 0))
        else:
            tied = emit(aten.mul.Tensor, tied, emit(aten._to_copy.default, check, dtype=val.dtype))
    results[position] = tied
    output.args = (type(output.args[0])(results),) if isinstance(output.args[0], (list, tuple)) \
        else (tied,)
