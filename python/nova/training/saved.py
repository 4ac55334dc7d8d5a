"""A training step saved to one file (``step.save(path)``) and loaded again
(``nova.load(path)``) to continue training where it stopped.

The archive (a zip, as a saved program) holds the step program's binary, its
layout (:class:`~nova.frontend.train_export.StepLayout`, every field), the
optimizer's kind and parameter groups, the per-group step counts, and
``step.state_dict()`` (parameters, buffers, the optimizer state in torch's
format, and whatever else the step keeps there), its tensors as ``.npy``
members. The loaded step is built from the binary's I/O table and restored
with ``load_state_dict``, the public path a step already has for its state,
so it runs the same program from the same numbers: its losses are those the
saved step would have given. It holds no model code: ``step.model`` is a
stand-in holding the tensors by name, ``step.optimizer`` a fresh torch
optimizer of the same kind over them (change its ``lr`` or attach an lr
scheduler to it, as before; a scheduler's own state is not saved).
``sync_to(model, optimizer)`` writes the trained values into a real model.

Its kind, ``nova-train-step/1``, is registered with :mod:`nova.archive_kinds`.
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from nova.archive_kinds import register
from nova.frontend.train_export import ImportedTrainStep, StepLayout
from nova.runtime.errors import NovaRuntimeError, ProgramArchiveError
from nova.runtime.archive import (META_ERRORS, binary_errors, npy_bytes, read_member, read_npy,
                                  reason)
from nova.runtime.program import CompiledProgram
from nova.training.errors import TrainStepError
from nova.training.optimizers import rule_for
from nova.training.train_step import TrainStep

__all__ = ["FORMAT", "LoadedTrainStep", "save_train_step"]

FORMAT = "nova-train-step/1"
_OPTIMIZERS = {"AdamW": torch.optim.AdamW, "SGD": torch.optim.SGD}


def _encode(value: Any, tensors: list[np.ndarray], where: str) -> Any:
    """``value`` (a state dict's nesting of dicts, lists, tensors, numbers) as
    JSON; its tensors are appended to ``tensors`` and referred to by index.
    Dicts become key/value pairs: torch's optimizer state is keyed by int."""
    if isinstance(value, torch.Tensor):
        tensors.append(np.array(value.detach().cpu().numpy(), order="C"))
        return {"tensor": len(tensors) - 1}
    if isinstance(value, Mapping):
        return {"dict": [[_encode(k, tensors, where), _encode(v, tensors, f"{where}[{k!r}]")]
                         for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
        return {kind: [_encode(v, tensors, where) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TrainStepError(f"cannot save the step: {where} is a {type(value).__name__}")


def _decode(value: Any, tensors: list[np.ndarray]) -> Any:
    if isinstance(value, dict):
        (kind, inner), = value.items()
        if kind == "tensor":
            return torch.from_numpy(tensors[inner].copy())
        if kind == "dict":
            return {_decode(k, tensors): _decode(v, tensors) for k, v in inner}
        if kind in ("list", "tuple"):
            items = [_decode(v, tensors) for v in inner]
            return items if kind == "list" else tuple(items)
        raise ValueError(f"unknown encoded value {kind!r}")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"unknown encoded value {value!r}")


def _plain(value: Any) -> Any:
    """A layout field as JSON (tuples as lists)."""
    return [_plain(v) for v in value] if isinstance(value, (tuple, list)) else value


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def save_train_step(step: TrainStep, path: str | Path) -> None:
    """Writes ``step`` (see the module docstring) to ``path``."""
    kind = type(step.optimizer).__name__
    if kind not in _OPTIMIZERS:
        raise TrainStepError(f"cannot save a step of a {kind} optimizer")
    tensors: list[np.ndarray] = []
    state = _encode(step.state_dict(), tensors, "state_dict()")
    meta = {
        "format": FORMAT,
        "layout": {f.name: _plain(getattr(step.layout, f.name))
                   for f in dataclasses.fields(step.layout)},
        "optimizer": {"kind": kind, "indices": step._torch_indices()},
        "state": state,
        "tensors": len(tensors),
        "steps": step.steps,
        "max_grad_norm": step.max_grad_norm,
        "unused": list(step.imported.unused),
        "constants": len(step._constants),
        "hbm_peak": step.memory().total,
    }
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("meta.json", json.dumps(meta))
        archive.writestr("program.nova", step.program.binary_bytes)
        for i, array in enumerate(tensors):
            archive.writestr(f"tensor{i}.npy", npy_bytes(array))
        for i, array in enumerate(step._constants):
            archive.writestr(f"constant{i}.npy", npy_bytes(np.asarray(array)))


class _SavedTensors(torch.nn.Module):
    """The loaded step's stand-in model: its tensors by name, no code."""

    def __init__(self, params: Mapping[str, torch.nn.Parameter],
                 others: Mapping[str, torch.Tensor]) -> None:
        super().__init__()
        self._saved = (dict(params), dict(others))  # not registered: names hold dots

    def named_parameters(self, *args: Any, **kwargs: Any):
        return iter(self._saved[0].items())

    def named_buffers(self, *args: Any, **kwargs: Any):
        return iter(self._saved[1].items())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise TrainStepError("a loaded training step holds no model code: call the step")


class LoadedTrainStep(TrainStep):
    """A :class:`TrainStep` read by ``nova.load``: ``loss = step(*batch)``,
    ``state_dict()``, ``save()``, ``stats`` as the saved one's. Its
    ``optimizer_state_dict()`` numbers the parameters as the saved step's
    optimizer did."""

    def __init__(self, model: _SavedTensors, optimizer: torch.optim.Optimizer,
                 layout: StepLayout, *, max_grad_norm: float | None,
                 indices: Mapping[str, int], group_params: list[list[int]]) -> None:
        super().__init__(model, optimizer, rule_for(optimizer), layout,
                         max_grad_norm=max_grad_norm)
        self._indices = dict(indices)
        self._group_params = group_params
        self.hbm_peak: int | None = None

    def _torch_indices(self) -> dict[str, int]:
        return dict(self._indices)

    def optimizer_state_dict(self) -> dict[str, Any]:
        state = super().optimizer_state_dict()
        for group, params in zip(state["param_groups"], self._group_params):
            group["params"] = list(params)
        return state


def _stand_in(program: CompiledProgram, layout: StepLayout,
              groups: list[dict[str, Any]], kind: str) -> tuple[Any, torch.optim.Optimizer]:
    """The stand-in model (zeros of the binary's leading inputs, named by the
    layout: ``load_state_dict`` fills them) and a torch optimizer over it."""
    names = layout.trainable + layout.constant
    inputs = sorted(program.binary.inputs, key=lambda e: e.index)
    if len(inputs) < len(names) + len(layout.slots) * len(layout.trainable):
        raise ValueError(f"the layout names {len(names)} tensors and "
                         f"{len(layout.slots)} slot(s) each, the binary has {len(inputs)} inputs")
    zeros = {n: torch.from_numpy(np.zeros(tuple(e.shape), e.dtype.numpy_dtype))
             for n, e in zip(names, inputs)}
    params = {n: torch.nn.Parameter(zeros[n]) for n in layout.trainable}
    others = {n: zeros[n] for n in layout.constant}
    torch_groups = []
    for group, members in zip(groups, layout.groups):
        options = {k: v for k, v in group.items() if k != "params"}
        torch_groups.append({**options, "params": [params[layout.trainable[i]] for i in members]})
    return _SavedTensors(params, others), _OPTIMIZERS[kind](torch_groups)


def _load(archive: zipfile.ZipFile, meta: Mapping[str, Any], path: Path,
          import_types: bool) -> LoadedTrainStep:
    """``nova.load``'s loader of this kind (:mod:`nova.archive_kinds`)."""
    try:
        layout = StepLayout(**{k: _tuples(v) for k, v in meta["layout"].items()})
        kind = meta["optimizer"]["kind"]
        if kind not in _OPTIMIZERS:
            raise ValueError(f"unknown optimizer {kind!r}")
        indices = {str(k): int(v) for k, v in meta["optimizer"]["indices"].items()}
        steps = [int(s) for s in meta["steps"]]
        unused = tuple(str(n) for n in meta["unused"])
        constants = int(meta["constants"])
        max_grad_norm = meta["max_grad_norm"]
        if max_grad_norm is not None:
            max_grad_norm = float(max_grad_norm)
        peak = meta.get("hbm_peak")
        encoded = meta["state"]
        tensor_count = int(meta["tensors"])
        if len(steps) != len(layout.groups):
            raise ValueError(f"{len(layout.groups)} parameter groups in the layout, "
                             f"{len(steps)} step counts")
    except META_ERRORS as error:
        raise ProgramArchiveError(f"{path}: meta.json of a training step is malformed: "
                                  f"{reason(error)}") from None
    tensors = [read_npy(archive, f"tensor{i}.npy", path) for i in range(tensor_count)]
    constant_arrays = [read_npy(archive, f"constant{i}.npy", path) for i in range(constants)]
    binary = read_member(archive, "program.nova", path)
    with binary_errors(path, "program.nova"):
        program = CompiledProgram(binary)
    try:
        state = _decode(encoded, tensors)
        groups = state["optimizer"]["param_groups"]
        if len(groups) != len(layout.groups):
            raise ValueError(f"{len(layout.groups)} parameter groups in the layout, "
                             f"{len(groups)} saved")
        model, optimizer = _stand_in(program, layout, groups, kind)
        step = LoadedTrainStep(model, optimizer, layout, max_grad_norm=max_grad_norm,
                               indices=indices,
                               group_params=[list(g.get("params", [])) for g in groups])
        step._attach(ImportedTrainStep(mlir="", layout=layout, ops=frozenset(), unused=unused,
                                       constants=tuple(torch.from_numpy(a)
                                                       for a in constant_arrays)),
                     program)
        missing = sorted(set(step.parameters()) - set(state["model"]))
        if missing:
            raise TrainStepError(f"the saved state has no tensor {missing[0]!r}")
        step.load_state_dict(state)
    except (TrainStepError, NovaRuntimeError) as error:
        raise ProgramArchiveError(f"{path}: {error}") from None
    except META_ERRORS as error:
        raise ProgramArchiveError(f"{path}: malformed training step: {reason(error)}") from None
    step._steps = steps  # exactly as saved (SGD's torch state does not count them)
    step.hbm_peak = peak if isinstance(peak, int) and not isinstance(peak, bool) else None
    return step


register(FORMAT, _load)
