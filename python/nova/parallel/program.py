"""A partitioned program: one SPMD binary plus every chip's parameter shards."""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from nova.parallel.errors import ParallelError
from nova.parallel.mesh import Mesh
from nova.parallel.placements import Partial, Placement, Replicate, Shard
from nova.parallel.shards import assemble, local_shard
from nova.binary.format import load_binary
from nova.archive_kinds import register
from nova.runtime.archive import (MEMBER_ERRORS, META_ERRORS, check_params, npy_bytes, read_member,
                                  reason)
from nova.runtime.binding import CallBinding, call_with_binding
from nova.runtime.errors import BinaryFormatError, NovaRuntimeError, ProgramArchiveError
from nova.runtime.host_values import check_arity, contiguous, host_array, input_label, to_tensor


class ParallelProgram:
    """``program(*args, **kwargs)`` runs the SPMD binary on every chip of the
    mesh, each with its own parameter shards. Inputs are split over the chips
    by ``input_placements`` (replicated when not given) and outputs put back
    together by ``output_placements`` (replicated: chip 0's).

    With a ``binding`` (``compile_parallel`` records the exported program's)
    a call takes the model's own arguments, positional or keyword, and
    returns the model's own output structure, as a single-chip
    ``CompiledProgram`` does; without one it takes the binary's inputs in
    order and returns one tensor or a tuple.

    ``state_names`` (which ``chip_params`` entry is which state),
    ``state_placements`` (their placements) and ``relayouts`` (the states
    stored re-laid-out, ``TorchParallelPlan.relayouts``) are what
    :meth:`load_state_dict` needs; ``compile_parallel`` gives them (they are
    not saved)."""

    def __init__(self, binary: bytes, chip_params: Sequence[Sequence[np.ndarray]],
                 stages: dict | None = None, *, mesh: Mesh | None = None,
                 input_placements: Sequence[Mapping[int, Placement]] = (),
                 output_placements: Sequence[Mapping[int, Placement]] = (),
                 binding: CallBinding | None = None,
                 state_names: Sequence[str] | None = None,
                 state_placements: Sequence[Mapping[int, Placement]] = (),
                 relayouts: Mapping[str, Any] | None = None) -> None:
        self.binary_bytes = bytes(binary)
        self.binary = load_binary(self.binary_bytes)
        self.chip_params = [[contiguous(np.asarray(p)) for p in params]
                            for params in chip_params]
        self.stages = dict(stages or {})
        self.mesh = mesh
        self.binding = binding
        self.input_placements = list(input_placements)
        self.output_placements = list(output_placements)
        self.state_names = None if state_names is None else list(state_names)
        self.state_placements = list(state_placements)
        self.relayouts = dict(relayouts or {})
        count = len(self.chip_params[0]) if self.chip_params else 0
        inputs = sorted(self.binary.inputs, key=lambda e: e.index)
        self.input_entries = inputs[count:]
        self.output_entries = sorted(self.binary.outputs, key=lambda e: e.index)
        self.report = None
        self._traced = None
        self._simulators: dict[bool, Any] = {}  # untraced, by functional

    def _full_shape(self, local: Sequence[int], placements: Mapping[int, Placement]
                    ) -> tuple[int, ...]:
        """The whole input's shape from a chip's piece of it."""
        shape = list(local)
        if self.mesh is not None:
            for axis, placement in placements.items():
                if isinstance(placement, Shard) and placement.dim < len(shape):
                    shape[placement.dim] *= self.mesh.shape[axis]
        return tuple(shape)

    def _placement(self, placements: Sequence[Mapping[int, Placement]], i: int):
        return placements[i] if i < len(placements) else {}

    def _simulator(self, functional: bool) -> Any:
        """One untraced simulator per mode, kept across runs: later runs replay
        the instruction streams the first one walked (nova.sim.stream)."""
        from nova.sim import Simulator

        if functional not in self._simulators:
            self._simulators[functional] = Simulator(self.binary, functional=functional)
        return self._simulators[functional]

    def run(self, *args: Any, trace: bool = False, timing_only: bool = False) -> list[Any]:
        """Runs every chip; ``trace=True`` records a Chrome/Perfetto timeline
        (one process per chip) for :meth:`write_trace`. ``timing_only=True``
        simulates shapes and costs only (no numbers, no simulated memory: a
        model too large to compute still gets its times); it takes no inputs,
        returns ``[]`` and sets ``report``."""
        from nova.sim import Simulator

        if timing_only:
            simulator = (Simulator(self.binary, functional=False, trace=True) if trace
                         else self._simulator(functional=False))
            _, self.report = simulator.run({})
            self._traced = simulator if trace else None
            return []

        check_arity(len(self.input_entries), args)
        names = ([leaf.name for leaf in self.binding.tensor_inputs]
                 if self.binding is not None else [])
        per_chip = {chip: dict(enumerate(params)) for chip, params in enumerate(self.chip_params)}
        for i, (entry, arg) in enumerate(zip(self.input_entries, args)):
            placements = self._placement(self.input_placements, i)
            array = host_array(input_label(names, i), arg, entry,
                               self._full_shape(entry.shape, placements))
            for chip in per_chip:
                per_chip[chip][entry.index] = (
                    local_shard(array, self.mesh, placements, chip)
                    if placements and self.mesh is not None else array)
        simulator = Simulator(self.binary, trace=True) if trace else self._simulator(functional=True)
        outputs, report = simulator.run({}, per_chip=per_chip)
        self.report = report
        self._traced = simulator if trace else None
        chips = outputs.get("chips", [outputs])
        results = []
        for i, e in enumerate(self.output_entries):
            placements = self._placement(self.output_placements, i)
            if placements and self.mesh is not None:
                value = assemble([np.array(c[e.index]) for c in chips], self.mesh, placements)
            else:
                value = np.array(outputs.get(e.index, outputs.get(e.name)))
            results.append(to_tensor(e, value))
        return results

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Writes the user's state (``model.state_dict()``: tensors by state
        name, in the user's layout) into every chip's shards: re-laid out
        where the plan stores a state so (``relayouts``, e.g. a fused QKV
        grouped per chip), then split by its placements. States not named
        keep their values. Needs ``state_names`` (given by compile_parallel)."""
        names = self.state_names
        if names is None:
            raise ParallelError("load_state_dict needs the program's state names, which "
                                "compile_parallel records (a loaded program has none)")
        unknown = sorted(set(state) - set(names))
        if unknown:
            raise ParallelError(f"{unknown} are not states of the program")
        relayouts = self.relayouts
        for name, value in state.items():
            i = names.index(name)
            placements = self.state_placements[i]
            tensor = value.detach() if hasattr(value, "detach") else value
            if name in relayouts:
                layout = relayouts[name]
                chips = 1  # over the axes that split the re-laid-out dimension
                for axis, placement in placements.items():
                    if isinstance(placement, Shard) and placement.dim == layout.dim:
                        chips *= self.mesh.shape[axis]
                tensor = layout.apply(tensor, chips)
            array = contiguous(np.asarray(tensor))
            expected = self.chip_params[0][i]
            full = self._full_shape(expected.shape, placements)
            if tuple(array.shape) != full or array.dtype != expected.dtype:
                raise ParallelError(f"{name} must be {expected.dtype.name}{list(full)} as "
                                    f"compiled, got {array.dtype.name}{list(array.shape)}")
            for chip, params in enumerate(self.chip_params):
                params[i] = contiguous(local_shard(array, self.mesh, placements, chip)
                                        if placements else array)

    def write_trace(self, path) -> None:
        """Writes the last traced run's timeline (``run(..., trace=True)``)."""
        if self._traced is None:
            raise ParallelError("no trace recorded: call run(..., trace=True) first")
        self._traced.write_trace(path)

    def save(self, path: str | Path) -> None:
        """Writes the binary, every chip's parameters, the mesh, the I/O
        placements and the call signature to one file (a zip archive; :func:`nova.load` reads it)."""
        meta = {"format": FORMAT, "chips": len(self.chip_params),
                "params": [len(p) for p in self.chip_params],
                "mesh": None if self.mesh is None else
                {"shape": list(self.mesh.shape), "names": list(self.mesh.axis_names)},
                "inputs": [_placements_to_json(p) for p in self.input_placements],
                "outputs": [_placements_to_json(p) for p in self.output_placements]}
        if self.binding is not None:
            meta["binding"] = self.binding.to_json()
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
            archive.writestr("meta.json", json.dumps(meta))
            archive.writestr("program.nova", self.binary_bytes)
            for chip, params in enumerate(self.chip_params):
                for i, param in enumerate(params):
                    archive.writestr(f"chip{chip}/param{i}.npy", npy_bytes(param))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return call_with_binding(self.binding, self.run, args, kwargs)


