"""A training step saved to one file (``step.save(path)``) and loaded again
(``nova.load(path)``) to continue training where it stopped.

The archive (a zip, as a saved program) holds the step program's binary, its
layout (:class:`~nova.frontend.train_export.StepLayout`), the optimizer's kind,
parameter groups (hyperparameters) and per-group step counts, and the current
parameters, buffers and optimizer state. The loaded step runs the same
program from the same numbers, so its losses are those the saved step would
have given. It holds no model code: ``step.model`` is a stand-in holding the
tensors by name, ``step.optimizer`` a fresh torch optimizer of the same kind
over them (change its ``lr`` or attach an lr scheduler to it, as before;
a scheduler's own state is not saved). ``sync_to(model, optimizer)`` writes
the trained values into a real model.

Its kind, ``nova-train-step/1``, is registered with :mod:`nova.archive_kinds`.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from nova.archive_kinds import register
from nova.frontend.train_export import ImportedTrainStep, StepLayout
from nova.runtime.errors import NovaRuntimeError, ProgramArchiveError
from nova.runtime.program import (_META_ERRORS, CompiledProgram, _binary_errors, _member, _npy,
                                  _reason)
from nova.training.errors import TrainStepError
from nova.training.optimizers import rule_for
from nova.training.train_step import TrainStep

__all__ = ["FORMAT", "LoadedTrainStep", "save_train_step"]

FORMAT = "nova-train-step/1"
_OPTIMIZERS = {"AdamW": torch.optim.AdamW, "SGD": torch.optim.SGD}
_LAYOUT_TUPLES = ("trainable", "constant", "slots", "hypers", "keywords")


def _json_value(value: Any, where: str) -> Any:
    """A hyperparameter as JSON (a 0-d tensor becomes its float)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, (tuple, list)):
        return [_json_value(v, where) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TrainStepError(f"cannot save the step: {where} is a {type(value).__name__}")


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def save_train_step(step: TrainStep, path: str | Path) -> None:
    """Writes ``step`` (see the module docstring) to ``path``."""
    layout = step.layout
    kind = type(step.optimizer).__name__
    if kind not in _OPTIMIZERS:
        raise TrainStepError(f"cannot save a step of a {kind} optimizer")
    groups = [{key: (list(value) if key == "params" else _json_value(value, f"group {g} '{key}'"))
               for key, value in group.items()}
              for g, group in enumerate(step.optimizer_state_dict()["param_groups"])]
    meta = {
        "format": FORMAT,
        "layout": {**{k: list(getattr(layout, k)) for k in _LAYOUT_TUPLES},
                   "groups": [list(g) for g in layout.groups], "batch": layout.batch,
                   "model_inputs": layout.model_inputs, "clip": layout.clip,
                   "accumulation_steps": layout.accumulation_steps, "grads": layout.grads},
        "optimizer": {"kind": kind, "param_groups": groups,
                      "indices": step._torch_indices()},
        "steps": step.steps,
        "max_grad_norm": step.max_grad_norm,
        "unused": list(step.imported.unused),
        "constants": len(step._constants),
        "hbm_peak": step.memory().total,
    }
    names = layout.trainable + layout.constant
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("meta.json", json.dumps(meta))
        archive.writestr("program.nova", step.program.binary_bytes)
        for i, name in enumerate(names):
            archive.writestr(f"value{i}.npy", _npy_bytes(step._values[name]))
        for s, slot in enumerate(layout.slots):
            for i, array in enumerate(step._slots[slot]):
                archive.writestr(f"slot{s}_{i}.npy", _npy_bytes(array))
        for i, array in enumerate(step._constants):
            archive.writestr(f"constant{i}.npy", _npy_bytes(array))


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


def _layout(data: Any) -> StepLayout:
    fields = {k: tuple(data[k]) for k in _LAYOUT_TUPLES}
    fields["groups"] = tuple(tuple(int(i) for i in g) for g in data["groups"])
    for key in ("batch", "model_inputs", "accumulation_steps"):
        if isinstance(data[key], bool) or not isinstance(data[key], int):
            raise TypeError(f"layout '{key}' must be an integer, got {data[key]!r}")
        fields[key] = data[key]
    fields["clip"], fields["grads"] = bool(data["clip"]), bool(data["grads"])
    return StepLayout(**fields)


def _check_arrays(program: CompiledProgram, arrays: list[np.ndarray], members: list[str],
                  path: Path) -> None:
    """The saved values are the binary's leading inputs, each of its entry's shape and dtype."""
    inputs = sorted(program.binary.inputs, key=lambda e: e.index)
    if len(arrays) > len(inputs):
        raise ProgramArchiveError(f"{path}: {len(arrays)} saved tensors for a binary with "
                                  f"{len(inputs)} inputs")
    for entry, array, member in zip(inputs, arrays, members):
        if tuple(array.shape) != tuple(entry.shape) or array.dtype != entry.dtype.numpy_dtype:
            raise ProgramArchiveError(
                f"{path}: member '{member}' holds {array.dtype}{list(array.shape)} but input "
                f"{entry.index} of the binary is {entry.dtype.name.lower()}{list(entry.shape)}")


def _load(archive: zipfile.ZipFile, meta: Mapping[str, Any], path: Path,
          import_types: bool) -> LoadedTrainStep:
    """``nova.load``'s loader of this kind (:mod:`nova.archive_kinds`)."""
    try:
        layout = _layout(meta["layout"])
        saved = meta["optimizer"]
        optimizer_class = _OPTIMIZERS[saved["kind"]]
        groups = [dict(g) for g in saved["param_groups"]]
        indices = {str(k): int(v) for k, v in saved["indices"].items()}
        steps = [int(s) for s in meta["steps"]]
        unused = tuple(str(n) for n in meta["unused"])
        constants = int(meta["constants"])
        max_grad_norm = meta["max_grad_norm"]
        peak = meta.get("hbm_peak")
        if len(groups) != len(layout.groups) or len(steps) != len(layout.groups):
            raise ValueError(f"{len(layout.groups)} parameter groups in the layout, "
                             f"{len(groups)} saved with {len(steps)} step counts")
    except _META_ERRORS as error:
        raise ProgramArchiveError(f"{path}: meta.json of a training step is malformed: "
                                  f"{_reason(error)}") from None
    names = layout.trainable + layout.constant
    value_members = [f"value{i}.npy" for i in range(len(names))]
    slot_members = [f"slot{s}_{i}.npy" for s in range(len(layout.slots))
                    for i in range(len(layout.trainable))]
    constant_members = [f"constant{i}.npy" for i in range(constants)]
    values = [_npy(archive, m, path) for m in value_members]
    slot_arrays = [_npy(archive, m, path) for m in slot_members]
    constant_arrays = [_npy(archive, m, path) for m in constant_members]
    binary = _member(archive, "program.nova", path)
    with _binary_errors(path, "program.nova"):
        program = CompiledProgram(binary)
    _check_arrays(program, values + slot_arrays, value_members + slot_members, path)
    try:
        by_name = dict(zip(names, values))
        params = {n: torch.nn.Parameter(torch.from_numpy(by_name[n].copy()))
                  for n in layout.trainable}
        others = {n: torch.from_numpy(by_name[n].copy()) for n in layout.constant}
        torch_groups = []
        for group, members in zip(groups, layout.groups):
            options = {k: (tuple(v) if isinstance(v, list) else v)
                       for k, v in group.items() if k != "params"}
            torch_groups.append({**options, "params": [params[layout.trainable[i]]
                                                       for i in members]})
        optimizer = optimizer_class(torch_groups)
        step = LoadedTrainStep(_SavedTensors(params, others), optimizer, layout,
                               max_grad_norm=max_grad_norm, indices=indices,
                               group_params=[list(g.get("params", [])) for g in groups])
    except (TrainStepError, NovaRuntimeError) as error:
        raise ProgramArchiveError(f"{path}: {error}") from None
    except _META_ERRORS as error:
        raise ProgramArchiveError(f"{path}: malformed training step: {_reason(error)}") from None
    n = len(layout.trainable)
    step._slots = {slot: slot_arrays[s * n:(s + 1) * n] for s, slot in enumerate(layout.slots)}
    step._steps = steps
    step.hbm_peak = peak if isinstance(peak, int) and not isinstance(peak, bool) else None
    step._attach(ImportedTrainStep(mlir="", layout=layout, ops=frozenset(), unused=unused,
                                   constants=tuple(torch.from_numpy(a) for a in constant_arrays)),
                 program)
    return step


register(FORMAT, _load)
