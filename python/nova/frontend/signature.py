"""What each argument and result of an exported program means, read from the
ExportedProgram itself (its graph signature, pytree specs and the fake-tensor
``val`` of every node): the model is never run on the host to learn shapes.

The program's arguments are, in order: parameters, buffers (persistent or
not), lifted tensor constants (tensors created in ``forward``), then the
user's tensor inputs. Its results are the user's tensor outputs, then the
new values of the user inputs that ``forward`` updates in place. Tensors without elements
(state, inputs, results) are no arguments or results of the program: the
binding checks and makes them on the host (:mod:`nova.frontend.zero_size`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import (
    ConstantArgument,
    InputKind,
    OutputKind,
    TensorArgument,
)

from nova.frontend.fx_emit import HOST_DTYPE
from nova.frontend.errors import NovaExportError
from nova.frontend.zero_size import is_empty_node
from nova.runtime.binding import CallBinding, Leaf

_STATE = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)


@dataclass(frozen=True)
class TensorSpec:
    """Name, shape and dtype of one function argument or result."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @classmethod
    def of(cls, name: str, t: torch.Tensor) -> "TensorSpec":
        return cls(name, tuple(int(d) for d in t.shape), str(t.dtype).removeprefix("torch."))


@dataclass(frozen=True)
class Signature:
    """The state the program binds (names and values), its tensor inputs and
    results, and the binding that maps a call onto them."""

    params: tuple[TensorSpec, ...]
    param_values: tuple[torch.Tensor, ...]
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    binding: CallBinding


def leaf_paths(spec: Any) -> list[tuple[str | int, ...]]:
    """The key path of every leaf of a pytree spec, read from the spec alone:
    dict keys and ``ModelOutput`` field names (a node's context when it is
    one name per child), else child positions."""
    if spec.is_leaf():
        return [()]
    context = spec.context
    if isinstance(context, dict):
        context = list(context)
    named = (isinstance(context, (list, tuple)) and len(context) == spec.num_children
             and all(isinstance(k, str) for k in context))
    paths = []
    for i, child in enumerate(spec.children()):
        key = context[i] if named else i
        paths += [(key, *rest) for rest in leaf_paths(child)]
    return paths


def leaf_name(path: tuple[str | int, ...], *, outputs: bool) -> str:
    """A readable name for the leaf at pytree key ``path``.

    Inputs: ``input0`` for the first positional argument, ``attention_mask``
    for a keyword one, ``input1.0`` inside a tuple. Outputs: ``output0`` for a
    lone tensor or the first of a tuple, ``logits`` for a ``ModelOutput`` or
    dict entry.
    """
    keys = [str(k) for k in path]
    if not outputs:
        # (args, kwargs): the first key says which.
        head, rest = keys[0], keys[1:]
        if head == "0":
            keys = [f"input{rest[0]}", *rest[1:]]
        else:
            keys = rest
    elif not keys:
        keys = ["output0"]
    elif isinstance(path[0], int):
        keys = [f"output{keys[0]}", *keys[1:]]
    return ".".join(keys)