FORMAT = "nova-parallel-program/1"


def _placements_to_json(placements: Mapping[int, Placement]) -> dict[str, list]:
    def one(p: Placement) -> list:
        if isinstance(p, Shard):
            return ["shard", p.dim]
        return ["partial"] if isinstance(p, Partial) else ["replicate"]
    return {str(axis): one(p) for axis, p in placements.items()}


def _placements_from_json(data: Mapping[str, list]) -> dict[int, Placement]:
    def one(p: list) -> Placement:
        kind = p[0]
        if kind == "shard":
            return Shard(int(p[1]))
        return Partial() if kind == "partial" else Replicate()
    return {int(axis): one(p) for axis, p in data.items()}


def load_parallel(archive: zipfile.ZipFile, meta: Mapping[str, Any]) -> ParallelProgram:
    """The :class:`ParallelProgram` of an archive written by its ``save``."""
    chip_params = [[np.load(io.BytesIO(archive.read(f"chip{chip}/param{i}.npy")),
                            allow_pickle=False) for i in range(count)]
                   for chip, count in enumerate(meta["params"])]
    mesh = Mesh(tuple(meta["mesh"]["shape"]), tuple(meta["mesh"]["names"])) \
        if meta.get("mesh") else None
    binding = CallBinding.from_json(meta["binding"]) if "binding" in meta else None
    return ParallelProgram(archive.read("program.nova"), chip_params, mesh=mesh,
                           input_placements=[_placements_from_json(p) for p in meta["inputs"]],
                           output_placements=[_placements_from_json(p)
                                              for p in meta["outputs"]],
                           binding=binding)


