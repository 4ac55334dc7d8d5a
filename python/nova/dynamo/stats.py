"""``nova.dynamo.report()``: what each graph Dynamo handed to Nova did.

One row per graph (an aot_autograd forward and backward are two rows):
calls, the simulated time of all its calls, its compiles, cache hits in
memory and on disk, the bytes its programs wrote from and read to the host,
the tensors saved for the backward that stayed on the chip (kept by the
forward, copied in on the device by the backward), how many partitions ran
on Nova, and the ops that ran in eager (with why).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nova.runtime.traffic import Traffic


@dataclass
class GraphStats:
    """The counts of one Dynamo (or aot_autograd) graph since the process
    started or :func:`nova.dynamo.clear_cache`."""

    label: str
    kind: str
    calls: int = 0
    #: Simulated nanoseconds summed over every call (every partition's run).
    sim_ns: float = 0.0
    compiles: int = 0
    memory_hits: int = 0
    disk_hits: int = 0
    #: Partitions compiled for Nova (1 when the graph compiled whole).
    partitions: int = 0
    #: (op, reason) of each op that runs in eager inside a graph on Nova.
    eager_ops: list[tuple[str, str]] = field(default_factory=list)
    #: Why the whole graph runs in eager, or None.
    eager_reason: str | None = None
    #: What the graph's runs moved between the host and the chip and on the chip
    #: (saved tensors kept for the backward and copied into it); its device
    #: copies' simulated ns are included in ``sim_ns``.
    traffic: Traffic = field(default_factory=Traffic)

    def add_traffic(self, traffic: Traffic) -> None:
        """One run's :class:`nova.runtime.traffic.Traffic`."""
        self.traffic.add(traffic)
        self.sim_ns += traffic.device_ns

    @property
    def on_nova(self) -> bool:
        """Whether some of the graph ran on Nova."""
        return self.eager_reason is None and self.partitions > 0


@dataclass(frozen=True)
class Report:
    graphs: tuple[GraphStats, ...]

    def __str__(self) -> str:
        return format_report(self.graphs)

    def __iter__(self):
        return iter(self.graphs)

    def __len__(self) -> int:
        return len(self.graphs)

    def __getitem__(self, label: str) -> GraphStats:
        for graph in self.graphs:
            if graph.label == label:
                return graph
        raise KeyError(label)


def report(print_it: bool = False) -> Report:
    """Per graph: calls, simulated time, ops in eager, cache hits (memory / disk),
    host bytes in and out, saved tensors kept on the chip (training).
    ``str(report())`` is a table; ``print_it=True`` prints it too."""
    from nova.dynamo.cache import program_cache

    result = Report(tuple(program_cache().graphs.values()))
    if print_it:
        print(result)
    return result


def format_report(graphs) -> str:
    # Training graphs add the host bytes and the saved tensors kept on the chip.
    training = any(g.kind != "inference" for g in graphs)
    header = ("graph", "kind", "calls", "sim time", "compiles", "hits mem/disk",
              *(("host in/out", "saved on chip") if training else ()), "on Nova", "in eager")
    rows = [header]
    for g in graphs:
        if g.eager_reason is not None:
            where, eager = "-", f"whole graph: {g.eager_reason}"
        else:
            where = f"{g.partitions} partition{'s' if g.partitions != 1 else ''}"
            eager = ", ".join(op for op, _ in g.eager_ops) or "-"
        rows.append((g.label, g.kind, str(g.calls), _time(g.sim_ns), str(g.compiles),
                     f"{g.memory_hits}/{g.disk_hits}",
                     *((f"{_bytes(g.traffic.host_written)}/{_bytes(g.traffic.host_read)}", _on_chip(g))
                       if training else ()), where, eager))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1]
             for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def _on_chip(g: GraphStats) -> str:
    """A forward's kept tensors, a backward's bytes copied in on the device."""
    cells = []
    if g.traffic.kept:
        cells.append(f"{g.traffic.kept} kept, {_bytes(g.traffic.kept_bytes)}")
    if g.traffic.moved_bytes:
        cells.append(f"{_bytes(g.traffic.moved_bytes)} moved")
    if g.traffic.device_in:
        cells.append(f"{_bytes(g.traffic.device_in)} copied in")
    return "; ".join(cells) or "-"


def _bytes(n: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _time(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    return f"{ns / 1e3:.2f} us"
