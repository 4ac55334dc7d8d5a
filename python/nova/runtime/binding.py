"""How a call's Python arguments become the binary's input tensors, and the
binary's results the model's own output structure.

``torch.export`` records both sides as torch pytree specs: the inputs as the
spec of ``(args, kwargs)``, the outputs as the spec of what ``forward``
returns (a tensor, a tuple, a dict, a Hugging Face ``ModelOutput``...). A
:class:`CallBinding` keeps those specs and says, for every leaf, whether it is
a tensor that goes through the accelerator or a Python value that was fixed
when the model was exported. ``None`` is no leaf at all in torch's pytree: it
passes through as part of the structure.

Works on torch's pytree alone (no compiler, no torch graph).
"""

from __future__ import annotations

import importlib
import json
import sys
from dataclasses import dataclass
from typing import Any, Sequence

from nova.runtime.errors import NovaRuntimeError

#: Python values that may be baked into a program as input or output leaves.
_SCALARS = (bool, int, float, str, type(None))


class ProgramInputError(NovaRuntimeError, ValueError):
    """A call passed the wrong number, structure, shape or dtype of inputs."""


@dataclass(frozen=True)
class Leaf:
    """One leaf of the flattened inputs or outputs.

    A ``tensor`` leaf's ``index`` is its position among the binary's (non
    parameter) inputs or among its results; a ``constant`` leaf holds the
    Python ``value`` that was fixed at export. An ``empty`` leaf is a tensor
    without elements (of ``shape`` and ``dtype``): it is no input or result
    of the binary, the host checks it on the way in and makes it on the way
    out (:mod:`nova.frontend.zero_size`).
    """

    kind: str
    name: str
    index: int = -1
    value: Any = None
    #: The caller's dtype where the binary holds another: ``"float64"`` for an
    #: f64 tensor the program takes or returns as f32.
    host_dtype: str | None = None
    #: An ``empty`` leaf's shape (with a 0) and dtype name (``"float32"``).
    shape: tuple[int, ...] | None = None
    dtype: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("tensor", "constant", "empty"):
            raise ValueError(f"a leaf is a tensor, a constant or empty, not {self.kind!r}")
        if self.kind == "empty":
            if self.shape is None or 0 not in self.shape or not self.dtype:
                raise ValueError(f"{self.name}: an empty leaf needs a shape with a 0 and a "
                                 f"dtype, got {self.shape} {self.dtype}")
            object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        if self.kind == "constant" and not isinstance(self.value, _SCALARS):
            raise ValueError(f"{self.name}: a baked leaf must be a Python scalar, "
                             f"got {type(self.value).__name__}")


