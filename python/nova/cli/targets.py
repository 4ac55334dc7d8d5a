"""``nova targets``: the installed target files, one row each."""

from __future__ import annotations

from nova.binary.targets import available_targets
from nova.sim.errors import SimulationError, TargetError
from nova.sim.target import load_target


def _si(value: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")):
        if value >= scale:
            return f"{value / scale:.1f} {prefix}{unit}"
    return f"{value:.0f} {unit}"


def _bytes(n: int) -> str:
    for scale, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def targets_table() -> str:
    """Name, chips, topology, peak FLOP/s (bf16, per chip and for the system) and HBM of
    every target file Nova finds; an unreadable file is a row saying why."""
    rows = [("name", "chips", "topology", "peak/chip", "peak/system", "HBM/chip", "HBM GB/s",
             "file")]
    for name, path in available_targets().items():
        try:
            t = load_target(path)
        except (SimulationError, TargetError) as error:
            rows.append((name, "-", "-", "-", "-", "-", "-", f"{path} (unreadable: {error})"))
            continue
        network = t.topology if t.nodes == 1 else f"{t.topology} ({t.nodes} nodes, {t.nic_gbps} GB/s NICs)"
        rows.append((t.name, str(t.chips), network, _si(t.peak_flops, "FLOP/s"),
                     _si(t.peak_flops * t.chips, "FLOP/s"), _bytes(t.hbm_bytes),
                     str(t.hbm_gbps), str(path)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] + "\n"
                   for r in rows)
