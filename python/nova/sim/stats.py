"""The run report: simulated time, engine utilisation, bytes moved, FLOPs, % of roofline."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .engines import Machine


@dataclass(frozen=True)
class EngineStats:
    chip: int
    engine: str
    instructions: int
    busy_ns: float
    utilisation: float


@dataclass(frozen=True)
class Report:
    """What one simulated run cost.

    time_ns: simulated time until the last chip finished.
    roofline_ns: per chip ``max(compute bound, hbm bytes / hbm bandwidth)``, worst chip;
    roofline_fraction = roofline_ns / time_ns.
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

    def __post_init__(self) -> None:
        if self.time_ns < 0:
            raise ValueError("time_ns must be >= 0")

    @property
    def roofline_fraction(self) -> float:
        return self.roofline_ns / self.time_ns if self.time_ns > 0 else 0.0

    @property
    def time_s(self) -> float:
        return self.time_ns * 1e-9

    def busy(self, engine: str, chip: int | None = None) -> float:
        """Total busy ns of queues named ``engine`` (``dma`` sums all dma queues)."""
        return sum(e.busy_ns for e in self.engines if (chip is None or e.chip == chip)
                   and (e.engine == engine or (engine == "dma" and e.engine.startswith("dma"))))

    def summary(self) -> str:
        lines = [f"simulated time   {self.time_ns / 1e3:12.3f} us   ({self.instructions} instructions)",
                 f"FLOPs            {self.flops:14.4g}",
                 f"roofline         {self.roofline_ns / 1e3:12.3f} us   ({100 * self.roofline_fraction:.1f}% of roofline)"]
        for k, v in sorted(self.memory_bytes.items()):
            lines.append(f"{k:16s} {v:14.4g} B")
        for e in self.engines:
            if e.instructions:
                lines.append(f"chip {e.chip} {e.engine:11s} {e.instructions:8d} instr  busy {e.busy_ns / 1e3:10.3f} us"
                             f"  util {100 * e.utilisation:5.1f}%")
        for k, v in sorted(self.link_bytes.items()):
            lines.append(f"link {k:11s} {v:14.4g} B  util {100 * self.link_utilisation.get(k, 0.0):5.1f}%")
        return "\n".join(lines)


def build_report(m: Machine, time_ns: float) -> Report:
    tg = m.target
    engines = []
    mem: dict[str, float] = {}
    roof = 0.0
    flops = 0.0
    n_instr = 0
    for ch in m.chips:
        for q in ch.queues:
            engines.append(EngineStats(ch.id, q.name, q.count, q.busy, q.busy / time_ns if time_ns else 0.0))
            n_instr += q.count
        n_instr += ch.scalar_count
        for k, v in ch.mem_bytes.items():
            mem[k] = mem.get(k, 0.0) + v
        hbm = ch.mem_bytes["hbm_read"] + ch.mem_bytes["hbm_write"]
        roof = max(roof, ch.compute_bound_ns, hbm / tg.hbm_gbps)
        flops += ch.flops
    links: dict[str, float] = {}
    busy: dict[str, float] = {}
    for src_b, src_busy in ((m.pool.bytes, m.pool.busy), (m.coll_link_bytes, m.coll_link_busy)):
        for k, v in src_b.items():
            if k.endswith(".hbm") or k.endswith(".sram"):
                continue
            links[k] = links.get(k, 0.0) + v
            busy[k] = busy.get(k, 0.0) + src_busy.get(k, 0.0)
    util = {k: min(1.0, v / time_ns) if time_ns else 0.0 for k, v in busy.items()}
    return Report(time_ns=time_ns, engines=tuple(engines), memory_bytes=mem, link_bytes=links,
                  link_utilisation=util, flops=flops, roofline_ns=roof, instructions=n_instr,
                  collectives=tuple(m.collectives))
