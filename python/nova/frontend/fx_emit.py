"""Emitting ATen ops into an FX graph after torch.export's decompositions
(the graph rewrites of :mod:`nova.frontend.complex_pairs` and
:mod:`nova.frontend.masked_lanes`): each new node gets the fake ``val`` and
``tensor_meta`` torch-mlir reads its type from, and the source location of the
node it replaces."""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.fx import Graph, Node

from nova.errors import NovaModelCompileError

aten = torch.ops.aten

#: Node metadata on a placeholder or returned node whose value the caller holds
#: in another dtype (``"complex64"``, ``"uint8"``...): the program's int32 or
#: real-pair form is converted at the boundary (nova.runtime.binding).
HOST_DTYPE = "nova_host_dtype"


class Unsupported(NovaModelCompileError):
    """A rewrite meets an op it has no rule for (the caller names the op)."""


class Emitter:
    """Inserts ops before ``anchor``, each with the fake ``val`` torch-mlir
    reads its type from and the source location of ``location`` (the anchor's
    by default)."""

    def __init__(self, graph: Graph, anchor: Node, location: Node | None = None) -> None:
        self.graph, self.anchor = graph, anchor
        self.location = location if location is not None else anchor

    def __call__(self, target: Callable, *args: Any, **kwargs: Any) -> Node:
        with self.graph.inserting_before(self.anchor):
            node = self.graph.call_function(target, args, kwargs)
        copy_location(self.location, node)
        set_val(node, target(*node_vals(args), **node_vals(kwargs)))
        return node

    def decomposed(self, fn: Callable, *args: Node) -> Node:
        """``fn`` of tensors, traced with Nova's decomposition table (atan2 is
        no vector-unit op but a decomposition), emitted op by op."""
        from torch.fx.experimental.proxy_tensor import make_fx

        from nova.frontend.decompositions import decomposition_table

        examples = [torch.empty(tuple(a.meta["val"].shape), dtype=a.meta["val"].dtype)
                    for a in args]
        traced = make_fx(fn, decomposition_table=decomposition_table(),
                         tracing_mode="fake")(*examples)
        env: dict[Node, Any] = {}
        inputs = iter(args)
        for node in traced.graph.nodes:
            if node.op == "placeholder":
                env[node] = next(inputs)
            elif node.op == "call_function":
                env[node] = self(node.target, *torch.fx.node.map_arg(node.args, env.get),
                                 **torch.fx.node.map_arg(dict(node.kwargs), env.get))
            elif node.op == "output":
                return torch.fx.node.map_arg(node.args[0], env.get)
            else:
                raise Unsupported(f" (its decomposition holds a {node.op} node)")
        raise AssertionError("a traced graph ends with its output")

    # Arithmetic on a node or a Python number (None is an exact zero).
    def mul(self, a, b):
        if a is None or b is None:
            return None
        if not isinstance(a, Node) and not isinstance(b, Node):
            return a * b
        if not isinstance(a, Node):
            a, b = b, a
        return a if isinstance(b, (int, float)) and b == 1 else self(aten.mul.Tensor, a, b)

    def add(self, a, b):
        if a is None:
            return b
        if b is None:
            return a
        if not isinstance(a, Node) and not isinstance(b, Node):
            return a + b
        if not isinstance(a, Node):
            a, b = b, a
        return self(aten.add.Tensor, a, b)

    def neg(self, a):
        if a is None:
            return None
        return -a if not isinstance(a, Node) else self(aten.neg.default, a)

    def sub(self, a, b):
        return self.add(a, self.neg(b))


def node_vals(args: Any) -> Any:
    """``args`` with each node replaced by its fake value, made contiguous: the
    parts are values (torch-mlir ignores strides), and a view of a part picked
    out of an interleaved pair must not fail on its strides."""
    def val(a):
        if isinstance(a, Node):
            v = a.meta["val"]
            return v.contiguous() if isinstance(v, torch.Tensor) else v
        return a
    return torch.fx.node.map_aggregate(args, val)


def set_val(node: Node, val: Any) -> None:
    from torch.fx.passes.shape_prop import _extract_tensor_metadata

    node.meta["val"] = val
    if isinstance(val, torch.Tensor):
        node.meta["tensor_meta"] = _extract_tensor_metadata(val)


def copy_location(source: Node, node: Node) -> None:
    for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
        if key in source.meta:
            node.meta[key] = source.meta[key]


