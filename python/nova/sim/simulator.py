"""``Simulator(binary).run(inputs) -> (outputs, Report)``: the simulator's entry point."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
from threadpoolctl import threadpool_limits

from nova.binary import opcodes as oc
from .engines import Machine
from .errors import InputError
from .memory import ChipMemory, check_host_memory
from .numerics import bf16_bits_to_f32, f32_to_bf16_bits
from .program import IOEntry, Program, program_from_binary
from .stats import Report, build_report
from .trace import TraceRecorder
from .watchdog import Budget

#: numpy dtype of each I/O element type (index as in IO_DTYPES; bf16 handled apart).
_NP = (np.dtype("<f4"), None, np.dtype("<f2"), np.dtype("<f8"), np.dtype("<i8"), np.dtype("<i4"),
       np.dtype("<i2"), np.dtype("i1"), np.dtype("bool"))


#: On-chip memories up to this size are allocated whole before a run.
_PRESIZE_LIMIT = 1 << 28


class DeviceBytes:
    """An input's bytes as they already sit in simulated device memory (read by
    :meth:`Simulator.read_raw`, e.g. from another program's HBM): written to the
    input's buffer as they are, with no host encoding."""

    __slots__ = ("raw",)

    def __init__(self, raw: np.ndarray) -> None:
        self.raw = raw


