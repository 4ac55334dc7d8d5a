"""torch.export a model with its parameters as function arguments and import
it into linalg-on-tensors with torch-mlir.

Parameters and buffers become leading arguments of `@forward` (in
`named_parameters()` then `named_buffers()` order), so a large model's IR stays
small and the binary can refer to parameters by name.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class TensorSpec:
    """Name, shape and dtype of one function argument or result."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @classmethod
    def of(cls, name: str, t: torch.Tensor) -> "TensorSpec":
        return cls(name, tuple(t.shape), str(t.dtype).removeprefix("torch."))


@dataclass(frozen=True)
class ImportedProgram:
    """linalg-on-tensors text plus the meaning of each argument."""

    mlir: str
    params: tuple[TensorSpec, ...]
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


class _ParamsAsInputs(torch.nn.Module):
    """Calls `model` with parameters/buffers taken from the argument list."""

    def __init__(self, model: torch.nn.Module, names: list[str]) -> None:
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, *args: torch.Tensor):
        state = dict(zip(self.names, args[: len(self.names)]))
        return torch.func.functional_call(self.model, state, args[len(self.names):])


def import_model(model: torch.nn.Module, *example_args: torch.Tensor,
                 func_name: str = "forward") -> ImportedProgram:
    """Exports `model` at `example_args` and returns its linalg-on-tensors IR."""
    from torch_mlir import fx  # heavy import, only when compiling

    model = model.eval()
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    names = list(state)
    tensors = [t.detach() for t in state.values()]
    with torch.no_grad():
        expected = model(*example_args)
    outputs = expected if isinstance(expected, (tuple, list)) else (expected,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        module = fx.export_and_import(
            _ParamsAsInputs(model, names), *tensors, *example_args,
            output_type="linalg-on-tensors", func_name=func_name)
    return ImportedProgram(
        mlir=str(module),
        params=tuple(TensorSpec.of(n, t) for n, t in zip(names, tensors)),
        inputs=tuple(TensorSpec.of(f"input{i}", t) for i, t in enumerate(example_args)),
        outputs=tuple(TensorSpec.of(f"output{i}", t) for i, t in enumerate(outputs)),
    )
