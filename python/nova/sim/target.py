"""The hardware description the simulator runs on (a ``targets/*.json`` file).

Fields and timing constants are checked against :mod:`nova.binary.target_schema`; files are
found and read by :mod:`nova.binary.targets`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterator, Mapping

from nova.binary.errors import TargetError
from nova.binary.target_schema import TOPOLOGIES, validate_target  # noqa: F401  (TOPOLOGIES re-exported)
from nova.binary.targets import load_target_dict


class Timing(Mapping[str, Any]):
    """The read-only, hashable ``timing`` mapping of a target (name -> value)."""

    __slots__ = ("_d", "_h")

    def __init__(self, d: Mapping[str, Any]) -> None:
        self._d = dict(d)
        self._h = hash(tuple(sorted(self._d.items())))

    def __getitem__(self, k: str) -> Any:
        try:
            return self._d[k]
        except KeyError:
            raise TargetError(f"target has no timing constant '{k}'") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._d) == dict(other)

    def __repr__(self) -> str:
        return f"Timing({self._d!r})"


@dataclass(frozen=True)
class Target:
    """One target: fields as in ``docs/isa.md`` and ``targets/*.json``.

    Bandwidths are GB/s (= bytes/ns), latency in ns, sizes in bytes; ``timing`` holds
    every timing constant of the simulator (docs/isa.md "Timing constants").
    """

    name: str
    clock_mhz: int
    matrix_rows: int
    matrix_cols: int
    vector_lanes: int
    sram_bytes: int
    sram_gbps: int
    acc_bytes: int
    hbm_bytes: int
    hbm_gbps: int
    dma_engines: int
    chips: int
    topology: str
    link_gbps: int
    link_latency_ns: int
    timing: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    # Several nodes (None: absent, one node; docs/isa.md "Target description").
    chips_per_node: int | None = None
    nics_per_node: int | None = None
    nic_gbps: int | None = None
    nic_latency_ns: int | None = None
    # The activation engine (None: the target has none; docs/isa.md 2.7): lanes and
    # cycle factors, a read-only mapping like ``timing``.
    activation: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        d = validate_target(self.as_dict())
        object.__setattr__(self, "timing", Timing(d["timing"]))
        if self.activation is not None:
            object.__setattr__(self, "activation", Timing(d["activation"]))

    def as_dict(self) -> dict[str, Any]:
        """The target as its JSON object (absent optional keys left out)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["timing"] = dict(self.timing)
        if self.activation is not None:
            d["activation"] = dict(self.activation)
        return {k: v for k, v in d.items() if v is not None}

    @property
    def has_activation(self) -> bool:
        """Whether the target has an activation engine beside the vector engine."""
        return self.activation is not None

    # Nodes -----------------------------------------------------------------------------
    @property
    def node_chips(self) -> int:
        """Chips on one node: ``chips_per_node``, or every chip (one node) when absent
        or when ``chips`` is at most it."""
        return self.chips if self.chips_per_node is None else min(self.chips, self.chips_per_node)

    @property
    def nodes(self) -> int:
        """Nodes in the system (1 without ``chips_per_node``)."""
        return self.chips // self.node_chips

    @property
    def node_nics(self) -> int:
        """NICs of one node (``nics_per_node``, default one per chip)."""
        return self.nics_per_node or self.node_chips

    def node_of(self, chip: int) -> int:
        """The node chip ``chip`` sits on."""
        return chip // self.node_chips

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
        """Matrix-unit peak in FLOP/s (bf16/f16; f32 at ``matmul_row_cycles / matmul_f32_row_cycles`` of it)."""
        return 2.0 * self.macs_per_cycle * self.clock_mhz * 1e6 / self.timing["matmul_row_cycles"]

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
        """``DMA_SETUP`` = ``timing.dma_setup_cycles`` cycles (docs/isa.md 2.2)."""
        return self.timing["dma_setup_cycles"] * self.cycle_ns

    def capacity(self, space: int) -> int:
        """Capacity in bytes of memory space 0 hbm, 1 sram, 2 acc."""
        return (self.hbm_bytes, self.sram_bytes, self.acc_bytes)[space]

    def with_changes(self, **changes: Any) -> "Target":
        """A copy with some fields replaced (validated again); ``timing={...}`` merges
        the given constants into the current ones; an optional key given as None is
        removed (``chips_per_node=None`` etc.: back to one node)."""
        d = self.as_dict()
        if "timing" in changes:
            t = changes.pop("timing")
            if not isinstance(t, Mapping):
                raise TargetError(f"target key 'timing' must be an object, got {t!r}")
            d["timing"].update(t)
        unknown = [k for k in changes if k not in d and k not in _OPTIONAL]
        if unknown:
            raise TargetError(f"target has unknown key(s) {', '.join(repr(k) for k in unknown)}")
        d.update(changes)
        return target_from_dict({k: v for k, v in d.items() if v is not None})


_OPTIONAL = frozenset(f.name for f in fields(Target) if f.default is None)


def target_from_dict(d: Mapping[str, Any], where: str = "target") -> Target:
    """Converts a target JSON object (or the dict carried by a binary) to a :class:`Target`.

    Unknown, missing, ill-typed and out-of-range keys are each a :class:`TargetError`.
    An optional key of the :class:`Target` given as None is absent (a Target's own
    fields, ``vars(target)``, convert back).
    """
    if isinstance(d, Mapping) and any(d.get(k, 0) is None for k in _OPTIONAL):
        d = {k: v for k, v in d.items() if not (k in _OPTIONAL and v is None)}
    v = validate_target(d, where)
    return Target(**v)


def load_target(path: str | Path) -> Target:
    """Reads a target JSON file (found, read and validated by :mod:`nova.binary.targets`)."""
    return Target(**load_target_dict(path))
