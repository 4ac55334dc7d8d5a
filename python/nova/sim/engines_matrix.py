"""Matrix-engine timing (docs/isa.md 2.3): a weight-stationary systolic array.

One tile costs a stationary-operand load ``W = matrix_rows * matmul_weight_row_cycles``,
the stream of its M lhs rows ``S = M * matmul_row_cycles`` (f32: ``matmul_f32_row_cycles``)
and a fill + drain ``F = matrix_rows + matrix_cols + matmul_fill_drain_cycles``. A partial
tile (K < rows or N < cols) pays the full W and F: weights shift in from the array's
top edge through every row and partial sums leave at its bottom edge.

With ``matmul_weight_overlap`` (a double-buffered stationary operand) a tile's weights
load into the shadow buffer while the previous tile streams (from the moment it became
ready and the shadow buffer is free), and its rows enter the array right behind the
previous tile's last row; only a tile that starts on an idle array pays W + S + F.
Without it every tile runs load, stream and drain in sequence (SCALE-Sim's
``2R + C + M - 2`` per fold).

:class:`MatrixUnit` (the matmul instruction: its data effect and this timing) is mixed into
:class:`nova.sim.engines.Machine`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nova.binary import opcodes as oc
from .machine import _RW

if TYPE_CHECKING:
    from .machine import Op, Queue


class MatrixUnit:
    """Pipelined matmul timing (a mixin of ``Machine``); state per chip on the chip:
    ``mx_state = (stream end, shadow buffer free, in-order ready)`` of the queue's last
    instruction."""

    def _matrix_ready(self, ch, o: "Op") -> float:
        """The moment the instruction could have begun, had the queue been free: its
        dispatch, its semaphores' signals and the previous instruction (in order)."""
        ready = max(o.t, ch.mx_state[2]) if hasattr(ch, "mx_state") else self.now
        sem_time = ch.sem_time
        for s in o.d.waits:
            if sem_time[s] > ready:
                ready = sem_time[s]
        return min(ready, self.now)

    def _matrix_nop(self, q: "Queue", o: "Op") -> None:
        """A nop on the matrix queue (a synchronisation point) passes readiness on."""
        ch = q.chip
        stream_end, shadow_free, _ = getattr(ch, "mx_state", (-1.0, -1.0, 0.0))
        ch.mx_state = (stream_end, shadow_free, self._matrix_ready(ch, o) + self.cost.nop)

    def _matmul_time(self, q: "Queue", o: "Op", m: int, k: int, n: int, dtype: int) -> float:
        cost, ch, now = self.cost, q.chip, self.now
        c = o.d.vcost  # the stream time is static: cached on the decoded instruction
        if c is not None and c[0] is self.target:
            stream = c[1]
        else:
            stream = cost.matmul_stream(m, n, dtype)
            o.d.vcost = (self.target, stream)
        if not cost.overlap:
            return cost.weight_load + stream + cost.fill_drain
        stream_end, shadow_free, _ = getattr(ch, "mx_state", (-1.0, -1.0, 0.0))
        ready = self._matrix_ready(ch, o)
        loaded = max(ready, shadow_free) + cost.weight_load
        start = max(loaded, stream_end)
        end = start + stream
        # The shadow buffer frees when this tile's weights go live (its stream starts).
        ch.mx_state = (end, start, ready)
        return max(end + cost.fill_drain - now, cost.nop)

    def _x_matmul(self, q: Queue, o: Op) -> float:
        d, ch = o.d, q.chip
        ta, tb, td = d.ta, d.tb, d.td
        m, k = ta.shape
        n = tb.shape[1]
        if self.functional:
            c = self._read(ch, ta, o.ra, d) @ self._read(ch, tb, o.rb, d)
            if td.dtype == oc.F32:
                # The f32 accumulator is updated in place through its view.
                acc = ch.mem.view(td, o.rdst, d.label)
                if d.ins.flags & oc.F_ACCUMULATE:
                    ch.mem_bytes[_RW[td.space][0]] += td.nbytes
                    acc += c
                else:
                    acc[...] = c
                ch.mem_bytes[_RW[td.space][1]] += td.nbytes
            else:
                if d.ins.flags & oc.F_ACCUMULATE:
                    c += self._read(ch, td, o.rdst, d)
                self._write(ch, td, o.rdst, c, d)
        elif not ch.prechecked:
            self._check(ch, ta, o.ra, d, False)
            self._check(ch, tb, o.rb, d, False)
            if d.ins.flags & oc.F_ACCUMULATE:
                ch.mem_bytes[_RW[td.space][0]] += td.nbytes
            self._check(ch, td, o.rdst, d, True)
        return self._matmul_time(q, o, m, k, n, ta.dtype)