def device_copy_ns(target: Any, nbytes: int) -> float:
    """Simulated time of an HBM-to-HBM copy of ``nbytes`` contiguous bytes on one
    chip, as a ``dma_copy`` costs it (docs/isa.md 2.2): the DMA setup, then the
    read and the write (whole bursts) sharing the HBM port."""
    burst = target.timing["hbm_burst_bytes"]
    moved = -(-nbytes // burst) * burst
    return target.dma_setup_ns + 2 * moved / target.hbm_gbps


class Simulator:
    """Runs a program (a loaded binary or a :class:`Program`) on every chip of its target.

    functional=False runs the timing model only: shapes and costs, no numbers
    computed and no memory allocated (no HBM, SRAM or accumulator buffers; memory
    bounds are still checked), for models and meshes too large to compute. Inputs
    may be left out (given ones are still checked against the I/O table) and no
    outputs are returned. Simulated times equal the functional mode's, except for
    instructions whose cost depends on the data: ``dma_gather`` / ``dma_scatter``
    pay one run setup per run of consecutive positions, which a timing-only run
    cannot see; it assumes one run per row of the index tile and lists those
    instructions in ``report.data_dependent``. ``vassert`` checks nothing in this
    mode.
    trace=True records a Chrome/Perfetto timeline, see :meth:`write_trace`.
    resident=True keeps every chip's memories between runs, as a device keeps
    its weights in HBM: a later run need only pass the inputs that changed.
    max_instructions (dynamic instructions per chip) and max_time_s (simulated
    seconds) are each run's watchdog budget (:mod:`nova.sim.watchdog`; default: the
    knobs ``NOVA_SIM_MAX_INSTRUCTIONS`` / ``NOVA_SIM_MAX_TIME_S``, else 10^9 and 10 s):
    a run that goes past one raises BudgetExceededError naming the loop.
    """

    def __init__(self, binary: Any, *, functional: bool = True, trace: bool = False,
                 resident: bool = False, max_instructions: int | None = None,
                 max_time_s: float | None = None) -> None:
        self.budget = Budget.from_settings(max_instructions, max_time_s)
        if isinstance(binary, (str, Path, bytes, bytearray)):
            from nova.binary.format import load_binary  # the reader: no MLIR, no compiler
            binary = load_binary(binary)
        self.program: Program = program_from_binary(binary)
        self.target = self.program.target
        self.functional = functional
        if functional:  # refuse before allocating (nova.sim.memory's host limit)
            check_host_memory(self.program, _PRESIZE_LIMIT)
        self.trace = TraceRecorder() if trace else None
        self.time_ns: float | None = None  # the last run's simulated time
        if self.trace is not None:
            self.trace.locations = {c: dict(code.debug) for c, code in enumerate(self.program.chips)}
        self.resident = resident
        self._memories: list[ChipMemory] | None = None
        self._loaded: set[int] = set()  # inputs already in the resident memories

    # I/O ---------------------------------------------------------------------------------
    def _entry(self, key: int | str) -> IOEntry:
        for e in self.program.io:
            if e.role == "input" and (e.index == key or e.name == key):
                return e
        names = [f"{e.index} ({e.name})" for e in self.program.io if e.role == "input"]
        raise InputError(f"no input {key!r} in the I/O table; inputs are: {', '.join(names) or 'none'}")

    @staticmethod
    def _encode(e: IOEntry, value: Any) -> np.ndarray:
        if isinstance(value, DeviceBytes):
            if value.raw.nbytes != e.nbytes:
                raise InputError(f"input {e.index} ('{e.name}') takes {e.nbytes} bytes, "
                                 f"the device buffer given holds {value.raw.nbytes}")
            return value.raw
        arr = np.asarray(value.detach().cpu().numpy() if hasattr(value, "detach") else value)
        if tuple(arr.shape) != tuple(e.shape):
            raise InputError(f"input {e.index} ('{e.name}') must have shape {list(e.shape)}, got {list(arr.shape)}")
        want = e.dtype_name
        if e.dtype == oc.BF16:
            if arr.dtype not in (np.float32, np.float64, np.uint16) and str(arr.dtype) != "bfloat16":
                raise InputError(f"input {e.index} ('{e.name}') must be {want} (given as float32), got {arr.dtype}")
            if arr.dtype == np.uint16:
                return arr
            return f32_to_bf16_bits(arr.astype(np.float32))
        if arr.dtype != _NP[e.dtype]:
            raise InputError(f"input {e.index} ('{e.name}') must be {want}, got {arr.dtype}")
        return np.ascontiguousarray(arr).view(np.uint8) if arr.dtype == np.bool_ else np.ascontiguousarray(arr)

    @staticmethod
    def _decode(e: IOEntry, raw: np.ndarray) -> np.ndarray:
        if e.dtype == oc.BF16:
            return bf16_bits_to_f32(raw.view(np.uint16)).reshape(e.shape)
        return raw.view(_NP[e.dtype]).reshape(e.shape).copy()

    # Run ---------------------------------------------------------------------------------
    def run(self, inputs: Mapping[int | str, Any] | None = None,
            per_chip: Mapping[int, Mapping[int | str, Any]] | None = None,
            read: Iterable[int] | None = None
            ) -> tuple[dict[int | str, np.ndarray], Report]:
        """Writes constants and inputs to every chip's HBM, runs all chips, reads outputs.

        ``inputs`` go to every chip; ``per_chip[c]`` overrides them for chip ``c``.
        Outputs are keyed by I/O index and name, read from chip 0; with several chips
        ``outputs["chips"]`` holds every chip's outputs (a list of dicts by index).
        ``read`` (I/O indices) limits the outputs read back; a resident simulator's
        others stay in HBM (:meth:`read`).
        """
        # Tiles are small: one BLAS thread is ~10x faster than a contended pool.
        # The cyclic GC is paused: a run allocates many short-lived objects (events,
        # dispatched instructions) and holds none in cycles, so collections would only
        # rescan the decoded program again and again.
        paused = gc.isenabled()
        gc.disable()
        try:
            with threadpool_limits(limits=1):
                return self._run(inputs, per_chip, None if read is None else set(read))
        finally:
            if paused:
                gc.enable()

    def read(self, index: int, chip: int = 0) -> np.ndarray:
        """The current value of I/O entry ``index`` in the resident HBM of
        ``chip``: an output after the run, or an input (a donated input holds
        the output written over it)."""
        if self._memories is None:
            raise InputError("nothing is resident: run the program first")
        for e in self.program.io:
            if e.index == index:
                return self._decode(e, self._memories[chip].spaces[0].read_bytes(e.address, e.nbytes))
        raise InputError(f"no I/O entry {index}")

    def read_raw(self, index: int, chip: int = 0) -> np.ndarray:
        """The bytes of I/O entry ``index`` in the resident HBM of ``chip``, as
        stored (no decoding): what a device-to-device copy moves."""
        if self._memories is None:
            raise InputError("nothing is resident: run the program first")
        for e in self.program.io:
            if e.index == index:
                return self._memories[chip].spaces[0].read_bytes(e.address, e.nbytes)
        raise InputError(f"no I/O entry {index}")

    def _run(self, inputs: Mapping[int | str, Any] | None,
             per_chip: Mapping[int, Mapping[int | str, Any]] | None,
             read: set[int] | None = None
             ) -> tuple[dict[int | str, np.ndarray], Report]:
        tg = self.target
        inputs = dict(inputs or {})
        per_chip = {c: dict(v) for c, v in (per_chip or {}).items()}
        encoded: dict[int, dict[int, np.ndarray]] = {}
        given = {self._entry(k).index: (k, v) for k, v in inputs.items()}
        for c in range(tg.chips):
            mine = dict((self._entry(k).index, v) for k, v in per_chip.get(c, {}).items())
            enc = {}
            for e in self.program.io:
                if e.role != "input":
                    continue
                if e.index in mine:
                    enc[e.index] = self._encode(e, mine[e.index])
                elif e.index in given:
                    enc[e.index] = self._encode(e, given[e.index][1])
                elif self.functional and e.index not in self._loaded:
                    raise InputError(f"input {e.index} ('{e.name}') was not given")
            encoded[c] = enc
        mems = None
        if self.functional:
            if self._memories is not None:
                mems = self._memories
                io = {e.index: e for e in self.program.io}
                for c in range(tg.chips):
                    for idx, arr in encoded[c].items():
                        mems[c].spaces[0].write_bytes(io[idx].address, arr)
            else:
                mems = []
                for c in range(tg.chips):
                    m = ChipMemory(c, tg.hbm_bytes, tg.sram_bytes, tg.acc_bytes)
                    hbm = m.spaces[0]
                    m.presize(self.program, _PRESIZE_LIMIT)  # I/O, constants, SRAM, acc
                    for k in self.program.constants:
                        hbm.write_bytes(k.address, k.data)
                    io = {e.index: e for e in self.program.io}
                    for idx, arr in encoded[c].items():
                        hbm.write_bytes(io[idx].address, arr)
                    mems.append(m)
            if self.resident:
                self._memories = mems
                self._loaded.update(i for enc in encoded.values() for i in enc)
        machine = Machine(self.program, mems, self.trace, self.budget)
        t = machine.run()
        report = build_report(machine, t)
        self.time_ns = report.time_ns
        outputs: dict[Any, Any] = {}
        if mems is not None:
            chips_out = []
            for c in range(tg.chips):
                out: dict[int | str, np.ndarray] = {}
                for e in self.program.io:
                    if e.role == "output" and (read is None or e.index in read):
                        raw = mems[c].spaces[0].read_bytes(e.address, e.nbytes)
                        out[e.index] = self._decode(e, raw)
                        if e.name:
                            out[e.name] = out[e.index]
                chips_out.append(out)
            outputs = dict(chips_out[0])
            if tg.chips > 1:
                outputs["chips"] = chips_out
        self.machine = machine
        return outputs, report

    def critical_path(self):
        """The critical path through the engines of the last traced run
        (:mod:`nova.sim.critical_path`)."""
        from .critical_path import critical_path

        if self.trace is None:
            raise ValueError("the critical path needs a traced run: Simulator(..., trace=True)")
        return critical_path(self.trace)

    def concurrency(self):
        """Per chip, how far the engines of the last traced run overlapped
        (:mod:`nova.sim.concurrency`)."""
        from .concurrency import concurrency

        if self.trace is None or self.time_ns is None:
            raise ValueError("engine concurrency needs a traced run: Simulator(..., trace=True)")
        return concurrency(self.trace, self.time_ns)

    def write_trace(self, path: str | Path) -> None:
        if self.trace is None:
            raise ValueError("construct the Simulator with trace=True to record a timeline")
        self.trace.write(path)