def _load_archive(archive: zipfile.ZipFile, meta: Mapping[str, Any], path: Path,
                  import_types: bool) -> ParallelProgram:
    """``nova.load``'s loader of this kind (:mod:`nova.archive_kinds`): checks
    the members :func:`load_parallel` reads, then each chip's parameters
    against the binary."""
    read_member(archive, "program.nova", path)  # present and intact
    counts = meta.get("params")
    if not isinstance(counts, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
        raise ProgramArchiveError(f"{path}: meta.json 'params' must list each chip's "
                                  f"number of parameters, got {counts!r}")
    present = set(archive.namelist())
    for chip, count in enumerate(counts):
        for name in (f"chip{chip}/param{i}.npy" for i in range(count)):
            if name not in present:
                raise ProgramArchiveError(f"{path}: member '{name}' is missing")
    try:
        with warnings.catch_warnings():  # its np.load of headers judged by nova.load
            warnings.simplefilter("ignore")
            program = load_parallel(archive, meta)
    except BinaryFormatError as error:  # from the binary inside
        raise BinaryFormatError(f"{path}: program.nova: {error}") from None
    except NovaRuntimeError as error:
        raise ProgramArchiveError(f"{path}: {error}") from None
    except MEMBER_ERRORS + META_ERRORS as error:
        raise ProgramArchiveError(f"{path}: malformed multi-chip program: "
                                  f"{reason(error)}") from None
    chips = program.binary.chips
    if len(program.chip_params) != chips:
        raise ProgramArchiveError(f"{path}: meta.json lists parameters for "
                                  f"{len(program.chip_params)} chip(s), the binary "
                                  f"has {chips}")
    for chip, params in enumerate(program.chip_params):
        check_params(program.binary, params, path, f"chip{chip}/param{{}}.npy",
                      len(program.chip_params[0]))
    return program


register(FORMAT, _load_archive)
