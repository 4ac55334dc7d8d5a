"""The hardware description the simulator runs on (a ``targets/*.json`` file)."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from .errors import TargetError

TOPOLOGIES = ("switch", "ring", "torus2d", "pcie")


@dataclass(frozen=True)
class Target:
    """One target: fields as in ``docs/isa.md`` and ``targets/*.json``.

    Bandwidths are GB/s (= bytes/ns), latency in ns, sizes in bytes.
    """

    name: str
    clock_mhz: float
    matrix_rows: int
    matrix_cols: int
    vector_lanes: int
    sram_bytes: int
    sram_gbps: float
    acc_bytes: int
    hbm_bytes: int
    hbm_gbps: float
    dma_engines: int
    chips: int
    topology: str
    link_gbps: float
    link_latency_ns: float
    description: str = ""

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("name", "description", "topology"):
                if not isinstance(v, str):
                    raise TargetError(f"target field '{f.name}' must be a string, got {v!r}")
            elif isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise TargetError(f"target field '{f.name}' must be a positive number, got {v!r}")
        for name in ("matrix_rows", "matrix_cols", "vector_lanes", "sram_bytes", "acc_bytes",
                     "hbm_bytes", "dma_engines", "chips"):
            if int(getattr(self, name)) != getattr(self, name):
                raise TargetError(f"target field '{name}' must be an integer, got {getattr(self, name)!r}")
        if self.topology not in TOPOLOGIES:
            raise TargetError(f"target topology must be one of {', '.join(TOPOLOGIES)}, got '{self.topology}'")
        if self.dma_engines > 256:
            raise TargetError(f"target dma_engines must be <= 256, got {self.dma_engines}")

    # Derived numbers -----------------------------------------------------------------
    @property
    def cycle_ns(self) -> float:
        """Length of one clock cycle in ns."""
        return 1e3 / self.clock_mhz

    @property
    def macs_per_cycle(self) -> int:
        """Multiply-accumulates per cycle of the matrix unit (bf16/f16 rate)."""
        return self.matrix_rows * self.matrix_cols

    @property
    def peak_flops(self) -> float:
        """Matrix-unit peak in FLOP/s (bf16/f16; f32 runs at a quarter of it)."""
        return 2.0 * self.macs_per_cycle * self.clock_mhz * 1e6

    @property
    def hbm_bytes_per_cycle(self) -> float:
        return self.hbm_gbps * self.cycle_ns

    @property
    def sram_bytes_per_cycle(self) -> float:
        return self.sram_gbps * self.cycle_ns

    @property
    def link_bytes_per_cycle(self) -> float:
        return self.link_gbps * self.cycle_ns

    @property
    def dma_setup_ns(self) -> float:
        """``DMA_SETUP`` = 64 cycles (docs/isa.md 2.2)."""
        return 64.0 * self.cycle_ns

    def capacity(self, space: int) -> int:
        """Capacity in bytes of memory space 0 hbm, 1 sram, 2 acc."""
        return (self.hbm_bytes, self.sram_bytes, self.acc_bytes)[space]

    def with_changes(self, **changes: Any) -> "Target":
        """A copy with some fields replaced (validated again)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d.update(changes)
        return Target(**d)


def target_from_dict(d: Mapping[str, Any]) -> Target:
    """Converts a target JSON object (or the dict carried by a binary) to a :class:`Target`.

    Unknown keys are ignored (newer targets may carry more); missing ones are an error.
    """
    if not isinstance(d, Mapping):
        raise TargetError(f"a target must be a JSON object, got {type(d).__name__}")
    names = [f.name for f in fields(Target)]
    missing = [n for n in names if n not in d and n != "description"]
    if missing:
        raise TargetError(f"target is missing field(s): {', '.join(missing)}")
    return Target(**{n: d[n] for n in names if n in d})


def load_target(path: str | Path) -> Target:
    """Reads a target JSON file."""
    p = Path(path)
    try:
        d = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise TargetError(f"cannot read target '{p}': {e}") from e
    return target_from_dict(d)
