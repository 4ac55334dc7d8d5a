"""A compiled program: a ``.nova`` binary plus the parameter values it was
compiled with, runnable on the simulator and returning torch tensors.

Works on the binary format alone (no compiler, no MLIR).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from nova.runtime.binary import Binary, load_binary
from nova.runtime.binding import CallBinding, ProgramInputError, call_with_binding
from nova.runtime.errors import NovaRuntimeError

_FORMAT = "nova-program/1"

__all__ = ["CompiledProgram", "ProgramInputError", "load"]


def _to_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        return value.numpy()
    return np.asarray(value)


def _contiguous(array: np.ndarray) -> np.ndarray:
    """C-contiguous, keeping a 0-d array 0-d (np.ascontiguousarray makes it 1-d)."""
    return array if array.flags.c_contiguous else np.array(array, order="C")


class CompiledProgram:
    """``program(*args, **kwargs)`` runs the model on the simulated system.

    Parameters are bound at compile time (they are the leading arguments of
    the binary's I/O table); calls pass only the model's inputs.

    With a ``binding`` (recorded by ``nova.compile`` from the exported
    program) a call takes the model's own arguments, positional or keyword,
    and returns the model's own output structure (a tensor, a tuple, a dict,
    a Hugging Face ``ModelOutput``...); only tensors go through the
    accelerator. Without one, a call takes the binary's inputs in order and
    returns one tensor or a tuple.
    """

    def __init__(self, binary: bytes, params: Sequence[np.ndarray] = (),
                 stages: dict | None = None, binding: CallBinding | None = None) -> None:
        self.binary_bytes = bytes(binary)
        self.binary: Binary = load_binary(self.binary_bytes)
        self.params = [_contiguous(np.asarray(p)) for p in params]
        self.binding = binding
        self.stages = dict(stages or {})
        inputs = sorted(self.binary.inputs, key=lambda e: e.index)
        if len(self.params) > len(inputs):
            raise ProgramInputError(
                f"{len(self.params)} parameters given but the binary has {len(inputs)} inputs")
        self.input_entries = inputs[len(self.params):]
        self.output_entries = sorted(self.binary.outputs, key=lambda e: e.index)
        self.report = None
        self._simulator = None
        self._resident = None
        self._timing = None

    # Calling -----------------------------------------------------------------------------
    def _check(self, args: Sequence[Any]) -> list[np.ndarray]:
        if len(args) != len(self.input_entries):
            raise ProgramInputError(
                f"the program takes {len(self.input_entries)} input(s), got {len(args)}")
        names = ([leaf.name for leaf in self.binding.tensor_inputs]
                 if self.binding is not None else [])
        arrays = []
        for position, (entry, value) in enumerate(zip(self.input_entries, args)):
            label = _input_label(names[position] if position < len(names) else "", position)
            array = _to_numpy(value)
            if tuple(array.shape) != tuple(entry.shape):
                raise ProgramInputError(
                    f"{label} must have shape {list(entry.shape)}, got {list(array.shape)}")
            expected = entry.dtype.numpy_dtype
            # bf16 has no numpy type: its values travel as float32 (the
            # simulator rounds them to bf16 bits).
            bf16_as_f32 = entry.dtype.name == "BF16" and array.dtype == np.float32
            if array.dtype != expected and not bf16_as_f32:
                raise ProgramInputError(
                    f"{label} must have dtype {np.dtype(expected).name}, got {array.dtype.name}")
            arrays.append(_contiguous(array))
        return arrays

    def run(self, *args: Any, trace: bool = False, timing_only: bool = False) -> list[Any]:
        """Runs on the simulator; returns the outputs (torch tensors) and sets ``report``.

        ``timing_only=True`` simulates shapes and costs only (no numbers, no simulated
        memory; see ``nova.sim.Simulator``): the inputs may be left out, nothing is
        returned (``[]``) and ``report`` holds the same simulated times as a full run.
        """
        import torch

        from nova.sim import Simulator

        if timing_only:
            arrays = self._check(args) if args else []
            simulator = (Simulator(self.binary, functional=False, trace=True) if trace else
                         self._timing or Simulator(self.binary, functional=False))
            if not trace:
                self._timing = simulator  # decoded once, like the resident simulator
            _, self.report = simulator.run({e.index: a for e, a in zip(self.input_entries, arrays)})
            self._simulator = simulator
            return []
        arrays = self._check(args)
        inputs = {e.index: a for e, a in zip(self.input_entries, arrays)}
        if trace:
            # A traced run gets a simulator of its own (with a fresh timeline).
            simulator = Simulator(self.binary, trace=True)
            inputs.update(enumerate(self.params))
        else:
            if self._resident is None:
                # Parameters stay in the simulated HBM between calls, as on a
                # device; each call writes only the inputs.
                self._resident = Simulator(self.binary, resident=True)
                inputs.update(enumerate(self.params))
            simulator = self._resident
        outputs, report = simulator.run(inputs)
        self.report = report
        self._simulator = simulator
        results = []
        for entry in self.output_entries:
            value = outputs.get(entry.index, outputs.get(entry.name))
            tensor = torch.from_numpy(np.array(value))
            results.append(tensor.to(torch.bfloat16) if entry.dtype.name == "BF16" else tensor)
        return results

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return call_with_binding(self.binding, self.run, args, kwargs)

    def write_trace(self, path: str | Path) -> None:
        """Writes the last run's Chrome-trace/Perfetto timeline (run with ``trace=True``)."""
        if self._simulator is None or self._simulator.trace is None:
            raise NovaRuntimeError("no trace recorded: call run(..., trace=True) first")
        self._simulator.write_trace(path)

    def critical_path(self, by: str = "engine", top: int = 10) -> str:
        """The critical path through the engines of the last traced run, as a
        table of its time per engine (``by="module"`` or ``"line"`` too)."""
        from nova.sim.critical_path import format_critical_path

        if self._simulator is None or self._simulator.trace is None:
            raise NovaRuntimeError("no trace recorded: call run(..., trace=True) first")
        return format_critical_path(self._simulator.critical_path(), by=by, top=top)

    # Saving ------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Writes the binary and the bound parameters to one file (a zip archive)."""
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
            meta = {"format": _FORMAT, "params": len(self.params)}
            if self.binding is not None:
                meta["binding"] = self.binding.to_json()
            archive.writestr("meta.json", json.dumps(meta))
            archive.writestr("program.nova", self.binary_bytes)
            for i, param in enumerate(self.params):
                buffer = io.BytesIO()
                np.save(buffer, param, allow_pickle=False)
                archive.writestr(f"param{i}.npy", buffer.getvalue())


