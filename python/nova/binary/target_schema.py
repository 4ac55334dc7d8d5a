"""The one schema of a target description: top-level fields and ``timing`` constants.

Every key has a type (int, float, bool, str), an allowed range or choice list, a unit
and a one-line meaning. :func:`validate_target` checks a whole target object (a
``targets/*.json`` file or the target a binary carries) against it: an unknown key, a
value of the wrong type, one out of range and a missing key are each a
:class:`TargetError` naming the key and the rule. No key has a default, except the
free-text ``description`` and the keys of several nodes (absent: one node, every
chip on the one ``topology``): every shipped target states every timing constant.

Several nodes (docs/isa.md "Target description"): ``chips_per_node`` puts chip ``c``
on node ``c // chips_per_node``; ``topology`` and ``link_*`` then describe the links
inside one node, and the nodes are joined through one full-bisection network switch
by ``nics_per_node`` NICs per node (default one per chip; local chip ``l`` uses NIC
``l // (chips_per_node // nics_per_node)``, rail-style) of ``nic_gbps`` per direction
and ``nic_latency_ns``. A handful of numbers, no per-link lists, so a system of
thousands of chips is described as a system of four is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from .errors import TargetError

TOPOLOGIES = ("switch", "ring", "torus2d", "pcie")
COLLECTIVE_ALGORITHMS = ("auto", "ring", "biring", "direct", "rhd", "pairwise", "hierarchical")


@dataclass(frozen=True)
class Key:
    type: type
    unit: str
    doc: str
    lo: float | None = None  # inclusive bounds (numbers)
    hi: float | None = None
    choices: tuple[str, ...] = ()
    optional: bool = False
    default: Any = None  # an optional key's value when absent (None: left out)
    fittable: bool | None = None  # calibration (nova.sim.calibrate): None = by type and unit

    def rule(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.type is bool:
            return "true or false"
        if self.lo is not None and self.hi is not None:
            return f"in [{_num(self.lo)}, {_num(self.hi)}]"
        if self.lo is not None:
            return f">= {_num(self.lo)}"
        return "a non-empty string" if self.type is str else "a number"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


_BIG = float(1 << 62)

#: Top-level fields (docs/isa.md "Target description").
FIELDS: dict[str, Key] = {
    "name": Key(str, "", "target name (also in the binary header, < 32 bytes)"),
    "description": Key(str, "", "free text (not carried into binaries)", optional=True),
    "clock_mhz": Key(int, "MHz", "clock of every engine", 1, 100_000),
    "matrix_rows": Key(int, "PEs", "systolic array rows R (the K of one matmul, <= R)", 1, 65_536),
    "matrix_cols": Key(int, "PEs", "systolic array columns C (the N of one matmul, <= C)", 1, 65_536),
    "vector_lanes": Key(int, "lanes", "vector elements per cycle", 1, 65_536),
    "sram_bytes": Key(int, "bytes", "scratchpad capacity", 1, _BIG),
    "sram_gbps": Key(int, "GB/s", "scratchpad bandwidth (shared by concurrent DMAs)", 1, 1e9),
    "acc_bytes": Key(int, "bytes", "matrix accumulator capacity (<= sram_bytes)", 1, _BIG),
    "hbm_bytes": Key(int, "bytes", "HBM capacity per chip", 1, _BIG),
    "hbm_gbps": Key(int, "GB/s", "HBM bandwidth per chip, reads and writes together", 1, 1e9),
    "dma_engines": Key(int, "queues", "DMA engines (queues) per chip", 1, 256),
    "chips": Key(int, "chips", "chips in the system (one binary runs at most 256 of them)", 1, 65_536),
    "topology": Key(str, "", "chip-to-chip network", choices=TOPOLOGIES),
    "link_gbps": Key(int, "GB/s", "bandwidth of one link, per direction", 1, 1e9),
    "link_latency_ns": Key(int, "ns", "latency of one link hop", 0, 1e9),
    "chips_per_node": Key(int, "chips", "chips on one node, joined by topology and link_* (optional; absent: "
                          "one node; chips must be a multiple of it, or at most it: one node)", 1, 65_536,
                          optional=True, fittable=False),
    "nics_per_node": Key(int, "NICs", "NICs of a node to the network switch, dividing chips_per_node "
                         "(optional: one per chip)", 1, 65_536, optional=True, fittable=False),
    "nic_gbps": Key(int, "GB/s", "bandwidth of one NIC, per direction (with chips_per_node)", 1, 1e9,
                    optional=True, fittable=False),
    "nic_latency_ns": Key(int, "ns", "latency from a NIC through the network switch to another node's NIC "
                          "(with chips_per_node)", 0, 1e9, optional=True, fittable=False),
    "timing": Key(dict, "", "the timing constants below (an object; every key required but launch_cycles)"),
}

#: The activation engine (``"activation"`` object; docs/isa.md 2.7): the single-input
#: elementwise instructions (vunary, vscalar, vcopy) may run on it, on its own queue. An
#: instruction costs ``overhead_cycles + ceil(E / lanes) * factor`` cycles there.
ACTIVATION: dict[str, Key] = {
    "lanes": Key(int, "lanes", "activation-engine elements per cycle", 1, 65_536),
    "overhead_cycles": Key(float, "cycles", "fixed cost of every activation-engine instruction", 0, 1e6),
    "elementwise_factor": Key(float, "cycles", "cycles per lanes elements, plain kinds and conversions", 0, 1e4),
    "transcendental_factor": Key(float, "cycles", "cycles per lanes elements, transcendental kinds", 0, 1e4),
}

#: Timing constants (``"timing"`` object; docs/isa.md "Timing constants").
TIMING: dict[str, Key] = {
    "sequencer_cycles": Key(int, "cycles", "sequencer cost of one instruction (scalar or dispatch)", 1, 1024),
    "queue_depth": Key(int, "instructions", "slots of every engine queue; dispatch to a full queue stalls", 1, 4096),
    "nop_cycles": Key(int, "cycles", "cost of a nop on an engine queue", 0, 1024),
    "recv_cycles": Key(int, "cycles", "recv completion after its data arrived", 0, 1024),
    "dma_setup_cycles": Key(float, "cycles", "fixed cost of every DMA before its bytes move", 0, 1e6),
    "dma_run_setup_cycles": Key(float, "cycles", "extra cost per run of consecutive positions of an indexed DMA",
                                0, 1e6),
    "hbm_burst_bytes": Key(int, "bytes", "HBM access granule: every contiguous run of a DMA is rounded up to "
                           "whole bursts at an HBM end", 1, 1 << 20),
    "sram_burst_bytes": Key(int, "bytes", "SRAM access granule (as hbm_burst_bytes, at an SRAM end)", 1, 1 << 20),
    "matmul_row_cycles": Key(float, "cycles", "cycles per streamed lhs row, bf16/f16 inputs", 0.01, 1024),
    "matmul_f32_row_cycles": Key(float, "cycles", "cycles per streamed lhs row, f32 inputs", 0.01, 1024),
    "matmul_weight_row_cycles": Key(float, "cycles", "cycles per array row to load the stationary operand "
                                    "(a load costs matrix_rows x this)", 0, 1024),
    "matmul_fill_drain_cycles": Key(float, "cycles", "pipeline fill + drain of one tile beyond "
                                    "matrix_rows + matrix_cols (SCALE-Sim: -2)", -1024, 1e6),
    "matmul_weight_overlap": Key(bool, "", "double-buffered stationary operand: the next tile's weights load "
                                 "while the previous tile streams and consecutive tiles pipeline; false: "
                                 "every tile pays load + stream + drain in sequence"),
    "vector_overhead_cycles": Key(float, "cycles", "fixed cost of every vector instruction", 0, 1e6),
    "vector_elementwise_factor": Key(float, "cycles", "cycles per vector_lanes elements, plain kinds", 0, 1e4),
    "vector_transcendental_factor": Key(float, "cycles", "cycles per vector_lanes elements, transcendental kinds",
                                        0, 1e4),
    "vector_transpose_factor": Key(float, "cycles", "cycles per vector_lanes elements of vtranspose", 0, 1e4),
    "vector_scan_factor": Key(float, "cycles", "cycles per vector_lanes elements of vscan", 0, 1e4),
    "vector_sort_stage_factor": Key(float, "cycles", "cycles per vector_lanes elements per bitonic stage of vsort",
                                    0, 1e4),
    "collective_algorithm": Key(str, "", "collective algorithm: auto = the fastest priced on the topology",
                                choices=COLLECTIVE_ALGORITHMS),
    "collective_reduce_on_vector": Key(bool, "", "charge a reducing collective's arithmetic on the vector "
                                       "engine and its operand reads/writes on HBM"),
    "launch_cycles": Key(float, "cycles", "host cost of launching one program on a chip, paid by each eager op "
                         "of the nova device (optional, default 5600: 4 us at 1.4 GHz)", 0, 1e9,
                         optional=True, default=5600.0, fittable=False),
}


def _check(where: str, key: str, spec: Key, v: Any) -> Any:
    """``v`` checked against ``spec``; ints are accepted where a float belongs."""
    t = spec.type
    what = f"{where} key '{key}'"
    if t is bool:
        if not isinstance(v, bool):
            raise TargetError(f"{what} must be a bool (true or false), got {v!r}")
        return v
    if t is str:
        if not isinstance(v, str) or (not v and not spec.optional):
            raise TargetError(f"{what} must be {'a non-empty ' if not spec.optional else 'a '}string, got {v!r}")
        if spec.choices and v not in spec.choices:
            raise TargetError(f"{what} must be {spec.rule()}, got {v!r}")
        return v
    if t is dict:
        if not isinstance(v, Mapping):
            raise TargetError(f"{what} must be an object, got {v!r}")
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TargetError(f"{what} must be {'an integer' if t is int else 'a number'}, got {v!r}")
    if t is int and not isinstance(v, int):
        raise TargetError(f"{what} must be an integer, got {v!r}")
    if t is float:
        if not math.isfinite(v):
            raise TargetError(f"{what} must be a finite number, got {v!r}")
        v = float(v)
    if (spec.lo is not None and v < spec.lo) or (spec.hi is not None and v > spec.hi):
        raise TargetError(f"{what} must be {spec.rule()}, got {v!r}")
    return v


def _validate(d: Any, schema: Mapping[str, Key], where: str) -> dict[str, Any]:
    if not isinstance(d, Mapping):
        raise TargetError(f"{where} must be a JSON object, got {type(d).__name__}")
    unknown = [k for k in d if k not in schema]
    if unknown:
        raise TargetError(f"{where} has unknown key(s) {', '.join(repr(k) for k in unknown)} "
                          f"(known: {', '.join(schema)})")
    missing = [k for k, s in schema.items() if k not in d and not s.optional]
    if missing:
        raise TargetError(f"{where} is missing key(s) {', '.join(repr(k) for k in missing)}")
    out = {k: _check(where, k, schema[k], d[k]) for k in schema if k in d}
    for k, s in schema.items():
        if k not in out and s.default is not None:
            out[k] = s.default
    return out


def validate_timing(d: Any, where: str = "target timing") -> dict[str, Any]:
    """The ``timing`` object checked (values normalised: floats where a float belongs)."""
    return _validate(d, TIMING, where)


#: The optional activation block: a key of the target beside :data:`FIELDS` (the
#: fields every target states), checked against :data:`ACTIVATION`.
ACTIVATION_FIELD = Key(dict, "", "an activation engine beside the vector engine (optional; an object of the "
                       "activation.* keys below, every one required; absent: no activation engine)",
                       optional=True, fittable=False)


def validate_target(d: Any, where: str = "target") -> dict[str, Any]:
    """A whole target object checked against :data:`FIELDS` and :data:`TIMING`, and
    its optional ``activation`` block against :data:`ACTIVATION`."""
    activation = None
    if isinstance(d, Mapping) and "activation" in d:
        d = dict(d)
        activation = _check(where, "activation", ACTIVATION_FIELD, d.pop("activation"))
    out = _validate(d, FIELDS, where)
    out["timing"] = validate_timing(out["timing"], f"{where} timing")
    if activation is not None:
        out["activation"] = _validate(activation, ACTIVATION, f"{where} activation")
    out.setdefault("description", "")
    if out["acc_bytes"] > out["sram_bytes"]:
        raise TargetError(f"{where} key 'acc_bytes' must be <= sram_bytes ({out['sram_bytes']}), "
                          f"got {out['acc_bytes']}")
    if out["topology"] == "ring" and out["chips"] < 2:
        raise TargetError(f"{where} key 'chips' must be >= 2 on a ring, got {out['chips']}")
    _check_nodes(out, where)
    if len(out["name"].encode("utf-8")) >= 32:
        raise TargetError(f"{where} key 'name' must be shorter than 32 bytes, got {out['name']!r}")
    return out


NODE_KEYS = ("chips_per_node", "nics_per_node", "nic_gbps", "nic_latency_ns")


def _check_nodes(out: Mapping[str, Any], where: str) -> None:
    """The keys of several nodes: all absent, or ``chips_per_node`` with the network's
    ``nic_gbps`` and ``nic_latency_ns`` (the C++ reader checks the same rules)."""
    cpn = out.get("chips_per_node")
    if cpn is None:
        given = [k for k in NODE_KEYS[1:] if k in out]
        if given:
            raise TargetError(f"{where} key '{given[0]}' needs chips_per_node (the network joins nodes)")
        return
    for k in ("nic_gbps", "nic_latency_ns"):
        if k not in out:
            raise TargetError(f"{where} key '{k}' must be given when chips_per_node is set")
    nics = out.get("nics_per_node", cpn)
    if cpn % nics:
        raise TargetError(f"{where} key 'nics_per_node' must divide chips_per_node ({cpn}), got {nics}")
    chips = out["chips"]
    if chips > cpn and chips % cpn:
        raise TargetError(f"{where} key 'chips' must be a multiple of chips_per_node ({cpn}) or at most it, "
                          f"got {chips}")
    if out["topology"] == "ring" and min(chips, cpn) < 2:
        raise TargetError(f"{where} key 'chips_per_node' must be >= 2 on a ring, got {cpn}")


def schema_table() -> str:
    """The schema as a Markdown table (docs/isa.md quotes it)."""
    rows = ["| key | type | allowed | unit | meaning |", "|---|---|---|---|---|"]
    for prefix, schema in (("", {**FIELDS, "activation": ACTIVATION_FIELD}), ("timing.", TIMING),
                           ("activation.", ACTIVATION)):
        for k, s in schema.items():
            rows.append(f"| `{prefix}{k}` | {s.type.__name__ if s.type is not dict else 'object'} | "
                        f"{s.rule() if s.type is not dict else ''} | {s.unit} | {s.doc} |")
    return "\n".join(rows)
