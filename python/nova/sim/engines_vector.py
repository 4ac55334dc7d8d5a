"""Vector-engine instructions (docs/isa.md 2.4, 2.6): elementwise (one stage, or two in
``vfused``), select, reduce, scan, sort, transpose, fill, iota, copy with conversion,
assert. The single-input elementwise ones (vunary, vscalar, vcopy) run with the same
semantics on the activation engine of a target that has one (docs/isa.md 2.7), priced
by its constants.

:class:`VectorUnit` is mixed into :class:`nova.sim.engines.Machine`; each ``_x_*`` method
runs one dispatched instruction at its start time and returns its cost in ns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from nova.binary import opcodes as oc
from .errors import AssertionFailedError
from .numerics import (ValueFault, binary_fn, convert, fused_fn, reduce_axis, scalar_of, scan_axis,
                       sort_axis, unary_fn)

if TYPE_CHECKING:
    from .machine import Op, Queue
    from .memory import TileAccess


class VectorUnit:
    """The vector engine's instruction semantics (a mixin of ``Machine``)."""

    def _vector(self, q: "Queue", o: "Op", ins: tuple["TileAccess", ...], fn: Callable[..., np.ndarray],
                elements: int, addrs: tuple[int, ...] | None = None) -> float:
        """``addrs``: the inputs' addresses, when they are not ``ra, rb, rc`` in order."""
        d, ch = o.d, q.chip
        addrs = addrs or (o.ra, o.rb, o.rc)
        if self.functional:
            xs = [self._read(ch, t, a, d) for t, a in zip(ins, addrs)]
            try:
                with np.errstate(all="ignore"):
                    y = fn(*xs)
            except ValueFault as e:
                raise self._fault(ch, d, str(e)) from None
            self._write(ch, d.td, o.rdst, y, d)
        elif not ch.prechecked:
            for t, a in zip(ins, addrs):
                self._check(ch, t, a, d, False)
            self._check(ch, d.td, o.rdst, d, True)
        return self._vector_cost(ch, d, elements)

    def _vector_cost(self, ch, d, elements: int) -> float:
        # Static per instruction and target: cached on the decoded instruction.
        c = d.vcost
        if c is not None and c[0] is self.target and c[1] == elements:
            return c[2]
        # The same instruction on the activation engine is priced by its constants.
        if d.ins.engine == oc.ACTIVATION:
            v = self.cost.activation(d.op, d.ins.kind, elements)
        else:  # imm2: VFUSED's second kind (0 elsewhere)
            v = self.cost.vector(d.op, d.ins.kind, elements, d.ins.imm2)
        d.vcost = (self.target, elements, v)
        return v

    def _x_vunary(self, q: "Queue", o: "Op") -> float:
        d = o.d
        src, dst = d.ta.dtype, d.td.dtype
        if d.ins.kind == 0:  # copy converts like vcopy
            return self._vector(q, o, (d.ta,), lambda x: convert(x, src, dst), d.td.size)
        return self._vector(q, o, (d.ta,), unary_fn(d.ins.kind, src), d.td.size)

    def _x_vbinary(self, q: "Queue", o: "Op") -> float:
        d = o.d
        return self._vector(q, o, (d.ta, d.tb), binary_fn(d.ins.kind, d.ta.dtype), d.td.size)

    def _scalar(self, o: "Op", reg: int, dtype: int) -> np.ndarray:
        """The instruction's scalar: precomputed from the immediate, or the register
        value read at dispatch (``scalar_reg``), in the compute type of ``dtype``."""
        s = o.d.scalar
        return scalar_of(reg, dtype, True) if s is None else s  # i64 -> any never faults

    def _x_vscalar(self, q: "Queue", o: "Op") -> float:
        d = o.d
        fn, s = binary_fn(d.ins.kind, d.ta.dtype), self._scalar(o, o.rb, d.ta.dtype)
        return self._vector(q, o, (d.ta,), lambda x: fn(x, s), d.td.size)

    def _x_vfused(self, q: "Queue", o: "Op") -> float:
        d = o.d
        # A and B are tiles in slots b and c, or immediates (not read from memory).
        present = [(t, r) for t, r in ((d.ta, o.ra), (d.tb, o.rb), (d.tc, o.rc)) if t is not None]
        fn = fused_fn(d.ins.kind, d.ins.imm2, d.ta.dtype, *d.imms)
        return self._vector(q, o, tuple(t for t, _ in present), fn, d.td.size, tuple(r for _, r in present))

    def _x_vselect(self, q: "Queue", o: "Op") -> float:
        d = o.d
        return self._vector(q, o, (d.ta, d.tb, d.tc), lambda c, x, z: np.where(c != 0, x, z), d.td.size)

    def _x_vreduce(self, q: "Queue", o: "Op") -> float:
        d = o.d
        kind, axis = d.ins.kind, d.ins.imm0
        return self._vector(q, o, (d.ta,), lambda x: reduce_axis(x, kind, axis), d.ta.size)

    def _x_vscan(self, q: "Queue", o: "Op") -> float:
        d = o.d
        kind, axis = d.ins.kind, d.ins.imm0
        return self._vector(q, o, (d.ta,), lambda x: scan_axis(x, kind, axis), d.td.size)

    def _x_vtranspose(self, q: "Queue", o: "Op") -> float:
        d = o.d
        perm = d.perm
        return self._vector(q, o, (d.ta,), lambda x: x.transpose(perm), d.td.size)

    def _x_vfill(self, q: "Queue", o: "Op") -> float:
        d = o.d
        v = self._scalar(o, o.ra, d.td.dtype)
        return self._vector(q, o, (), lambda: v, d.td.size)

    def _x_vcopy(self, q: "Queue", o: "Op") -> float:
        d = o.d
        src, dst = d.ta.dtype, d.td.dtype
        return self._vector(q, o, (d.ta,), lambda x: convert(x, src, dst), d.td.size)

    def _x_viota(self, q: "Queue", o: "Op") -> float:
        d = o.d
        shape, axis = d.td.shape, d.ins.imm0
        iota = np.arange(shape[axis], dtype=np.int64).reshape(
            [n if k == axis else 1 for k, n in enumerate(shape)])
        return self._vector(q, o, (), lambda: convert(iota, oc.I64, d.td.dtype), d.td.size)

    def _x_vassert(self, q: "Queue", o: "Op") -> float:
        d, ch = o.d, q.chip
        if self.functional:
            c = self._read(ch, d.ta, o.ra, d)
            ok = np.asarray(c != 0)
            if not ok.all():
                text = ch.debug.get(d.pc)
                at = tuple(int(i) for i in np.argwhere(~ok)[0])
                msg = f"chip {ch.id}: instruction {d.pc} (vassert): assertion failed"
                if text:
                    msg += f": {text}"
                raise AssertionFailedError(f"{msg} (first failing element {list(at)})", ch.id, d.pc, text)
        elif not ch.prechecked:
            self._check(ch, d.ta, o.ra, d, False)
        return self._vector_cost(ch, d, d.ta.size)

    def _x_vsort(self, q: "Queue", o: "Op") -> float:
        d, ch = o.d, q.chip
        axis, descending = d.ins.imm0, bool(d.ins.flags & oc.F_DESCENDING)
        if self.functional:
            values, indices = sort_axis(self._read(ch, d.ta, o.ra, d), axis, descending)
            self._write(ch, d.td, o.rdst, values, d)
            self._write(ch, d.tc, o.rc, indices, d)
        elif not ch.prechecked:
            self._check(ch, d.ta, o.ra, d, False)
            self._check(ch, d.td, o.rdst, d, True)
            self._check(ch, d.tc, o.rc, d, True)
        n = d.ta.shape[axis]
        return self.cost.sort(d.ta.size, n)