def read_signature(ep: ExportedProgram) -> Signature:
    """Reads the signature of ``ep`` and rewrites its graph into the form
    torch-mlir imports as a stateless function: every state and user tensor a
    placeholder, baked user constants gone, the results as described above."""
    graph = ep.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    specs = ep.graph_signature.input_specs
    if len(placeholders) != len(specs):
        raise NovaExportError(f"the exported graph has {len(placeholders)} placeholders for "
                              f"{len(specs)} input specs")
    in_spec, out_spec = ep.call_spec.in_spec, ep.call_spec.out_spec
    in_paths = leaf_paths(in_spec)

    params, values, inputs, leaves = [], [], [], []
    user_position = {}  # user input name -> leaf position
    for node, spec in zip(placeholders, specs):
        if spec.kind in _STATE and is_empty_node(node):
            continue  # nothing to bind
        if spec.kind in _STATE:
            value = ep.state_dict.get(spec.target)
            if value is None:
                value = ep.constants.get(spec.target)
            if not isinstance(value, torch.Tensor):
                raise NovaExportError(f"no tensor value for the model's {spec.kind.name.lower()} "
                                      f"{spec.target!r}")
            if value.is_complex():  # as its placeholder now takes it (complex_pairs)
                value = torch.view_as_real(value.detach().resolve_conj()).contiguous()
            if value.dtype in (torch.uint8, torch.int16):  # likewise (narrow_ints)
                value = value.detach().to(torch.int32)
            if value.dtype == torch.float64:
                value = value.detach().to(torch.float32)
                _narrow_placeholder(graph, node)
            params.append(TensorSpec.of(spec.target, value))
            values.append(value.detach())
        elif spec.kind == InputKind.USER_INPUT:
            position = len(leaves)
            name = leaf_name(in_paths[position], outputs=False)
            user_position[spec.arg.name] = position
            if isinstance(spec.arg, TensorArgument) and is_empty_node(node):
                leaves.append(_empty_leaf(name, node))
            elif isinstance(spec.arg, TensorArgument):
                host = node.meta.get(HOST_DTYPE) or _narrow_placeholder(graph, node)
                if host not in (None, "float64"):
                    _narrow_placeholder(graph, node)
                inputs.append(TensorSpec.of(name, node.meta["val"]))
                leaves.append(Leaf("tensor", name, index=len(inputs) - 1, host_dtype=host))
            elif isinstance(spec.arg, ConstantArgument) and _is_scalar(spec.arg.value):
                leaves.append(Leaf("constant", name, value=spec.arg.value))
                _erase_constant_placeholder(graph, node, spec.arg.value)
            else:
                raise NovaExportError(
                    f"input {name} is a {type(spec.arg).__name__} "
                    f"({_value_type(node)}): a Nova program takes tensors, and Python "
                    f"scalars that are baked in at export")
        else:
            raise NovaExportError(f"the exported program takes a {spec.kind.name} input "
                                  f"({spec.target or spec.arg}), which Nova does not bind")
    if len(leaves) != in_spec.num_leaves:
        raise NovaExportError(f"{len(leaves)} user inputs for an input structure with "
                              f"{in_spec.num_leaves} leaves")

    output_node = graph.output_node()
    returned = list(output_node.args[0])
    out_paths = leaf_paths(out_spec)
    user_results, mutated, out_leaves, outputs = [], [], [], []
    for value, spec in zip(returned, ep.graph_signature.output_specs):
        if spec.kind == OutputKind.USER_OUTPUT:
            name = leaf_name(out_paths[len(out_leaves)], outputs=True)
            if isinstance(spec.arg, TensorArgument) and is_empty_node(value):
                out_leaves.append(_empty_leaf(name, value))
            elif isinstance(spec.arg, TensorArgument):
                value, host = _narrowed_result(graph, output_node, value)
                out_leaves.append(Leaf("tensor", name, index=len(user_results),
                                       host_dtype=host))
                user_results.append((name, value))
            elif isinstance(spec.arg, ConstantArgument) and _is_scalar(spec.arg.value):
                out_leaves.append(Leaf("constant", name, value=spec.arg.value))
            else:
                raise NovaExportError(f"output {name} is a {type(spec.arg).__name__}: a Nova "
                                      f"program returns tensors and Python scalars")
        elif spec.kind == OutputKind.USER_INPUT_MUTATION and is_empty_node(value):
            pass  # an empty input's update changes nothing
        elif spec.kind == OutputKind.USER_INPUT_MUTATION:
            position = user_position[spec.target]
            mutated.append((position, value))
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            raise NovaExportError(
                f"the model updates its buffer {spec.target!r} in place; Nova binds buffers "
                f"as constants (put the model in eval() mode, or pass the state as an input)")
        else:
            raise NovaExportError(f"the exported program has a {spec.kind.name} output, "
                                  f"which Nova does not return")
    mutations = []
    results = [value for _, value in user_results]
    for position, value in mutated:
        mutations.append((len(results), position))
        results.append(value)
    output_node.args = (tuple(results),)
    graph.lint()

    for name, node in user_results:
        outputs.append(TensorSpec.of(name, node.meta["val"]))
    for (result, position), (_, node) in zip(mutations, mutated):
        outputs.append(TensorSpec.of(f"{leaves[position].name}.mutated", node.meta["val"]))
    binding = CallBinding(in_spec=in_spec, out_spec=out_spec, inputs=tuple(leaves),
                          outputs=tuple(out_leaves), mutations=tuple(mutations))
    return Signature(params=tuple(params), param_values=tuple(values), inputs=tuple(inputs),
                     outputs=tuple(outputs), binding=binding)


# f64 at the boundary: the program takes and returns f32 (the accelerator
# computes in f32, nova-demote-f64 demotes the body) and the binding converts
# the caller's f64 tensors on the way in and out.
def _narrow_placeholder(graph: torch.fx.Graph, node: torch.fx.Node) -> str | None:
    """An f64 placeholder becomes f32, widened back for its users; the
    caller's dtype (``"float64"``) or None."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or val.dtype != torch.float64:
        return None
    _set_val(node, val, torch.float32)
    with graph.inserting_after(node):
        wide = graph.call_function(torch.ops.prims.convert_element_type.default,
                                   (node, torch.float64))
    _set_val(wide, val, torch.float64)
    node.replace_all_uses_with(wide, delete_user_cb=lambda user: user is not wide)
    return "float64"


def _narrowed_result(graph: torch.fx.Graph, output: torch.fx.Node,
                     value: torch.fx.Node) -> tuple[torch.fx.Node, str | None]:
    """An f64 result, narrowed to f32 before it is returned."""
    val = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
    complex_dtype = value.meta.get(HOST_DTYPE) if isinstance(value, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or val.dtype != torch.float64:
        return value, complex_dtype
    with graph.inserting_before(output):
        narrow = graph.call_function(torch.ops.prims.convert_element_type.default,
                                     (value, torch.float32))
    _set_val(narrow, val, torch.float32)
    return narrow, complex_dtype or "float64"


def _set_val(node: torch.fx.Node, like: torch.Tensor, dtype: torch.dtype) -> None:
    """``node``'s metadata: ``like`` in ``dtype`` (torch-mlir reads both fields)."""
    from torch.fx.passes.shape_prop import _extract_tensor_metadata

    with like.fake_mode:
        val = like.to(dtype)
    node.meta["val"] = val
    node.meta["tensor_meta"] = _extract_tensor_metadata(val)


def _empty_leaf(name: str, node: torch.fx.Node) -> Leaf:
    val = node.meta["val"]
    shape, dtype = tuple(int(d) for d in val.shape), str(val.dtype).removeprefix("torch.")
    host = node.meta.get(HOST_DTYPE)
    if host is not None:  # the caller's dtype; a complex value without its pair axis
        shape, dtype = (shape[:-1] if host.startswith("complex") else shape), host
    return Leaf("empty", name, shape=shape, dtype=dtype)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, str)) or value is None


def _value_type(node: torch.fx.Node) -> str:
    value = node.meta.get("val")
    return type(value).__name__ if value is not None else "no value"


def _erase_constant_placeholder(graph: torch.fx.Graph, node: torch.fx.Node, value: Any) -> None:
    """A Python scalar input is specialised by torch.export; drop its
    placeholder (replacing any remaining use by the value)."""
    for user in list(node.users):
        user.replace_input_with(node, value)
    graph.erase_node(node)
