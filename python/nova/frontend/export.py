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


_LOWERING = (
    ("builtin.module(func.func(torch-match-quantized-custom-ops), "
     "torchdynamo-export-to-torch-backend-pipeline{ extra-library=})",
     "Lowering TorchFX IR -> Torch Backend IR"),
    ("builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)",
     "Lowering Torch Backend IR -> Linalg-on-Tensors Backend IR"),
)


def _decompositions() -> dict:
    """torch-mlir's decomposition table, plus PyTorch's own GELU decomposition:
    torch-mlir lowers tanh-GELU with sqrt(2/pi) rounded to 0.797724, off by
    1e-4 relative, while torch's decomposition keeps the exact constant."""
    from torch._decomp import get_decompositions
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    table = dict(get_decomposition_table())
    table.update(get_decompositions([torch.ops.aten.gelu]))
    return table


#: Dialects of torch-mlir's linalg-on-tensors output that Nova compiles.
_SUPPORTED_DIALECTS = frozenset(
    {"builtin", "func", "linalg", "tensor", "arith", "math", "ml_program"})


def _reject_foreign_ops(module) -> None:
    """torch-mlir lowers a few ops (cumsum, sort, scatter...) to its own
    `tm_tensor` dialect, which Nova does not take; say so at the user's line
    instead of letting nova-opt fail to parse."""
    from torch_mlir import ir

    from nova.compiler.diagnostics import frame_of_location
    from nova.compiler.errors import NovaUnsupportedOpError

    found = []

    def visit(op):
        name = op.name
        if name.split(".", 1)[0] not in _SUPPORTED_DIALECTS and not found:
            found.append((name, str(op.location)))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    if found:
        name, location = found[0]
        raise NovaUnsupportedOpError(name, frame_of_location(location))


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
    from torch_mlir.compiler_utils import run_pipeline_with_repro_report

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        module = fx.export_and_import(
            _ParamsAsInputs(model, names), *tensors, *example_args,
            output_type="raw", func_name=func_name,
            decomposition_table=_decompositions())
    # Lowered here rather than by export_and_import(output_type=linalg...),
    # which loses the FX nodes' source locations on the way; diagnostics
    # need them to point at the user's line of Python.
    for pipeline, what in _LOWERING:
        run_pipeline_with_repro_report(module, pipeline, what)
    _reject_foreign_ops(module)
    return ImportedProgram(
        mlir=module.operation.get_asm(enable_debug_info=True),
        params=tuple(TensorSpec.of(n, t) for n, t in zip(names, tensors)),
        inputs=tuple(TensorSpec.of(f"input{i}", t) for i, t in enumerate(example_args)),
        outputs=tuple(TensorSpec.of(f"output{i}", t) for i, t in enumerate(outputs)),
    )
