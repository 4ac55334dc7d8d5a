"""The run report: simulated time, engine utilisation, bytes moved, FLOPs, the bound
from the work (per chip, each term), and per-instruction busy time for the profile."""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

from nova.binary import opcodes as oc
from .engines import Machine
from .overlap import CollectiveOverlap, chip_overlap
from .report_work import instruction_work


@dataclass(frozen=True)
class EngineStats:
    chip: int
    engine: str
    instructions: int
    busy_ns: float
    utilisation: float


@dataclass(frozen=True)
class ChipBound:
    """The bound from the work of one chip: the time no schedule can beat.

    ``bound_ns = max(matrix_ns, vector_ns, activation_ns, hbm_ns)``:
    matrix_ns  matrix FLOPs (``2 M K N`` of every matmul executed, loop trip counts
               included) at the matrix peak of their dtype;
    vector_ns  vector element-ops at the ISA's per-kind cost (``E * c / lanes``
               cycles, see :class:`nova.sim.report_work.Work`);
    activation_ns  the element-ops the compiler placed on the activation engine, at
               its cost (0 on a target without one): with two elementwise engines the
               bound holds for the placement the program has;
    hbm_ns     compulsory HBM bytes over HBM bandwidth: every input (parameters
               included), output and constant of the I/O table moved once.
    hbm_bytes is the HBM traffic the program actually made, for comparison.
    """

    chip: int
    matrix_ns: float
    vector_ns: float
    hbm_ns: float
    matrix_flops: float
    vector_ops: float
    compulsory_bytes: float
    hbm_bytes: float
    activation_ns: float = 0.0

    @property
    def bound_ns(self) -> float:
        return max(self.matrix_ns, self.vector_ns, self.activation_ns, self.hbm_ns)

    @property
    def limiter(self) -> str:
        """The term that sets the bound: ``matrix``, ``vector``, ``activation`` or ``hbm``."""
        terms = {"matrix": self.matrix_ns, "vector": self.vector_ns, "hbm": self.hbm_ns}
        if self.activation_ns:
            terms["activation"] = self.activation_ns
        return max(terms, key=terms.__getitem__)


@dataclass(frozen=True)
class InstrStat:
    """One static instruction of one chip: how often it completed, its engine busy
    time in all, its work (all executions) and its DEBUG-section location.

    An instruction inside a loop over layers (:mod:`nova.sim.layers`) has one
    entry per layer instead: ``layer`` is its number and ``location`` names that
    layer's module (``... in blocks.1.attn``); ``count``, ``busy_ns`` and the work
    are what that layer's executions measured. ``layer`` is -1 elsewhere."""

    chip: int
    pc: int
    name: str
    engine: str
    location: str | None
    count: int
    busy_ns: float
    matrix_flops: float
    matrix_ns: float
    vector_ops: float
    vector_ns: float
    bytes: float
    hbm_bytes: float
    layer: int = -1
    activation_ns: float = 0.0  # work on the activation engine (vector_ns is 0 then)


