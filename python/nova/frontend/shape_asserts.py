"""Scalars read from tensors (``t.item()``) and the runtime asserts on them
(``torch._check``, ``torch._check_is_size``, ``torch.sym_constrain_range``,
``torch._assert_async``), rewritten on the exported graph before torch-mlir.

torch.export traces ``k = t.item()`` as ``_local_scalar_dense(t)``, an unbacked
symbol, and each assert on it as ``_assert_scalar`` of a Python comparison
(``u0 >= 0``, ``u0 < 100``) with the message "Runtime assertion failed for
expression u0 < 100 on node 'lt'"; ``torch._assert_async(cond, msg)`` as
``_assert_async.msg`` of a one-element tensor. torch-mlir lowers the scalar to
a ``tensor.extract`` that elementwise ops read from outside their body, which
Nova does not take, and it drops runtime asserts. Here:

- an elementwise op reading ``k`` reads the 0-d tensor ``t`` instead (a 0-d
  tensor promotes as a Python scalar does), converted to ``k``'s kind;
- an assert on ``k`` (comparisons, ``and``/``or``/``not`` of them, arithmetic
  with constants) becomes the same test on ``t`` as a 0-d bool tensor; its
  conversion to int64 (:func:`_check`) is marked with the assert's message and,
  after torch-mlir, :func:`insert_asserts` puts a ``cf.assert`` of the bool into
  the body of that conversion's ``linalg.generic``. Nova lowers it as it lowers
  torch-mlir's own bounds checks (``nova.assert`` → ``vassert``, the message
  in the binary's DEBUG text after the source line), so a failed assert raises
  ``AssertionFailedError`` (a ``NovaRuntimeError``) naming the user's line and
  the message. The check is tied into the program's first result (times
  ``max(check, 1)``, which is 1 whatever the check holds), so nothing removes it as
  dead;
- asserts that hold for every value fold away (a constant true condition, and
  the ones torch.export adds on sizes it knows: ``u0 >= 0`` of
  ``_check_is_size`` on a non-negative count); a constant false one is an error
  at compile time, at the model's line; anything else that reads ``k`` (a
  shape, a slice bound) keeps its data-dependent shape and is refused at the
  model's line as before.
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
#: ``tensor op constant`` as one op with a Scalar operand.
_WITH_SCALAR = {aten.ge.Tensor: aten.ge.Scalar, aten.gt.Tensor: aten.gt.Scalar,
                aten.le.Tensor: aten.le.Scalar, aten.lt.Tensor: aten.lt.Scalar,
                aten.eq.Tensor: aten.eq.Scalar, aten.ne.Tensor: aten.ne.Scalar,
                aten.add.Tensor: aten.add.Scalar, aten.sub.Tensor: aten.sub.Scalar,
                aten.mul.Tensor: aten.mul.Scalar}
#: ``constant op tensor`` as ``tensor op' constant``.
_SWAPPED = {aten.ge.Tensor: aten.le.Scalar, aten.gt.Tensor: aten.lt.Scalar,
            aten.le.Tensor: aten.ge.Scalar, aten.lt.Tensor: aten.gt.Scalar,
            aten.eq.Tensor: aten.eq.Scalar, aten.ne.Tensor: aten.ne.Scalar,
            aten.add.Tensor: aten.add.Scalar, aten.mul.Tensor: aten.mul.Scalar}
_ARITH = {operator.add: aten.add.Tensor, operator.sub: aten.sub.Tensor,
          operator.mul: aten.mul.Tensor, operator.floordiv: aten.floor_divide.default,
          operator.and_: aten.logical_and.default, operator.or_: aten.logical_or.default}


def _is_pointwise(node: Node) -> bool:
    return torch.Tag.pointwise in getattr(node.target, "tags", ())


#: ``node.meta`` key of the int64 conversion that carries an assert's message.
ASSERT_MESSAGE = "nova_assert_message"
#: Name location given to that conversion in torch-mlir's IR: the prefix and the
#: assert's index among the program's asserts (:func:`assert_messages`).
ASSERT_LOCATION_PREFIX = "nova.assert#"

_ASYNC = {aten._assert_async.msg, aten._assert_async.default,
          aten._functional_assert_async.msg}


#: The message of ``torch._assert_async(cond)`` given none.
BARE_ASYNC_MESSAGE = "torch._assert_async failed"


def name_bare_asserts(graph_module: torch.fx.GraphModule) -> None:
    """``_assert_async(cond)`` as ``_assert_async.msg(cond, ...)``: torch's
    ``run_decompositions`` drops the message-less overload as dead code (it
    keeps only the ``msg`` one), which would lose the check silently."""
    changed = False
    for node in graph_module.graph.nodes:
        if node.op == "call_function" and node.target is aten._assert_async.default:
            node.target = aten._assert_async.msg
            node.args = (node.args[0], BARE_ASYNC_MESSAGE)
            changed = True
    if changed:
        graph_module.recompile()


def lower_item_scalars(graph: Graph) -> None:
    """Rewrites ``graph`` in place (see the module docstring)."""
    items = [n for n in graph.nodes if n.op == "call_function"
             and n.target is aten._local_scalar_dense.default]
    asserts = [n for n in graph.nodes if n.op == "call_function"
               and (n.target in _ASYNC or n.target is aten._assert_scalar.default)]
    if not items and not asserts:
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
            message = _message(node)
            if isinstance(node.args[0], bool):
                _fold(node, node.args[0], message)
                continue
            condition = _as_tensor(emit, node.args[0], tensors)
            if condition is not None:
                checks.append(_check(emit, condition, message))
                _erase_assert(graph, node)
        elif node.target in _ASYNC:
            condition = emit(aten.reshape.default, node.args[0], [])
            checks.append(_check(emit, condition, _message(node)))
            _erase_assert(graph, node)
        elif node.target in _CONSTRAINTS and node.args[0] in tensors:
            value = tensors[node.args[0]]
            low = node.kwargs.get("min", node.args[1] if len(node.args) > 1 else None)
            high = node.kwargs.get("max", node.args[2] if len(node.args) > 2 else None)
            if node.target is aten.sym_constrain_range_for_size.default and low is None:
                low = 0
            for bound, compare, sign in ((low, aten.ge.Scalar, ">="), (high, aten.le.Scalar, "<=")):
                if bound is not None:
                    checks.append(_check(emit, emit(compare, value, bound),
                                         f"value out of range: expected {sign} {bound}"))
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


def _message(node: Node) -> str:
    """An assert node's message (torch.export writes the expression it checks
    into ``_assert_scalar``'s; ``torch._assert_async`` without one gets a
    generic one)."""
    for arg in node.args[1:2]:
        if isinstance(arg, str) and arg:
            return arg
    return BARE_ASYNC_MESSAGE


def _fold(node: Node, holds: bool, message: str) -> None:
    """An assert whose condition torch.export already decided."""
    if not holds:
        from nova.compiler.errors import NovaUnsupportedOpError
        from nova.frontend.export import frame_of_node

        raise NovaUnsupportedOpError(f"an assert that always fails ({message})",
                                     frame_of_node(node))
    node.graph.erase_node(node)


def _erase_assert(graph: Graph, node: Node) -> None:
    """Removes an assert node; the functional form's token result (training
    traces thread it to the next assert) is replaced by its input token."""
    if node.target is aten._functional_assert_async.msg:
        node.replace_all_uses_with(node.args[2])
    graph.erase_node(node)


def assert_messages(graph: Graph) -> dict[Node, int]:
    """Each marked conversion of ``graph`` (:func:`_check`) and its index,
    in graph order; the index names it in :data:`ASSERT_LOCATION_PREFIX`."""
    marked = [n for n in graph.nodes if ASSERT_MESSAGE in n.meta]
    return {n: i for i, n in enumerate(marked)}


def insert_asserts(module: Any, marked: dict[Node, int], locations: dict[int, Any]) -> None:
    """Puts a ``cf.assert`` of the bool into each marked conversion's
    ``linalg.generic`` in torch-mlir's linalg IR ``module`` (the conversion's
    location is a name location ``nova.assert#<index>``), at the assert's own
    location from ``locations`` (index -> location; one without a file is
    named "runtime assert" so that the binary's DEBUG entry still carries the
    message). A marked conversion
    torch-mlir folded away (a condition computed from constants only) is an
    error: whether it held is no longer known."""
    import re

    from torch_mlir import ir
    from torch_mlir.dialects import cf

    messages = {i: n.meta[ASSERT_MESSAGE] for n, i in marked.items()}
    pattern = re.compile(r'"' + re.escape(ASSERT_LOCATION_PREFIX) + r'(\d+)"')
    generics: list[tuple[Any, int]] = []

    def visit(op):
        if op.name == "linalg.generic":
            # Two asserts of the same condition are one generic after
            # torch-mlir's CSE, its location a fusion of both names.
            for found in pattern.finditer(str(op.location)):
                generics.append((op, int(found.group(1))))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    placed: set[int] = set()
    for op, index in generics:
        block = op.regions[0].blocks[0]
        condition = block.arguments[0]
        if not isinstance(condition.type, ir.IntegerType) or condition.type.width != 1:
            continue
        terminator = list(block.operations)[-1]
        location = locations.get(index, op.location)
        if str(location) == "loc(unknown)":
            location = ir.Location.name("runtime assert", context=location.context)
        cf.AssertOp(condition, messages[index], loc=location, ip=ir.InsertionPoint(terminator))
        placed.add(index)
    missing = sorted(set(messages) - placed)
    if missing:
        from nova.compiler.errors import NovaUnsupportedOpError
        from nova.frontend.export import frame_of_node

        node = next(n for n, i in marked.items() if i == missing[0])
        raise NovaUnsupportedOpError(
            f"an assert on values known at compile time ({messages[missing[0]]}): torch-mlir "
            f"folded it away", frame_of_node(node))


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
    if ta is not None and tb is None and op in _WITH_SCALAR and isinstance(b, (int, float)) \
            and not isinstance(b, bool):
        result = emit(_WITH_SCALAR[op], ta, b)  # torch-mlir lowers no scalar_tensor here
        tensors[value] = result
        return result
    if ta is None and tb is not None and op in _SWAPPED and isinstance(a, (int, float)) \
            and not isinstance(a, bool):
        result = emit(_SWAPPED[op], tb, a)
        tensors[value] = result
        return result
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


def _check(emit: Emitter, condition: Node, message: str) -> Node:
    """``condition`` (a 0-d tensor) as a 0-d int64 tensor (1 if it holds, 0 if
    not), marked with the assert's ``message``: :func:`insert_asserts` asserts
    it in the conversion's linalg body."""
    if condition.meta["val"].dtype != torch.bool:
        condition = emit(aten.ne.Scalar, condition, 0)
    check = emit(aten._to_copy.default, condition, dtype=torch.int64)
    check.meta[ASSERT_MESSAGE] = message
    return check


def _keep_alive(graph: Graph, checks: list[Node]) -> None:
    """The program's first tensor result, times 1 computed from each check."""
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
        one = emit(aten.clamp_min.default, check, 1)  # 1 whether the check holds or not
        if val.dtype == torch.bool:
            tied = emit(aten.logical_and.default, tied, emit(aten.ne.Scalar, one, 0))
        else:
            tied = emit(aten.mul.Tensor, tied, emit(aten._to_copy.default, one, dtype=val.dtype))
    results[position] = tied
    output.args = (type(output.args[0])(results),) if isinstance(output.args[0], (list, tuple)) \
        else (tied,)