def _input_label(name: str, position: int) -> str:
    """'input 0' for the model's first positional tensor, 'input 'mask'' for a keyword one."""
    if not name or name == f"input{position}":
        return f"input {position}"
    return f"input {name!r}"


def load(path: str | Path, import_types: bool = False) -> Any:
    """Loads a program written by :meth:`CompiledProgram.save` (or a bare
    ``.nova`` binary), or a multi-chip one written by
    :meth:`nova.parallel.ParallelProgram.save`. ``import_types`` imports the
    modules of the output types the program returns (a Hugging Face
    ``ModelOutput``) even when their package is not imported yet."""
    data = Path(path).read_bytes()
    if not zipfile.is_zipfile(io.BytesIO(data)):
        return CompiledProgram(data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        meta = json.loads(archive.read("meta.json"))
        from nova.parallel import program as parallel

        if meta.get("format") == parallel.FORMAT:
            return parallel.load_parallel(archive, meta)
        if meta.get("format") != _FORMAT:
            raise NovaRuntimeError(f"{path}: not a saved Nova program (format {meta.get('format')!r})")
        params = [np.load(io.BytesIO(archive.read(f"param{i}.npy")), allow_pickle=False)
                  for i in range(int(meta["params"]))]
        binding = (CallBinding.from_json(meta["binding"], import_types)
                   if "binding" in meta else None)
        return CompiledProgram(archive.read("program.nova"), params, binding=binding)