@dataclass(frozen=True)
class Report:
    """What one simulated run cost.

    time_ns: simulated time until the last chip finished.
    roofline_ns: the worst chip's bound from the work (:class:`ChipBound`; each term
    per chip in ``bounds``); roofline_fraction = roofline_ns / time_ns.
    flops: matrix FLOPs plus vector element-ops, all chips.
    timing_only: the run computed no numbers (``Simulator(..., functional=False)``).
    data_dependent: instructions whose cost depends on the data (``dma_gather`` /
    ``dma_scatter``: one ``RUN_SETUP`` per run of consecutive positions), e.g.
    ``"chip 0 instruction 12 (dma_gather at model.py:7:9)"``; a timing-only run
    cannot see the positions and assumes every row of the index tile (its last
    dimension) is one run, so its time may differ from the functional run's.
    instr_stats: per chip and instruction, engine busy time and work
    (see :meth:`profile`).
    overlap: per chip (runs with collectives only), the collective queue's busy
    time and the part of it hidden behind the chip's other engines
    (:mod:`nova.sim.overlap`); :attr:`collective_hidden_fraction` sums them.
    """

    time_ns: float
    engines: tuple[EngineStats, ...]
    memory_bytes: dict[str, float]
    link_bytes: dict[str, float]
    link_utilisation: dict[str, float]
    flops: float
    roofline_ns: float
    instructions: int
    collectives: tuple[tuple[str, str, float], ...] = field(default=())
    bounds: tuple[ChipBound, ...] = field(default=())
    timing_only: bool = False
    data_dependent: tuple[str, ...] = field(default=())
    instr_stats: tuple[InstrStat, ...] = field(default=(), repr=False)
    hbm_gbps: float = 0.0
    overlap: tuple[CollectiveOverlap, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.time_ns < 0:
            raise ValueError("time_ns must be >= 0")

    @property
    def roofline_fraction(self) -> float:
        return self.roofline_ns / self.time_ns if self.time_ns > 0 else 0.0

    @property
    def collective_hidden_fraction(self) -> float:
        """Of all chips' collective time, the fraction spent while another engine
        of the same chip was busy (0 without collectives)."""
        total = sum(o.collective_ns for o in self.overlap)
        return sum(o.hidden_ns for o in self.overlap) / total if total > 0 else 0.0

    @property
    def time_s(self) -> float:
        return self.time_ns * 1e-9

    def busy(self, engine: str, chip: int | None = None) -> float:
        """Total busy ns of queues named ``engine`` (``dma`` sums all dma queues)."""
        return sum(e.busy_ns for e in self.engines if (chip is None or e.chip == chip)
                   and (e.engine == engine or (engine == "dma" and e.engine.startswith("dma"))))

    @property
    def busy_ns(self) -> float:
        """Busy time of every engine queue of every chip, summed."""
        return sum(e.busy_ns for e in self.engines)

    def bound(self, chip: int | None = None) -> ChipBound:
        """The bound of ``chip``, or of the chip with the largest bound."""
        if chip is not None:
            return next(b for b in self.bounds if b.chip == chip)
        return max(self.bounds, key=lambda b: b.bound_ns)

    def profile(self, by: str = "line", top: int | None = 20) -> str:
        """A ``torch.profiler``-style table of simulated busy time per source line
        (``by="line"``, the model's frame), per innermost frame (``"op"``), per instruction (``"instruction"``) or per opcode
        (``"opcode"``), top-N by time; see :mod:`nova.sim.report_profile`."""
        from .report_profile import format_profile, profile_rows

        return format_profile(profile_rows(self, by), top, by, total_ns=self.busy_ns)

    def summary(self) -> str:
        lines = [f"simulated time   {self.time_ns / 1e3:12.3f} us   ({self.instructions} instructions)",
                 f"FLOPs            {self.flops:14.4g}",
                 f"roofline         {self.roofline_ns / 1e3:12.3f} us   ({100 * self.roofline_fraction:.1f}% of roofline)"]
        if self.timing_only:
            lines.append("timing only      (no numbers computed)")
        if self.data_dependent:
            lines.append(f"data-dependent   {len(self.data_dependent)} instruction(s) whose cost depends on "
                         f"the data, e.g. {self.data_dependent[0]}"
                         + ("; timing-only assumes one run per index row" if self.timing_only else ""))
        if self.overlap:
            c = sum(o.collective_ns for o in self.overlap)
            h = sum(o.hidden_compute_ns for o in self.overlap)
            lines.append(f"collectives      {c / 1e3:12.3f} us busy on all chips, "
                         f"{100 * self.collective_hidden_fraction:.1f}% hidden behind other work "
                         f"({100 * h / c if c else 0:.1f}% behind matrix/vector)")
        for b in self.bounds:
            lines.append(f"chip {b.chip} bound     {b.bound_ns / 1e3:10.3f} us ({b.limiter}): matrix "
                         f"{b.matrix_ns / 1e3:.3f} us, vector {b.vector_ns / 1e3:.3f} us, "
                         + (f"activation {b.activation_ns / 1e3:.3f} us, " if b.activation_ns else "") +
                         f"hbm "
                         f"{b.hbm_ns / 1e3:.3f} us ({b.compulsory_bytes:.4g} B compulsory, "
                         f"{b.hbm_bytes:.4g} B moved)")
        for k, v in sorted(self.memory_bytes.items()):
            lines.append(f"{k:16s} {v:14.4g} B")
        for e in self.engines:
            if e.instructions:
                lines.append(f"chip {e.chip} {e.engine:11s} {e.instructions:8d} instr  busy {e.busy_ns / 1e3:10.3f} us"
                             f"  util {100 * e.utilisation:5.1f}%")
        for k, v in sorted(self.link_bytes.items()):
            lines.append(f"link {k:11s} {v:14.4g} B  util {100 * self.link_utilisation.get(k, 0.0):5.1f}%")
        return "\n".join(lines)


def compulsory_bytes(program) -> float:
    """Bytes of every I/O entry (inputs, parameters, outputs) and constant, once."""
    return float(sum(e.nbytes for e in program.io) + sum(len(c.data) for c in program.constants))


#: The last per-instruction statistics of each chip of recent programs, by decoded
#: code identity: a warm run that ends with the same busy times and counts (times
#: depend on neither data nor time) reuses them. A few entries only.
_CHIP_WORK: "OrderedDict[tuple[int, int], tuple]" = OrderedDict()


def _chip_work(ch, tg) -> tuple[list, float, float, float, float, list, float]:
    """Chip ``ch``'s instruction statistics, matrix FLOPs and ns, vector ops and ns,
    data-dependent instructions and activation-engine ns (cached while its busy times
    and counts repeat)."""
    key = (id(ch.code), ch.id)
    hit = _CHIP_WORK.get(key)
    if hit is not None and hit[0] is ch.code and hit[1] is tg and hit[2] == ch.pc_busy and hit[3] == ch.pc_count \
            and hit[5] == ch.layer_busy:
        _CHIP_WORK.move_to_end(key)
        return hit[4]
    stats, dependent = [], []
    mx = mx_ns = vo = vo_ns = act_ns = 0.0
    for d, busy, count in zip(ch.code, ch.pc_busy, ch.pc_count):
        if d.qkey < 0:
            continue
        if not count:
            continue
        # Static per instruction and target: cached on the decoded instruction
        # (SPMD chips and later runs share it).
        c = d.work
        if c is not None and c[0] is tg:
            w = c[1]
        else:
            w = instruction_work(d, tg)
            d.work = (tg, w)
        if d.op in (oc.DMA_GATHER, oc.DMA_SCATTER):
            loc = ch.debug.get(d.pc)
            dependent.append(f"chip {ch.id} instruction {d.pc} ({d.name}{' at ' + loc if loc else ''})")
        mx += w.matrix_flops * count
        mx_ns += w.matrix_ns * count
        vo += w.vector_ops * count
        vo_ns += w.vector_ns * count
        act_ns += w.activation_ns * count
        engine, loc = ch.queues[d.qkey].name, ch.debug.get(d.pc)
        layers = ch.layers.executions.get(d.pc) if ch.layers is not None else None
        if layers is None or len(layers) != count:
            stats.append(InstrStat(ch.id, d.pc, d.name, engine, loc, count, busy,
                                   w.matrix_flops * count, w.matrix_ns * count, w.vector_ops * count,
                                   w.vector_ns * count, w.bytes * count, w.hbm_bytes * count,
                                   activation_ns=w.activation_ns * count))
            continue
        # One entry per layer, with the busy time its own executions measured.
        for k, n in sorted(Counter(layers).items()):
            stats.append(InstrStat(ch.id, d.pc, d.name, engine, ch.layers.location(loc, k), n,
                                   ch.layer_busy.get((d.pc, k), 0.0), w.matrix_flops * n, w.matrix_ns * n,
                                   w.vector_ops * n, w.vector_ns * n, w.bytes * n, w.hbm_bytes * n, k,
                                   activation_ns=w.activation_ns * n))
    result = (stats, mx, mx_ns, vo, vo_ns, dependent, act_ns)
    _CHIP_WORK[key] = (ch.code, tg, list(ch.pc_busy), list(ch.pc_count), result, dict(ch.layer_busy))
    while len(_CHIP_WORK) > 16:
        _CHIP_WORK.popitem(last=False)
    return result


def build_report(m: Machine, time_ns: float) -> Report:
    tg = m.target
    engines = []
    mem: dict[str, float] = {}
    bounds = []
    stats = []
    dependent = []
    flops = 0.0
    n_instr = 0
    compulsory = compulsory_bytes(m.program)
    for ch in m.chips:
        for q in ch.queues:
            engines.append(EngineStats(ch.id, q.name, q.count, q.busy, q.busy / time_ns if time_ns else 0.0))
            n_instr += q.count
        n_instr += ch.scalar_count
        for k, v in ch.mem_bytes.items():
            mem[k] = mem.get(k, 0.0) + v
        chip_stats, mx, mx_ns, vo, vo_ns, chip_dependent, act_ns = _chip_work(ch, tg)
        stats += chip_stats
        dependent += chip_dependent
        hbm = ch.mem_bytes["hbm_read"] + ch.mem_bytes["hbm_write"]
        bounds.append(ChipBound(ch.id, mx_ns, vo_ns, compulsory / tg.hbm_gbps, mx, vo, compulsory, hbm,
                                act_ns))
        flops += mx + vo
    links: dict[str, float] = {}
    busy: dict[str, float] = {}
    for src_b, src_busy in ((m.pool.bytes, m.pool.busy), (m.coll_link_bytes, m.coll_link_busy)):
        for k, v in src_b.items():
            if k.endswith(".hbm") or k.endswith(".sram"):
                continue
            links[k] = links.get(k, 0.0) + v
            busy[k] = busy.get(k, 0.0) + src_busy.get(k, 0.0)
    util = {k: min(1.0, v / time_ns) if time_ns else 0.0 for k, v in busy.items()}
    overlap = tuple(chip_overlap(ch.id, ch.busy_intervals[2], ch.busy_intervals[0] + ch.busy_intervals[1],
                                 ch.busy_intervals[3])
                    for ch in m.chips if ch.busy_intervals is not None and ch.busy_intervals[2])
    roof = max((b.bound_ns for b in bounds), default=0.0)
    return Report(time_ns=time_ns, engines=tuple(engines), memory_bytes=mem, link_bytes=links,
                  link_utilisation=util, flops=flops, roofline_ns=roof, instructions=n_instr,
                  collectives=tuple(m.collectives), bounds=tuple(bounds), timing_only=not m.functional,
                  data_dependent=tuple(dependent), instr_stats=tuple(stats),
                  hbm_gbps=tg.hbm_gbps, overlap=overlap)
