"""A compiled program: a ``.nova`` binary plus the parameter values it was
compiled with, runnable on the simulator and returning torch tensors -- on one
chip or many: how a multi-chip program's tensors lie over its chips (its split
tables, :class:`~nova.runtime.mesh.MeshLayout`) is data it carries. Saved as an
archive (:mod:`nova.runtime.program_archive`; :mod:`nova.runtime.archive` reads
it back, and holds what every program kind's archive shares).

Works on the binary format alone (no compiler, no MLIR).
"""

from __future__ import annotations

import sys
import weakref
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from nova.binary.format import Binary, load_binary
from nova.errors import ParallelError
from nova.runtime.binding import CallBinding, ProgramInputError, call_with_binding
from nova.runtime.errors import NovaRuntimeError
from nova.runtime.host_values import (check_arity, contiguous, host_array, input_label, to_tensor,
                                      torch_dtype)
from nova.runtime.mesh import Mesh, MeshLayout, Shard
from nova.runtime.splits import ChipSplit, MeshSplit, as_split, local_shard
from nova.runtime.traffic import Traffic

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

    A ``layout`` (:class:`~nova.runtime.mesh.MeshLayout`, from a plan of
    ``nova.parallel``) places the program on a mesh: each parameter given
    whole is split into the pieces every chip binds (``chip_params``), each
    input is split by its placements (``splits`` is then derived from it)
    and each output put back together by its placements (an unplaced one is
    chip 0's).
    ``chip_params`` gives every chip's parameters directly instead of
    ``params`` (a saved program's pieces). ``state_names`` (which parameter
    is which state) and ``relayouts`` (states stored re-laid-out, by name:
    objects with ``dim`` and ``apply(tensor, chips)``) are what
    :meth:`load_state_dict` needs.

    ``zero`` and ``grad_shards`` say what a data-parallel training step holds
    split over its chips, for its memory report: the ZeRO stage, and the
    parameters whose gradients each chip holds ``1/chips`` of (ZeRO-2).
    """

    def __init__(self, binary: bytes, params: Sequence[np.ndarray] = (),
                 stages: Mapping[str, Any] | None = None, binding: CallBinding | None = None,
                 splits: Mapping[int, int | ChipSplit] | None = None, *,
                 output_splits: Mapping[int, int | ChipSplit] | None = None, zero: int = 0,
                 grad_shards: Sequence[str] = (), layout: MeshLayout | None = None,
                 chip_params: Sequence[Sequence[np.ndarray]] | None = None,
                 state_names: Sequence[str] | None = None,
                 relayouts: Mapping[str, Any] | None = None) -> None:
        self.binary_bytes = bytes(binary)
        self.binary: Binary = load_binary(self.binary_bytes)
        self.layout = layout
        chips = self.binary.chips
        if layout is not None and layout.mesh.size != chips:
            raise ParallelError(f"the layout's mesh {layout.mesh.shape} has {layout.mesh.size} "
                                f"chips, the binary {chips}")
        if chip_params is not None and len(params):
            raise ProgramInputError("give the parameters whole (params) or per chip "
                                    "(chip_params), not both")
        if chip_params is not None and (len(chip_params) != chips or
                                        len({len(ps) for ps in chip_params}) > 1):
            raise ProgramInputError(f"chip_params must give each of the {chips} chip(s) as "
                                    f"many parameters, got {[len(ps) for ps in chip_params]}")
        #: Each chip's bound parameters. Chips binding the same ones share one
        #: list (written to every chip at once).
        self.chip_params = (self._place(params, chips) if chip_params is None else
                            [[contiguous(np.asarray(p)) for p in ps] for ps in chip_params])
        self._per_chip = chip_params is not None or layout is not None
        self.binding = binding
        # As given: a compile's mapping prints a stage kept as bytecode on first read.
        self.stages = stages if stages is not None else {}
        inputs = sorted(self.binary.inputs, key=lambda e: e.index)
        if len(self.params) > len(inputs):
            raise ProgramInputError(
                f"{len(self.params)} parameters given but the binary has {len(inputs)} inputs")
        self.input_entries = inputs[len(self.params):]
        self.output_entries = sorted(self.binary.outputs, key=lambda e: e.index)
        if layout is not None and (splits or output_splits):
            raise ProgramInputError("a program with a layout splits its inputs and outputs "
                                    "by it: give no splits")
        self.splits = ({position: as_split(split, chips)
                        for position, split in (splits or {}).items()} if layout is None
                       else self._mesh_splits(layout.inputs))
        self.output_splits = ({position: as_split(split, chips)
                               for position, split in (output_splits or {}).items()}
                              if layout is None else self._mesh_splits(layout.outputs))
        self.state_names = None if state_names is None else list(state_names)
        self.relayouts = dict(relayouts or {})
        self.zero = zero
        self.grad_shards = tuple(grad_shards)
        self.report = None
        self._simulator = None
        self._resident = None
        self._params_written = False  # into the resident simulator's HBM
        self._timing = None
        #: Bytes moved by every run (:class:`~nova.runtime.traffic.Traffic`), and by the last.
        self.traffic = Traffic()
        self.last_traffic = Traffic()
        #: Untraced runs so far: a value kept in an output buffer is valid in its run's generation.
        self.generation = 0
        self._kept: list[weakref.ref] = []  # DeviceValues still in this program's output buffers

    def _place(self, params: Sequence[np.ndarray], chips: int) -> list[list[np.ndarray]]:
        """Every chip's pieces of the whole ``params``, by the layout's placements."""
        whole = [contiguous(np.asarray(p)) for p in params]
        if self.layout is None:
            return [whole] * chips
        mesh, table = self.layout.mesh, self.layout.params
        return [[local_shard(p, mesh, MeshLayout.of(table, i), chip) if MeshLayout.of(table, i)
                 else p for i, p in enumerate(whole)] for chip in range(chips)]

    def _mesh_splits(self, table: Sequence[Mapping[int, Any]]) -> dict[int, MeshSplit]:
        """The splits of the tensors a layout table places (positions with a Shard)."""
        return {position: MeshSplit(self.layout.mesh, placements)
                for position, placements in enumerate(table)
                if any(isinstance(p, Shard) for p in placements.values())}

    @property
    def params(self) -> list[np.ndarray]:
        """The bound parameters (chip 0's, on a mesh)."""
        return self.chip_params[0]

    @property
    def mesh(self) -> Mesh | None:
        """The mesh the program's layout places it on (None: no layout)."""
        return None if self.layout is None else self.layout.mesh

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
        if set(keep) & set(self.output_splits):
            raise ProgramInputError(f"keep= takes whole outputs; outputs "
                                    f"{sorted(set(keep) & set(self.output_splits))} are split "
                                    f"over the chips")
        traffic = Traffic()
        bind = trace
        if trace:
            # A traced run gets a simulator of its own (with a fresh timeline).
            simulator = Simulator(self.binary, trace=True)
        else:
            if self._resident is None:
                # Parameters stay in the simulated HBM between calls, as on a
                # device; each call writes only the inputs.
                self._resident = Simulator(self.binary, resident=True)
            bind = not self._params_written  # again after load_state_dict
            self._params_written = True
            simulator = self._resident
            self._move_kept(traffic)  # this run overwrites the output buffers
            self.generation += 1
        chips = self.binary.chips
        sizes = {e.index: e.byte_size for e in sorted(self.binary.inputs, key=lambda e: e.index)}
        if bind and not self._per_chip:
            inputs.update(enumerate(self.params))
        written = set(inputs) | (set(range(len(self.params))) if bind and self._per_chip else set())
        traffic.host_written += sum(sizes[i] for i in written) * chips
        read = range(len(self.output_entries)) if read is None else read
        wanted = [self.output_entries[i].index for i in read if i not in keep]
        per_chip = self._split(inputs)
        if bind and self._per_chip:
            per_chip = per_chip or {c: {} for c in range(chips)}
            for c, params in enumerate(self.chip_params):
                per_chip[c].update(enumerate(params))
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
            split = self.output_splits.get(position)
            if value is not None and split is not None:
                value = split.join([c[entry.index] for c in outputs["chips"]])
            if value is not None:
                traffic.host_read += entry.byte_size * (1 if split is None else split.count)
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
        return self._read(self.output_entries[position], self.output_splits.get(position))

    def read_input(self, position: int) -> Any:
        """Input ``position``'s buffer in resident HBM: the value last written, or
        for an input donated to an output, what the last run wrote over it."""
        return self._read(self.input_entries[position], self.splits.get(position))

    def _read(self, entry, split: ChipSplit | None) -> Any:
        if self._resident is None:
            raise NovaRuntimeError("nothing is resident: run the program first")
        if split is not None:
            # Split over the chips: every chip's piece, put back together.
            pieces = [self._resident.read(entry.index, chip=c) for c in range(self.binary.chips)]
            self.traffic.host_read += entry.byte_size * self.binary.chips
            return to_tensor(entry, split.join(pieces))
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

    def concurrency(self) -> str:
        """How far the engines of the last traced run overlapped: each engine's
        busy time, the part no other engine overlapped, and the time k engines
        were busy at once (:mod:`nova.sim.concurrency`)."""
        from nova.sim.concurrency import format_concurrency

        if self._simulator is None or self._simulator.trace is None:
            raise NovaRuntimeError("no trace recorded: call run(..., trace=True) first")
        return format_concurrency(self._simulator.concurrency())

    # State -------------------------------------------------------------------------------
    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Writes the user's state (``model.state_dict()``: tensors by state
        name, in the user's layout) into every chip's parameters: re-laid out
        where the program stores a state so (``relayouts``, e.g. a fused QKV
        grouped per chip), then split by its placements. States not named
        keep their values; the next run writes them to the device."""
        names = self.state_names
        if names is None:
            raise ParallelError("load_state_dict needs the program's state names, which "
                                "compile_parallel records (a loaded program has none)")
        unknown = sorted(set(state) - set(names))
        if unknown:
            raise ParallelError(f"{unknown} are not states of the program")
        mesh = self.mesh
        table = () if self.layout is None else self.layout.params
        for name, value in state.items():
            i = names.index(name)
            placements = MeshLayout.of(table, i)
            tensor = value.detach() if hasattr(value, "detach") else value
            if name in self.relayouts:
                layout = self.relayouts[name]
                chips = 1  # over the axes that split the re-laid-out dimension
                for axis, placement in placements.items():
                    if isinstance(placement, Shard) and placement.dim == layout.dim:
                        chips *= mesh.shape[axis]
                tensor = layout.apply(tensor, chips)
            array = contiguous(np.asarray(tensor))
            expected = self.params[i]
            full = (MeshSplit(mesh, placements).global_shape(expected.shape) if placements
                    else list(expected.shape))
            if list(array.shape) != full or array.dtype != expected.dtype:
                raise ParallelError(f"{name} must be {expected.dtype.name}{full} as "
                                    f"compiled, got {array.dtype.name}{list(array.shape)}")
            for chip, params in enumerate(self.chip_params):
                params[i] = contiguous(local_shard(array, mesh, placements, chip)
                                       if placements else array)
        self._params_written = False

    # Saving ------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Writes the binary, the bound parameters, the layout and the call
        signature to one file (a zip archive; :func:`nova.load` reads it)."""
        from nova.runtime.program_archive import save_program

        save_program(self, path)