@dataclass(frozen=True)
class CallBinding:
    """The call signature of a compiled program.

    ``inputs`` has one leaf per leaf of ``in_spec`` (the spec of ``(args,
    kwargs)``), ``outputs`` one per leaf of ``out_spec``. ``mutations`` pairs
    a result index with the input leaf that the model updates in place
    (``x.copy_(...)``, ``x[0] = ...``): the result is written back into the
    caller's tensor after the run, as torch eager would have left it.
    """

    in_spec: Any
    out_spec: Any
    inputs: tuple[Leaf, ...]
    outputs: tuple[Leaf, ...]
    mutations: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.in_spec.num_leaves != len(self.inputs):
            raise ValueError(f"{len(self.inputs)} input leaves for a spec with "
                             f"{self.in_spec.num_leaves}")
        if self.out_spec.num_leaves != len(self.outputs):
            raise ValueError(f"{len(self.outputs)} output leaves for a spec with "
                             f"{self.out_spec.num_leaves}")

    @property
    def tensor_inputs(self) -> tuple[Leaf, ...]:
        return tuple(leaf for leaf in self.inputs if leaf.kind == "tensor")

    # Inputs ------------------------------------------------------------------------------
    def flatten(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
        """Every leaf of ``(args, kwargs)``, checked against the exported
        structure and the baked constants."""
        from torch.utils import _pytree as pytree

        kwargs = self._ordered_kwargs(kwargs)
        leaves, spec = pytree.tree_flatten((tuple(args), kwargs))
        if spec != self.in_spec:
            described = _describe(self.in_spec), _describe(spec)
            detail = _first_difference(self.in_spec, spec, args) if described[0] == described[1] \
                else ""
            raise ProgramInputError(
                f"the program takes {described[0]}, got {described[1]}{detail}")
        for leaf, value in zip(self.inputs, leaves):
            if leaf.kind == "constant" and not _same_constant(leaf.value, value):
                raise ProgramInputError(
                    f"{leaf.name} was {leaf.value!r} when the model was exported and is "
                    f"baked into the program; got {value!r} (compile again for another value)")
            if leaf.kind == "empty":
                _check_empty(leaf, value)
        return leaves

    def tensors_of(self, leaves: Sequence[Any]) -> list[Any]:
        """The leaves that go to the binary, in the order of its inputs."""
        return [_to_binary(leaf, value) for leaf, value in zip(self.inputs, leaves)
                if leaf.kind == "tensor"]

    def _ordered_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        # torch.export keeps keyword arguments in the order they were given at
        # export; a call may give them in any order.
        expected = self.in_spec.child(1).context if self.in_spec.num_children == 2 else None
        if expected is not None and set(expected) == set(kwargs):
            return {name: kwargs[name] for name in expected}
        return dict(kwargs)

    # Outputs -----------------------------------------------------------------------------
    def restore(self, results: Sequence[Any], leaves: Sequence[Any] = ()) -> Any:
        """The model's own output structure from the binary's ``results``;
        writes in-place updates back into the caller's input ``leaves``."""
        from torch.utils import _pytree as pytree

        for result, position in self.mutations:
            _write_back(leaves[position] if position < len(leaves) else None,
                        results[result], self.inputs[position].name)
        values = [_to_host(leaf, results[leaf.index]) if leaf.kind == "tensor" else
                  _empty(leaf) if leaf.kind == "empty" else leaf.value
                  for leaf in self.outputs]
        return pytree.tree_unflatten(values, self.out_spec)

    # Saving ------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """A JSON-able description; raises NovaRuntimeError when a structure
        has no serialised pytree name."""
        from torch.utils import _pytree as pytree

        try:
            specs = {"in_spec": pytree.treespec_dumps(self.in_spec),
                     "out_spec": pytree.treespec_dumps(self.out_spec)}
        except (NotImplementedError, TypeError, ValueError) as error:
            raise NovaRuntimeError(f"cannot save the program's call signature: {error}") from error
        return {**specs,
                "inputs": [_leaf_json(leaf) for leaf in self.inputs],
                "outputs": [_leaf_json(leaf) for leaf in self.outputs],
                "mutations": [list(m) for m in self.mutations]}

    @classmethod
    def from_json(cls, data: dict[str, Any], import_types: bool = False) -> "CallBinding":
        return cls(in_spec=_load_spec(data["in_spec"], import_types),
                   out_spec=_load_spec(data["out_spec"], import_types),
                   inputs=tuple(Leaf(**leaf) for leaf in data["inputs"]),
                   outputs=tuple(Leaf(**leaf) for leaf in data["outputs"]),
                   mutations=tuple((int(r), int(i)) for r, i in data["mutations"]))


def _same_constant(baked: Any, given: Any) -> bool:
    return type(baked) is type(given) and baked == given


def _write_back(target: Any, value: Any, name: str) -> None:
    if hasattr(target, "copy_"):
        import torch

        with torch.no_grad():
            target.copy_(value)
    elif hasattr(target, "__setitem__") and hasattr(target, "shape"):
        target[...] = value.numpy() if hasattr(value, "numpy") else value
    else:
        raise ProgramInputError(f"the model updates {name} in place, which needs a tensor, "
                                f"got {type(target).__name__}")


def _describe(spec: Any) -> str:
    """'2 input(s)', or '1 input(s) and keyword arguments input_ids, attention_mask'."""
    if spec.num_children != 2:
        return f"inputs structured as {spec}"
    args, kwargs = spec.child(0), spec.child(1)
    text = f"{args.num_children} input(s)"
    if kwargs.num_children:
        text += " and keyword argument(s) " + ", ".join(map(str, kwargs.context))
    return text


def _first_difference(exported: Any, given: Any, args: Sequence[Any]) -> str:
    """': input 1 was a tensor at export, got a list' for the first positional
    input whose structure differs (the counts being equal)."""
    if exported.num_children != 2 or given.num_children != 2:
        return ""
    for i, (want, got) in enumerate(zip(exported.child(0).children(), given.child(0).children())):
        if want != got:
            what = "a tensor" if want.is_leaf() else f"a {want.type.__name__}"
            value = args[i] if i < len(args) else None
            return f": input {i} was {what} at export, got a {type(value).__name__}"
    return ": the keyword arguments' structure differs from the exported one"


def _leaf_json(leaf: Leaf) -> dict[str, Any]:
    data = {"kind": leaf.kind, "name": leaf.name, "index": leaf.index, "value": leaf.value}
    if leaf.host_dtype is not None:
        data["host_dtype"] = leaf.host_dtype
    if leaf.kind == "empty":
        data.update(shape=list(leaf.shape), dtype=leaf.dtype)
    return data


def _check_empty(leaf: Leaf, value: Any) -> None:
    """An input the program does not take (it has no elements) must still be
    what it was at export: a tensor of that shape and dtype."""
    shape = getattr(value, "shape", None)
    dtype = str(getattr(value, "dtype", "")).removeprefix("torch.")
    if shape is None or tuple(shape) != leaf.shape or dtype != leaf.dtype:
        got = (f"{dtype}{list(shape)}" if shape is not None else type(value).__name__)
        raise ProgramInputError(f"{leaf.name} must be a {leaf.dtype} tensor of shape "
                                f"{list(leaf.shape)} (as at export), got {got}")


def _empty(leaf: Leaf) -> Any:
    """An empty result, made on the host."""
    import torch

    return torch.empty(leaf.shape, dtype=getattr(torch, leaf.dtype))


def _to_binary(leaf: Leaf, value: Any) -> Any:
    """An f64 input as the f32 the program takes (Nova computes in f32); a
    complex one as its ``view_as_real`` pairs (:mod:`nova.frontend.complex_pairs`), a
    uint8 / int16 one in int32 (:mod:`nova.frontend.narrow_ints`)."""
    if leaf.host_dtype == "float64" and getattr(value, "dtype", None) == __import__("torch").float64:
        return value.to(__import__("torch").float32)
    if leaf.host_dtype in _WIDENED and str(getattr(value, "dtype", "")) == f"torch.{leaf.host_dtype}":
        return value.to(__import__("torch").int32)
    if leaf.host_dtype in _COMPLEX_PARTS and getattr(value, "is_complex", lambda: False)():
        torch = __import__("torch")
        return torch.view_as_real(value.resolve_conj()).to(
            getattr(torch, _COMPLEX_PARTS[leaf.host_dtype][1])).contiguous()
    return value


def _to_host(leaf: Leaf, value: Any) -> Any:
    """An f32 result in the caller's dtype (likewise complex and narrow integer ones)."""
    if leaf.host_dtype == "float64" and hasattr(value, "to"):
        return value.to(__import__("torch").float64)
    if leaf.host_dtype in _WIDENED and hasattr(value, "to"):
        return value.to(getattr(__import__("torch"), leaf.host_dtype))
    if leaf.host_dtype in _COMPLEX_PARTS and hasattr(value, "to"):
        torch = __import__("torch")
        parts = value.to(getattr(torch, _COMPLEX_PARTS[leaf.host_dtype][0])).contiguous()
        return torch.view_as_complex(parts)
    return value


#: Narrow integers the program holds in int32 (nova.frontend.narrow_ints).
_WIDENED = ("uint8", "int16")

#: A complex dtype's parts: (their dtype on the host, in the program).
_COMPLEX_PARTS = {"complex64": ("float32", "float32"), "complex128": ("float64", "float32"),
                  "complex32": ("float16", "float16")}


#: Packages whose output types (Hugging Face's ModelOutput classes) the
#: ``nova`` command imports when a saved program names them.
_TYPE_PACKAGES = ("transformers", "torch", "nova")


def _load_spec(text: str, import_types: bool = False) -> Any:
    """torch's pytree finds a custom node type (a ``ModelOutput``) only once its
    class is defined: import its module when the package it belongs to has
    been imported already, or with ``import_types`` (the ``nova`` command,
    which loads programs on the user's behalf) when it is one of
    :data:`_TYPE_PACKAGES` — a crafted file must not make the CLI import
    arbitrary installed modules."""
    from torch.utils import _pytree as pytree

    try:
        return pytree.treespec_loads(text)
    except NotImplementedError:
        pass
    names = sorted(_type_names(json.loads(text)))
    for name in names:
        module = name.rpartition(".")[0]
        root = module.split(".")[0]
        # A saved file names the modules; only packages that define output
        # types Nova knows (or that the user imported) are imported for it.
        if module and (root in sys.modules or (import_types and root in _TYPE_PACKAGES)):
            try:
                importlib.import_module(module)
            except ImportError:
                pass
    try:
        return pytree.treespec_loads(text)
    except NotImplementedError as error:
        raise NovaRuntimeError(
            f"the saved program's inputs or outputs use {', '.join(names)}, which torch's "
            f"pytree does not know yet: import the module that defines it before loading"
        ) from error


def _type_names(node: Any) -> set[str]:
    """The custom pytree node types named in a serialised spec."""
    if isinstance(node, list):
        return set().union(*map(_type_names, node)) if node else set()
    if not isinstance(node, dict):
        return set()
    own = {node["type"]} if isinstance(node.get("type"), str) and "." in node["type"] else set()
    return own | _type_names(node.get("children_spec", []))


#: The torch dtype of each I/O element type of the binary (IODType names).
_TORCH_DTYPES = {"F32": "float32", "BF16": "bfloat16", "F16": "float16", "F64": "float64",
                 "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "I1": "bool"}


def check_tensor_dtype(label: str, value: Any, io_dtype: str) -> None:
    """A torch tensor input must have the program's element type exactly
    (``io_dtype``: an IODType name such as ``"F32"``): a bf16 tensor is never
    upcast into an f32 input, nor an f32 one rounded into a bf16 input. (numpy
    arrays have no bf16: float32 arrays carry a bf16 input's values.)"""
    dtype = getattr(value, "dtype", None)
    if not hasattr(value, "detach") or dtype is None:
        return
    given = str(dtype).removeprefix("torch.")
    expected = _TORCH_DTYPES.get(io_dtype, io_dtype.lower())
    if given != expected:
        raise ProgramInputError(
            f"{label} must have dtype {expected}, got {given} (Nova does not convert "
            f"inputs: pass a {expected} tensor, e.g. x.to(torch.{expected}))")


def call_with_binding(binding: "CallBinding | None", run, args: Sequence[Any],
                      kwargs: dict[str, Any]) -> Any:
    """A compiled program's call convention (single- and multi-chip alike):
    the binding maps the model's arguments onto the binary's inputs and the
    outputs back into the model's structure; without one, positional inputs
    and one output or a tuple. ``run`` runs the binary on flat inputs."""
    if binding is None:
        if kwargs:
            raise ProgramInputError("this program takes positional inputs only "
                                    "(it carries no call signature)")
        results = run(*args)
        return results[0] if len(results) == 1 else tuple(results)
    leaves = binding.flatten(args, kwargs)
    return binding.restore(run(*binding.tensors_of(leaves)), leaves)
