"""Where the simulated time went: engine busy time per source line, a table in the
manner of ``torch.profiler``'s ``key_averages().table()``.

Every engine instruction's busy time (start to completion on its queue, all
executions, all chips) is attributed to its DEBUG-section location. A location is
``file:line:col``, a call-site chain ``lib.py:10:3 called from model.py:42:9`` (the
model's own line last), and for ``vassert`` ``: <message>`` after it; a row is keyed
by the last frame's ``file:line`` (``by="line"``) or the first's (``by="op"``: the
line of the op itself, e.g. inside a library module's ``forward``) or by the module
the op ran in (``by="module"``: ``blocks.0.attn``, from the ``in <module>`` the
frontend adds; the instructions of a loop over layers have an entry per layer,
each in its own layer's module with the time it measured, see
:mod:`nova.sim.layers`). Instructions without a location go under
``<unknown>``. The rows' times add up to the report's total busy time
(:attr:`nova.sim.stats.Report.busy_ns`); engines run concurrently, so that total
exceeds the simulated time.

Columns: busy time and its share of the total, completed instructions, FLOPs
(matrix FLOPs + vector element-ops), bytes moved by DMAs and collectives, and the
achieved fraction of the row's own bound: ``max(matrix_ns, vector_ns, activation_ns, hbm bytes /
hbm bandwidth)`` of its work (:mod:`nova.sim.report_work`; the HBM term here is the
row's actual HBM traffic) over the busy time of the row's busiest engine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from .stats import InstrStat, Report

UNKNOWN = "<unknown>"
_FRAME = re.compile(r"^(.*?):(\d+)(?::(\d+))?")
#: ``... in blocks.0.attn``: the module an instruction came from (its DEBUG text
#: ends with it, before a ``vassert``'s ``: <message>``).
_MODULE = re.compile(r"(?:^| )in ([\w.\-]+)(?=$|: )")


def module_of(location: str | None) -> str:
    """The module path in a DEBUG location (``blocks.0.attn``), or ``<unknown>``."""
    m = _MODULE.search(location or "")
    return m.group(1) if m else UNKNOWN


def source_line(location: str | None, innermost: bool = False) -> str:
    """``file:line`` of the model's own frame (the last of a ``called from`` chain),
    or with ``innermost`` of the first (the op's own line inside a module's
    ``forward``), or ``<unknown>``."""
    if not location:
        return UNKNOWN
    location = _MODULE.sub("", location)
    frame = location.split(" called from ")[0 if innermost else -1].strip()
    m = _FRAME.match(frame)
    return f"{m.group(1)}:{m.group(2)}" if m else frame or UNKNOWN


@dataclass(frozen=True)
class ProfileRow:
    key: str
    busy_ns: float
    instructions: int
    flops: float
    bytes: float
    bound_ns: float
    busiest_engine_ns: float

    @property
    def bound_fraction(self) -> float:
        """Own bound over the busy time of the row's busiest engine (1.0: at its bound)."""
        return self.bound_ns / self.busiest_engine_ns if self.busiest_engine_ns > 0 else 0.0


def _key(s: "InstrStat", by: str) -> str:
    if by == "line":
        return source_line(s.location)
    if by == "op":
        return source_line(s.location, innermost=True)
    if by == "module":
        return module_of(s.location)
    if by == "opcode":
        return s.name
    if by == "instruction":
        return f"chip {s.chip} #{s.pc} {s.name} @ {source_line(s.location)}"
    raise ValueError(f"profile rows are by 'line', 'op', 'module', 'opcode' or 'instruction', "
                     f"got {by!r}")


def profile_rows(report: "Report", by: str = "line") -> list[ProfileRow]:
    """One row per key, sorted by busy time (largest first)."""
    hbm_gbps = report.hbm_gbps
    acc: dict[str, dict] = {}
    for s in report.instr_stats:
        k = _key(s, by)
        a = acc.get(k)
        if a is None:
            a = acc[k] = {"busy": 0.0, "n": 0, "flops": 0.0, "bytes": 0.0, "mx": 0.0, "vec": 0.0,
                          "hbm": 0.0, "act": 0.0, "eng": {}}
        a["busy"] += s.busy_ns
        a["n"] += s.count
        a["flops"] += s.matrix_flops + s.vector_ops
        a["bytes"] += s.bytes
        a["mx"] += s.matrix_ns
        a["vec"] += s.vector_ns
        a["act"] += s.activation_ns
        a["hbm"] += s.hbm_bytes
        eng = "dma" if s.engine.startswith("dma") else s.engine
        key = (s.chip, eng)
        a["eng"][key] = a["eng"].get(key, 0.0) + s.busy_ns
    rows = []
    for k, a in acc.items():
        bound = max(a["mx"], a["vec"], a["act"], a["hbm"] / hbm_gbps if hbm_gbps else 0.0)
        rows.append(ProfileRow(k, a["busy"], a["n"], a["flops"], a["bytes"], bound,
                               max(a["eng"].values(), default=0.0)))
    rows.sort(key=lambda r: (-r.busy_ns, r.key))
    return rows


def format_profile(rows: Iterable[ProfileRow], top: int | None = 20, by: str = "line",
                   total_ns: float | None = None) -> str:
    rows = list(rows)
    total = total_ns if total_ns is not None else sum(r.busy_ns for r in rows)
    shown = rows if top is None else rows[:top]
    width = max([len(by)] + [len(r.key) for r in shown]) if shown else len(by)
    width = min(width, 72)
    head = (f"{by:<{width}}  {'busy us':>11}  {'% busy':>6}  {'instrs':>8}  {'FLOPs':>10}  "
            f"{'bytes':>10}  {'of bound':>8}")
    out = [head, "-" * len(head)]
    for r in shown:
        key = r.key if len(r.key) <= width else "..." + r.key[-(width - 3):]
        pct = 100 * r.busy_ns / total if total else 0.0
        out.append(f"{key:<{width}}  {r.busy_ns / 1e3:11.3f}  {pct:5.1f}%  {r.instructions:8d}  "
                   f"{r.flops:10.3g}  {r.bytes:10.3g}  {100 * r.bound_fraction:7.1f}%")
    if top is not None and len(rows) > top:
        rest = rows[top:]
        busy = sum(r.busy_ns for r in rest)
        out.append(f"{f'({len(rest)} more)':<{width}}  {busy / 1e3:11.3f}  "
                   f"{100 * busy / total if total else 0.0:5.1f}%")
    out.append(f"{'total busy':<{width}}  {total / 1e3:11.3f}  (engines overlap: more than the "
               f"simulated time)")
    return "\n".join(out)
