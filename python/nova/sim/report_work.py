"""The work of one instruction, from its tile descriptors alone (no data).

The report multiplies it by how often each instruction completed (loop trip counts
included) to get a chip's matrix FLOPs, vector element-ops and bytes moved; the
bound from the work (:mod:`nova.sim.stats`) and the per-line profile
(:mod:`nova.sim.report_profile`) are built from it.

Matrix FLOPs are ``2 M K N`` of each ``matmul``'s own tile shapes. The compiler
emits exact edge tiles (a partial tile has its own, smaller descriptor), so no
padding is counted; a compiler that padded tiles would have its padding counted
as work here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nova.binary import opcodes as oc
from .timing import CostModel

if TYPE_CHECKING:
    from .machine import Dec
    from .target import Target


@dataclass(frozen=True)
class Work:
    """What one execution of an instruction does.

    matrix_flops: ``2 M K N`` of a matmul. matrix_ns: those FLOPs at the matrix
    peak of the input dtype (f32 at a quarter of the bf16/f16 rate).
    vector_ops: elements ``E`` of a vector instruction (output elements; input
    elements of ``vreduce``, ``vassert`` and ``vsort``; ``2 E`` for ``vfused``, two
    operations per element). vector_ns: ``E * c / lanes`` cycles, ``c`` the ISA's
    per-kind cost factor (no 16-cycle issue overhead, no rounding up to whole lane
    groups; ``vfused``'s is that of its slower stage).
    bytes: bytes a DMA, collective or send moves (its source tile; the gathered
    tile of ``dma_gather``; twice the source of an accumulating ``dma_scatter``).
    hbm_bytes: of those, bytes read from or written to this chip's HBM.
    """

    matrix_flops: float = 0.0
    matrix_ns: float = 0.0
    vector_ops: float = 0.0
    vector_ns: float = 0.0
    bytes: float = 0.0
    hbm_bytes: float = 0.0
    # An instruction on the activation engine (docs/isa.md 2.7): its element-ops at
    # that engine's factor and lanes, in place of vector_ns.
    activation_ns: float = 0.0


NONE = Work()


@functools.lru_cache(maxsize=8)
def _cost_model(target: "Target") -> CostModel:
    return CostModel(target)


def _hbm(*parts: tuple[int, float]) -> float:
    return float(sum(n for space, n in parts if space == oc.HBM))


def instruction_work(d: "Dec", target: "Target") -> Work:
    """The work of one execution of decoded instruction ``d`` on ``target``."""
    op = d.op
    if op == oc.MATMUL:
        m, k = d.ta.shape
        n = d.tb.shape[1]
        flops = 2.0 * m * k * n
        tm = target.timing
        peak = target.peak_flops * (tm["matmul_row_cycles"] / tm["matmul_f32_row_cycles"]
                                    if d.ta.dtype == oc.F32 else 1.0)
        return Work(matrix_flops=flops, matrix_ns=flops / peak * 1e9)
    if op in oc.VECTOR_OPS:
        if op in (oc.VREDUCE, oc.VASSERT, oc.VSORT):
            e = d.ta.size
        else:
            e = d.td.size
        axis = d.ta.shape[d.ins.imm0] if op == oc.VSORT else 1
        if d.ins.engine == oc.ACTIVATION:
            act = target.activation
            trans = op in (oc.VUNARY, oc.VSCALAR) and d.ins.kind in oc.TRANSCENDENTAL
            c = act["transcendental_factor"] if trans else act["elementwise_factor"]
            return Work(vector_ops=float(e), activation_ns=e * c / act["lanes"] * target.cycle_ns)
        c = _cost_model(target).vector_factor(op, d.ins.kind, axis, d.ins.imm2)
        ops = 2 * e if op == oc.VFUSED else e  # two ALU stages per element
        return Work(vector_ops=float(ops), vector_ns=e * c / target.vector_lanes * target.cycle_ns)
    if op == oc.DMA_COPY:
        b = float(d.ta.nbytes)
        peer = bool(d.ins.flags & oc.F_PEER)
        # A peer DMA writes the other chip's memory: only the read is this chip's.
        return Work(bytes=b, hbm_bytes=_hbm((d.ta.space, b)) + (0.0 if peer else _hbm((d.td.space, b))))
    if op == oc.DMA_GATHER:
        b = float(d.td.nbytes)
        return Work(bytes=b, hbm_bytes=_hbm((d.ta.space, b), (d.tb.space, d.tb.nbytes), (d.td.space, b)))
    if op == oc.DMA_SCATTER:
        b = float(d.ta.nbytes)
        acc = bool(d.ins.flags & oc.F_ACCUMULATE)
        return Work(bytes=b * (2 if acc else 1),
                    hbm_bytes=_hbm((d.ta.space, b), (d.tb.space, d.tb.nbytes), (d.td.space, b * (2 if acc else 1))))
    if op in (oc.ALL_REDUCE, oc.ALL_GATHER, oc.REDUCE_SCATTER, oc.ALL_TO_ALL):
        b = float(d.ta.nbytes)
        return Work(bytes=b, hbm_bytes=_hbm((d.ta.space, b), (d.td.space, d.td.nbytes)))
    if op == oc.SEND:
        b = float(d.ta.nbytes)
        return Work(bytes=b, hbm_bytes=_hbm((d.ta.space, b)))
    if op == oc.RECV:
        return Work(hbm_bytes=_hbm((d.td.space, d.td.nbytes)))
    return NONE
