"""A compiled program: a ``.nova`` binary plus the parameter values it was
compiled with, runnable on the simulator and returning torch tensors. Saved as
an archive (:mod:`nova.runtime.archive` reads it back, and holds what every
program kind's archive shares).

Works on the binary format alone (no compiler, no MLIR).
"""

from __future__ import annotations

import json
import sys
import weakref
import zipfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from nova.binary.format import Binary, load_binary
from nova.archive_kinds import register
from nova.runtime.archive import (META_ERRORS, binary_errors, check_params, npy_bytes, read_member,
                                  read_npy, reason)
from nova.runtime.binding import CallBinding, ProgramInputError, call_with_binding
from nova.runtime.errors import NovaRuntimeError, ProgramArchiveError
from nova.runtime.host_values import (check_arity, contiguous, host_array, input_label, to_tensor,
                                      torch_dtype)
from nova.runtime.splits import as_split
from nova.runtime.traffic import Traffic

_FORMAT = "nova-program/1"

__all__ = ["RESIDENT", "CompiledProgram", "ProgramInputError"]


class _Resident:
    """``RESIDENT`` in place of an input: keep what the resident HBM holds."""

    def __repr__(self) -> str:
        return "RESIDENT"


#: Passed for an input of :meth:`CompiledProgram.run`: the buffer keeps the value
#: the resident HBM holds (the last one written or, for an input donated to an
#: output, the output the last run wrote over it).
RESIDENT = _Resident()


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

    ``splits`` (input position -> dim, or a split object of
    :mod:`nova.runtime.splits`) makes an SPMD binary data parallel: such an
    input is given whole and split over the chips (a dim: evenly along it,
    chip c gets the c-th piece); every other input goes whole to every chip,
    and outputs are chip 0's (replicated).

    ``zero`` and ``grad_shards`` say what a data-parallel training step holds
    split over its chips, for its memory report: the ZeRO stage, and the
    parameters whose gradients each chip holds ``1/chips`` of (ZeRO-2).
    """

    def __init__(self, binary: bytes, params: Sequence[np.ndarray] = (),
                 stages: dict | None = None, binding: CallBinding | None = None,
                 splits: dict[int, int] | None = None, *, zero: int = 0,
                 grad_shards: Sequence[str] = ()) -> None:
        self.binary_bytes = bytes(binary)
        self.binary: Binary = load_binary(self.binary_bytes)
        self.params = [contiguous(np.asarray(p)) for p in params]
        self.binding = binding
        self.stages = dict(stages or {})
        inputs = sorted(self.binary.inputs, key=lambda e: e.index)
        if len(self.params) > len(inputs):
            raise ProgramInputError(
                f"{len(self.params)} parameters given but the binary has {len(inputs)} inputs")
        self.input_entries = inputs[len(self.params):]
        self.output_entries = sorted(self.binary.outputs, key=lambda e: e.index)
        self.splits = {position: as_split(split, self.binary.chips)
                       for position, split in (splits or {}).items()}
        self.zero = zero
        self.grad_shards = tuple(grad_shards)
        self.report = None
        self._simulator = None
        self._resident = None
        self._timing = None
        #: Bytes moved by every run (:class:`~nova.runtime.traffic.Traffic`), and by the last.
        self.traffic = Traffic()
        self.last_traffic = Traffic()
        #: Untraced runs so far: a value kept in an output buffer is valid in its run's generation.
        self.generation = 0
        self._kept: list[weakref.ref] = []  # DeviceValues still in this program's output buffers

    # Calling -----------------------------------------------------------------------------
    def _check(self, args: Sequence[Any]) -> list[np.ndarray]:
        check_arity(len(self.input_entries), args)
        names = ([leaf.name for leaf in self.binding.tensor_inputs]
                 if self.binding is not None else [])
        arrays = []
        device = sys.modules.get("nova.runtime.device")  # no DeviceTensor exists before it loads
        for position, (entry, value) in enumerate(zip(self.input_entries, args)):
            if value is RESIDENT:
                arrays.append(RESIDENT)
                continue
            label = input_label(names, position)
            if device is not None and isinstance(value, device.DeviceTensor):
                arrays.append(self._device_input(label, position, entry, value.device_value))
                continue
            shape = list(entry.shape)
            if position in self.splits:
                shape = self.splits[position].global_shape(shape)
            arrays.append(host_array(label, value, entry, shape))
        return arrays

    def _device_input(self, label: str, position: int, entry, value) -> Any:
        """A kept value given for an input: it must be the input's exact buffer type."""
        source = value.entry
        if position in self.splits:
            raise ProgramInputError(f"{label} is split over the chips: give it from the host, "
                                    f"not as a DeviceTensor")
        if (source.dtype.name != entry.dtype.name or tuple(source.shape) != tuple(entry.shape)
                or value.chips != self.binary.chips):
            raise ProgramInputError(
                f"{label} takes {entry.dtype.name.lower()}{list(entry.shape)} on "
                f"{self.binary.chips} chip(s); the DeviceTensor given holds "
                f"{source.dtype.name.lower()}{list(source.shape)} on {value.chips}")
        return value

    def run(self, *args: Any, trace: bool = False, timing_only: bool = False,
            read: Sequence[int] | None = None, keep: Sequence[int] = ()) -> list[Any]:
        """Runs on the simulator; returns the outputs (torch tensors) and sets ``report``.

        An input given as :data:`RESIDENT` keeps what the resident HBM holds from
        the previous run (an error on the first). ``read`` (output positions) limits
        the outputs read back; the others come back as ``None`` and can be read
        later (:meth:`read_output`, :meth:`read_input`).

        ``keep`` (output positions) leaves those outputs in device memory: they
        come back as :class:`~nova.runtime.device.DeviceTensor` handles, not read.
        A handle given as an input (of this program or another) is copied
        device-to-device into the input's buffer (:mod:`nova.runtime.device`).
        ``traffic`` / ``last_traffic`` count the bytes moved.

        ``timing_only=True`` simulates shapes and costs only (no numbers, no simulated
        memory; see ``nova.sim.Simulator``): the inputs may be left out, nothing is
        returned (``[]``) and ``report`` holds the same simulated times as a full run.
        """
        from nova.runtime.device import DeviceValue
        from nova.sim import Simulator

        if timing_only:
            arrays = self._check(args) if args else []
            simulator = (Simulator(self.binary, functional=False, trace=True) if trace else
                         self._timing or Simulator(self.binary, functional=False))
            if not trace:
                self._timing = simulator  # decoded once, like the resident simulator
            inputs = {e.index: a for e, a in zip(self.input_entries, arrays)
                      if a is not RESIDENT and not isinstance(a, DeviceValue)}
            _, self.report = simulator.run(inputs, per_chip=self._split(inputs))
            self._simulator = simulator
            return []
        arrays = self._check(args)
        from_device = {e.index: a for e, a in zip(self.input_entries, arrays)
                       if isinstance(a, DeviceValue)}
        inputs = {e.index: a for e, a in zip(self.input_entries, arrays)
                  if a is not RESIDENT and e.index not in from_device}
        if any(a is RESIDENT for a in arrays) and (trace or self._resident is None):
            raise ProgramInputError("RESIDENT inputs need an earlier untraced run to hold them")
        keep = sorted(set(keep))
        if keep and (trace or any(not 0 <= k < len(self.output_entries) for k in keep)):
            raise ProgramInputError(
                f"keep= takes positions of the {len(self.output_entries)} outputs, on an "
                f"untraced run (a traced run's memory is not kept); got {keep}")
        traffic = Traffic()
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
            self._move_kept(traffic)  # this run overwrites the output buffers
            self.generation += 1
        chips = self.binary.chips
        sizes = {e.index: e.byte_size for e in sorted(self.binary.inputs, key=lambda e: e.index)}
        traffic.host_written += sum(sizes[i] for i in inputs) * chips
        read = range(len(self.output_entries)) if read is None else read
        wanted = [self.output_entries[i].index for i in read if i not in keep]
        per_chip = self._split(inputs)
        if from_device:
            from nova.sim.simulator import DeviceBytes, device_copy_ns

            per_chip = per_chip or {c: {} for c in range(chips)}
            for index, value in from_device.items():
                for c in range(chips):
                    per_chip[c][index] = DeviceBytes(value.raw(c))
                traffic.device_in += value.nbytes * chips
                traffic.device_ns += device_copy_ns(simulator.target, value.nbytes)
        outputs, report = simulator.run(inputs, per_chip=per_chip, read=wanted)
        self.report = report
        self._simulator = simulator
        results = []
        for position, entry in enumerate(self.output_entries):
            if position in keep:
                results.append(self._keep(position, traffic))
                continue
            value = outputs.get(entry.index)
            if value is not None:
                traffic.host_read += entry.byte_size
            results.append(None if value is None else to_tensor(entry, value))
        self.last_traffic = traffic
        self.traffic.add(traffic)
        return results

    def _keep(self, position: int, traffic: Traffic) -> Any:
        """A handle to output ``position`` as this run left it in HBM."""
        from nova.runtime.device import DeviceTensor, DeviceValue

        value = DeviceValue(self, position, self.generation)
        self._kept.append(weakref.ref(value))
        traffic.kept += 1
        traffic.kept_bytes += value.nbytes * value.chips
        return DeviceTensor(value, torch_dtype(value.entry))

    def _move_kept(self, traffic: Traffic) -> None:
        """Moves the values still held in this program's output buffers to device
        buffers of their own (each an HBM-to-HBM copy), before a run overwrites them."""
        from nova.sim.simulator import device_copy_ns

        for ref in self._kept:
            value = ref()
            if value is not None and value.in_place:
                value.move_out()
                traffic.moved_bytes += value.nbytes * value.chips
                traffic.device_ns += device_copy_ns(self._resident.target, value.nbytes)
        self._kept = []

    def resident_simulator(self) -> Any:
        """The simulator whose HBM holds this program's state between runs."""
        if self._resident is None:
            raise NovaRuntimeError("nothing is resident: run the program first")
        return self._resident

    def _split(self, inputs: dict[int, np.ndarray]) -> dict[int, dict[int, np.ndarray]] | None:
        """Each chip's pieces of the split inputs (taken out of ``inputs``)."""
        if not self.splits:
            return None
        chips = self.binary.chips
        per_chip: dict[int, dict[int, np.ndarray]] = {c: {} for c in range(chips)}
        for position, split in self.splits.items():
            index = self.input_entries[position].index
            if index not in inputs:
                continue
            for c, piece in enumerate(split.pieces(inputs.pop(index))):
                per_chip[c][index] = contiguous(piece)
        return per_chip

    def read_output(self, position: int) -> Any:
        """Output ``position`` as the last untraced run left it in resident HBM."""
        return self._read(self.output_entries[position])

    def read_input(self, position: int) -> Any:
        """Input ``position``'s buffer in resident HBM: the value last written, or
        for an input donated to an output, what the last run wrote over it."""
        return self._read(self.input_entries[position])

    def _read(self, entry) -> Any:
        if self._resident is None:
            raise NovaRuntimeError("nothing is resident: run the program first")
        positions = [e.index for e in self.input_entries]
        position = positions.index(entry.index) if entry.index in positions else None
        if position in self.splits:
            # A split input: every chip's piece, put back together.
            pieces = [self._resident.read(entry.index, chip=c) for c in range(self.binary.chips)]
            self.traffic.host_read += entry.byte_size * self.binary.chips
            return to_tensor(entry, self.splits[position].join(pieces))
        self.traffic.host_read += entry.byte_size
        return to_tensor(entry, self._resident.read(entry.index))

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
        """Writes the binary and the bound parameters to one file (a zip archive;
        :func:`nova.runtime.archive.load` reads it)."""
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
            meta = {"format": _FORMAT, "params": len(self.params)}
            if self.binding is not None:
                meta["binding"] = self.binding.to_json()
            archive.writestr("meta.json", json.dumps(meta))
            archive.writestr("program.nova", self.binary_bytes)
            for i, param in enumerate(self.params):
                archive.writestr(f"param{i}.npy", npy_bytes(param))


def _load_single(archive: zipfile.ZipFile, meta: dict, path: Path,
                 import_types: bool) -> CompiledProgram:
    """The :class:`CompiledProgram` of an archive written by its ``save``."""
    count = meta.get("params")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ProgramArchiveError(f"{path}: meta.json 'params' must be a count of "
                                  f"parameters, got {count!r}")
    params = [read_npy(archive, f"param{i}.npy", path) for i in range(count)]
    binding = None
    if "binding" in meta:
        try:
            binding = CallBinding.from_json(meta["binding"], import_types)
        except NovaRuntimeError as error:
            raise ProgramArchiveError(f"{path}: {error}") from None
        except META_ERRORS as error:
            raise ProgramArchiveError(f"{path}: meta.json 'binding' is malformed: "
                                      f"{reason(error)}") from None
    binary = read_member(archive, "program.nova", path)
    with binary_errors(path, "program.nova"):
        program = CompiledProgram(binary, params, binding=binding)
    check_params(program.binary, program.params, path, "param{}.npy")
    return program


register(_FORMAT, _load_single)
