"""The FX graph Dynamo hands over, in the form Nova compiles: every tensor
the graph reads is a placeholder, so a compiled program holds no state of its
own and the model's current parameters are bound at every call.

Dynamo (torch 2.13 always inlines ``nn.Module``s) lifts parameters and
buffers as placeholders (``L_self_modules_fc1_parameters_weight_``, with the
source ``L['self']._modules['fc1']._parameters['weight']``); a graph built
another way may read them as ``get_attr`` nodes instead, and those become
trailing placeholders here (:func:`lift_attributes`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
import torch.utils._pytree as pytree
import torch.fx

_SEGMENT = re.compile(r"\._(?:modules|parameters|buffers)\['([^']+)'\]|\.([A-Za-z_]\w*)")
_ROOT = re.compile(r"^[LG]\['[^']+'\]")


@dataclass(frozen=True)
class Placeholder:
    """One argument of the graph: its FX name, whether it is model state
    (a parameter or buffer), and the name a plan knows it by
    (``fc1.weight`` for state, the ``forward`` argument's name for an input)."""

    node_name: str
    is_state: bool
    name: str


def lift_attributes(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, list[str]]:
    """A copy of ``gm`` whose ``get_attr`` tensors are placeholders after the
    graph's own, and their attribute paths (the values to pass for them)."""
    targets = [node.target for node in gm.graph.nodes
               if node.op == "get_attr" and isinstance(_attribute(gm, node.target), torch.Tensor)]
    if not targets:
        return gm, []
    lifted = torch.fx.GraphModule(gm, copy_graph(gm.graph))
    graph = lifted.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    anchor = placeholders[-1] if placeholders else None
    paths = []
    for node in [n for n in graph.nodes if n.op == "get_attr" and n.target in targets]:
        if anchor is None:
            with graph.inserting_before(next(iter(graph.nodes))):
                placeholder = graph.placeholder(_safe_name(node.target))
        else:
            with graph.inserting_after(anchor):
                placeholder = graph.placeholder(_safe_name(node.target))
        placeholder.meta = dict(node.meta)
        node.replace_all_uses_with(placeholder)
        graph.erase_node(node)
        anchor = placeholder
        paths.append(node.target)
    lifted.meta = dict(getattr(gm, "meta", {}))
    lifted.recompile()
    return lifted, paths


def attribute_values(gm: torch.fx.GraphModule, paths: Sequence[str]) -> list[Any]:
    """The current values of the lifted attributes (read at every call)."""
    return [_attribute(gm, path) for path in paths]


def placeholders(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                 lifted: Sequence[str] = ()) -> list[Placeholder]:
    """Every placeholder of ``gm`` (lifted attributes last) described for a plan."""
    nodes = [n for n in gm.graph.nodes if n.op == "placeholder"]
    result = []
    for i, node in enumerate(nodes):
        lifted_from = len(nodes) - len(lifted)
        if i >= lifted_from:
            result.append(Placeholder(node.name, True, lifted[i - lifted_from]))
            continue
        source = getattr(node.meta.get("grapharg"), "source", None)
        source_name = source.name if isinstance(getattr(source, "name", None), str) else None
        example = example_inputs[i] if i < len(example_inputs) else None
        is_state = isinstance(example, torch.nn.Parameter) or (
            source_name is not None and "._buffers[" in source_name)
        name = _state_name(source_name) if is_state and source_name else None
        if name is None and source_name is not None and not is_state:
            match = re.fullmatch(r"[LG]\['([^']+)'\]", source_name)
            name = match.group(1) if match else None
        result.append(Placeholder(node.name, is_state, name or node.name))
    return result


def fingerprint(gm: torch.fx.GraphModule) -> str:
    """A digest of the graph's code and of every graph it calls (Dynamo's
    higher-order ops keep their bodies in submodules)."""
    digest = hashlib.sha256(gm.code.encode())
    for name, module in sorted(gm.named_modules()):
        if name and isinstance(module, torch.fx.GraphModule):
            digest.update(name.encode())
            digest.update(module.code.encode())
    return digest.hexdigest()


def call_key(args: Sequence[Any]) -> tuple:
    """What a compiled program is specialised on: each tensor's shape, dtype
    and strides; each Python scalar's value (a SymInt of a dynamic graph
    arrives as an int)."""
    key = []
    for value in args:
        if isinstance(value, torch.Tensor):
            key.append(("tensor", tuple(value.shape), str(value.dtype), tuple(value.stride())))
        else:
            key.append((type(value).__name__, value))
    return tuple(key)


class DeviceHooks:
    """What the ``nova`` PyTorch device (nova.device.graphs) plugs in for graphs whose
    inputs are nova tensors: ``view`` gives the host views a compile traces, ``run``
    runs a program on the chip the inputs are on (results are nova tensors). Eager
    ops of a split graph run on the device tensors themselves."""

    def view(self, args: Sequence[Any]) -> list[Any]:
        raise NotImplementedError

    def run(self, graph: Any, program: Any, args: Sequence[Any],
            call: Callable[..., Any] | None = None,
            recorded: Sequence[Any] | None = None) -> Any:
        """``program`` (or ``call``, which runs it) on ``args``' chip. ``recorded``:
        the graph's traced value of each result (its layout is the one eager gives)."""
        raise NotImplementedError


def recorded_results(nodes: Sequence[Any]) -> list[Any]:
    """The traced values (``meta["val"]``) of the graph's result nodes, in order."""
    return [n.meta.get("val", n.meta.get("example_value")) if isinstance(n, torch.fx.Node) else None
            for n in pytree.tree_leaves(list(nodes))]


_device_hooks: list[DeviceHooks] = []  # the nova device's, once it is registered


def set_device_hooks(hooks: DeviceHooks) -> None:
    _device_hooks[:] = [hooks]


def device_hooks(args: Sequence[Any]) -> DeviceHooks | None:
    """The device's hooks if some input is a nova tensor, else None."""
    if _device_hooks and any(isinstance(a, torch.Tensor) and a.device.type == "nova"
                             for a in args):
        return _device_hooks[0]
    return None


def concrete(args: Sequence[Any]) -> list[Any]:
    """``args`` for torch.export at their concrete shapes: a tensor that
    ``torch._dynamo.mark_dynamic`` marked carries the mark as attributes,
    which torch.export would honour (and Nova compiles static shapes only);
    a fresh view of it carries none. Nova tensors are traced as their host views."""
    device = device_hooks(args)
    if device is not None:
        args = device.view(args)
    return [value.detach() if isinstance(value, torch.Tensor) and any(
        name.startswith("_dynamo_") for name in vars(value)) else value for value in args]


def has_compute(gm: torch.fx.GraphModule) -> bool:
    """Whether the graph calls anything (a graph of placeholders and outputs
    only has nothing to run on the chip)."""
    return any(node.op in ("call_function", "call_method", "call_module")
               for node in gm.graph.nodes)


def _state_name(source_name: str) -> str | None:
    """``L['self']._modules['fc1']._parameters['weight']`` -> ``fc1.weight``."""
    rest = _ROOT.sub("", source_name, count=1)
    if rest == source_name:
        return None
    parts = [a or b for a, b in _SEGMENT.findall(rest)]
    return ".".join(parts) or None


def _attribute(gm: torch.nn.Module, path: str) -> Any:
    value: Any = gm
    for part in path.split("."):
        value = getattr(value, part, None)
    return value


def _safe_name(path: str) -> str:
    return "lifted_" + re.sub(r"\W", "_", path)


def copy_graph(graph: torch.fx.Graph) -> torch.fx.Graph:
    new = torch.fx.Graph()
    output = new.graph_copy(graph, {})
    new.output(output)
    return new
