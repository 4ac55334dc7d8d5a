"""Loads the model and example inputs that a ``nova compile`` model file defines.

The contract (also in ``nova compile --help`` and docs/cli.md): the file is run
as a Python module and defines either

* ``model`` (a ``torch.nn.Module``) and ``example_inputs`` (a tuple of tensors,
  or one tensor), or
* ``get_model()`` returning ``(model, example_inputs)``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

from nova.cli.errors import ModelFileError

CONTRACT = ("define `model` (a torch.nn.Module) and `example_inputs` (a tuple of tensors), "
            "or a function `get_model()` returning (model, example_inputs)")


def _run_file(path: Path) -> dict:
    spec = importlib.util.spec_from_file_location(f"_nova_model_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ModelFileError(f"{path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Let the file import modules that sit next to it.
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's code: report it in one line
        raise ModelFileError(f"{path}: raised {type(error).__name__}: {error}") from error
    finally:
        sys.path.remove(str(path.parent.resolve()))
    return vars(module)


def load_model_file(path: str | Path) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """Runs ``path`` and returns its ``(model, example_inputs)``; see the module docstring."""
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"{path}: no such file")
    namespace = _run_file(path)
    if callable(namespace.get("get_model")):
        try:
            result = namespace["get_model"]()
        except Exception as error:
            raise ModelFileError(
                f"{path}: get_model() raised {type(error).__name__}: {error}") from error
        if not (isinstance(result, tuple) and len(result) == 2):
            raise ModelFileError(f"{path}: get_model() must return (model, example_inputs)")
        model, inputs = result
    elif "model" in namespace:
        if "example_inputs" not in namespace:
            raise ModelFileError(f"{path}: defines `model` but not `example_inputs`")
        model, inputs = namespace["model"], namespace["example_inputs"]
    else:
        raise ModelFileError(f"{path}: no `model` or `get_model()` found; {CONTRACT}")
    if not isinstance(model, torch.nn.Module):
        raise ModelFileError(f"{path}: model is a {type(model).__name__}, not a torch.nn.Module")
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    if not isinstance(inputs, (tuple, list)) or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise ModelFileError(f"{path}: example_inputs must be a tuple of torch tensors")
    return model, tuple(inputs)
