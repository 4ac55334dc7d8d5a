"""Activation modules traced as the PyTorch function they compute.

Hugging Face's ``NewGELUActivation`` (GPT-2's ``gelu_new``; ``gelu_fast`` and
``gelu_accurate`` alike) writes the tanh GELU as a chain of eight ops,
``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``. In a training step each
op's result is saved for the backward and autograd differentiates the chain
op by op; under bf16 autocast every op also rounds to bf16 and converts back
for the next. On the vector unit that is 28 passes over the activation
(forward and backward), where ``F.gelu(x, approximate="tanh")`` and its
backward take 20 (test_activation_functions.py).

While a step is traced, such a module computes ``F.gelu(x,
approximate="tanh")``: the same function, evaluated in f32 and rounded once,
as eager's ``F.gelu`` and torch.compile's fused kernels evaluate it, instead of
after each op. A module is traced so only when its class is listed here and
it agrees with the function on a float64 probe, so a subclass that changes
``forward`` keeps its own.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import torch


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x, approximate="tanh")


def _gelu(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x)


#: (module, class name) -> the function its forward computes. Hugging Face's
#: ``gelu_new`` (GPT-2, GPT-J, CodeGen, Phi, T5 v1.1), ``gelu_fast`` and
#: ``gelu_accurate`` are the tanh GELU; ``gelu_python`` the exact one.
_FUNCTIONAL: dict[tuple[str, str], Callable[[torch.Tensor], torch.Tensor]] = {
    ("transformers.activations", "NewGELUActivation"): _gelu_tanh,
    ("transformers.activations", "FastGELUActivation"): _gelu_tanh,
    ("transformers.activations", "AccurateGELUActivation"): _gelu_tanh,
    ("transformers.activations", "GELUActivation"): _gelu,
}

#: How close to the function a module must be on the probe, relative: far
#: below float32's resolution (``gelu_fast`` rounds sqrt(2 / pi) to ten
#: digits, 4e-12 from it).
_PROBE_RTOL = 1e-9


def _function_of(module: torch.nn.Module) -> Callable[[torch.Tensor], torch.Tensor] | None:
    cls = type(module)
    fn = _FUNCTIONAL.get((cls.__module__, cls.__name__))
    if fn is None or any(True for _ in module.parameters(recurse=False)):
        return None
    probe = torch.linspace(-8.0, 8.0, 161, dtype=torch.float64)
    try:
        with torch.no_grad():
            agrees = torch.allclose(module(probe), fn(probe), rtol=_PROBE_RTOL, atol=1e-12)
    except Exception:  # noqa: BLE001 - a module that cannot run the probe keeps its forward
        return None
    return fn if agrees else None


@contextlib.contextmanager
def traced_as_functions(model: torch.nn.Module) -> Iterator[None]:
    """Within the block, the modules of ``model`` listed above compute their
    PyTorch function (see the module docstring)."""
    patched = []
    for module in model.modules():
        fn = _function_of(module)
        if fn is not None and "forward" not in module.__dict__:
            module.forward = fn
            patched.append(module)
    try:
        yield
    finally:
        for module in patched:
            del module.forward
