"""Every exception class Nova defines derives from nova.NovaError; compile-time
ones from nova.NovaModelCompileError, run-time ones from nova.NovaRuntimeError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
import torch
from torch import nn

import nova
from nova.compiler.errors import NovaCompileError
from nova.frontend.errors import (NovaDataDependentError, NovaLoweringError,
                                  NovaTorchExportError, NovaZeroSizeError)
from nova.runtime.errors import BinaryFormatError
from nova.sim.errors import AssertionFailedError, EngineFaultError, SimulationError


def _nova_exception_classes() -> list[type]:
    """Every Exception subclass defined in a module of the nova package (private
    ones, which never leave their function, excepted)."""
    for info in pkgutil.walk_packages(nova.__path__, "nova."):
        if not info.name.endswith("__main__"):  # runs the command line
            importlib.import_module(info.name)
    seen, todo, found = set(), [Exception], []
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub in seen:
                continue
            seen.add(sub)
            todo.append(sub)
            if sub.__module__.split(".")[0] == "nova" and not sub.__name__.startswith("_"):
                found.append(sub)
    return found


def test_every_nova_exception_derives_from_nova_error():
    classes = _nova_exception_classes()
    assert len(classes) > 40  # the walk saw the whole package
    outside = [f"{c.__module__}.{c.__qualname__}" for c in classes
               if not issubclass(c, nova.NovaError) and not issubclass(c, Warning)]
    assert outside == []


def test_compile_time_and_run_time_errors_have_one_base_each():
    for cls in (NovaCompileError, NovaLoweringError, NovaDataDependentError,
                NovaTorchExportError, NovaZeroSizeError, nova.NovaUnsupportedOpError):
        assert issubclass(cls, nova.NovaModelCompileError), cls
    for cls in (EngineFaultError, AssertionFailedError, SimulationError, BinaryFormatError):
        assert issubclass(cls, nova.NovaRuntimeError) and not \
            issubclass(cls, nova.NovaModelCompileError), cls
    assert issubclass(nova.NovaRuntimeError, nova.NovaError)


def test_the_error_root_sits_below_every_layer():
    # nova.errors imports nothing from Nova, so the binary reader and the
    # simulator share the root without importing the compiler.
    import ast

    import nova.errors

    tree = ast.parse(inspect.getsource(nova.errors))
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + \
        [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m and m.split(".")[0] == "nova"]
    sim_errors = inspect.getsource(importlib.import_module("nova.sim.errors"))
    assert "nova.compiler" not in sim_errors


class _Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # the line the error leads with
            return x + 1
        return x - 1


def test_a_data_dependent_branch_leads_with_the_line_and_suggests_torch_compile(capfd):
    with pytest.raises(NovaDataDependentError) as info:
        nova.compile(_Branchy(), torch.randn(4))
    line = inspect.getsourcelines(_Branchy.forward)[1] + 1
    first, code = str(info.value).splitlines()[:2]
    assert first.startswith(f"{__file__}:{line}: cannot export the model")
    assert code.strip() == "if x.sum() > 0:  # the line the error leads with"
    assert 'torch.compile(model, backend="nova")' in str(info.value)
    assert "def forward" not in capfd.readouterr().err  # torch's partial graph is held back
