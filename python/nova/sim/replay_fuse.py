"""Fewer, larger BLAS calls in a decoupled replay (:mod:`nova.sim.replay_plan`):
a K loop of tile matmuls into one accumulator becomes one matmul on views.

This changes the f32 summation order (BLAS sums over the whole K its own way),
so outputs are no longer bit-identical to the per-tile run (``NOVA_SIM_FUSE=0``
keeps it); times and reports are unaffected (they come from the timing loop).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import replay_plan as rp

if TYPE_CHECKING:
    from .replay_plan import Schedule


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def fuse_k_chains(s: "Schedule") -> None:
    """Chains of consecutive f32 matmuls into one accumulator whose lhs tiles are
    consecutive column blocks of one array and rhs tiles consecutive row blocks
    (a K loop) become one matmul over the whole K: ``acc += A @ B`` (the first
    may set the accumulator). BLAS then sums over K in its own order."""
    fns, args, where = s.fns, s.args, s.where
    out_f, out_a, out_w = [], [], []
    k, n = 0, len(fns)
    done = [False] * n
    while k < n:
        if done[k]:
            k += 1
            continue
        f = fns[k]
        if f is rp._matmul_acc or f is rp._matmul_set:
            a0, b0, acc = args[k]
            kk = a0.shape[1]
            step_a, step_b = kk * a0.strides[1], kk * b0.strides[0]
            pa, pb = _address(a0), _address(b0)
            chain, skipped, j = [k], [], k + 1
            # Other engines' effects may sit between the chain's matmuls in start
            # order; the chain moves up past those that touch neither its
            # operands' arrays nor its accumulator.
            while j < n and len(skipped) <= _LOOKAHEAD:
                if fns[j] is not rp._matmul_acc:
                    if fns[j] is rp._matmul_set or _touches(args[j], (acc,)):
                        break
                    skipped.append((j, len(chain)))
                    j += 1
                    continue
                a, b, c = args[j]
                if not (c is acc or (c.shape == acc.shape and c.strides == acc.strides
                                     and _address(c) == _address(acc) and c.base is acc.base)):
                    break
                m = len(chain)
                if a.shape != a0.shape or a.strides != a0.strides or a.base is not a0.base or \
                        b.shape != b0.shape or b.strides != b0.strides or b.base is not b0.base:
                    break
                if _address(a) != pa + m * step_a or _address(b) != pb + m * step_b:
                    break
                chain.append(j)
                j += 1
            if len(chain) > 1:
                m = len(chain)
                big_a = np.lib.stride_tricks.as_strided(a0, (a0.shape[0], kk * m), a0.strides)
                big_b = np.lib.stride_tricks.as_strided(b0, (kk * m, b0.shape[1]), b0.strides)
                # A skipped effect that touches the operands keeps the matmuls
                # after it out of the chain.
                for i, before in skipped:
                    if before < m and _touches(args[i], (big_a, big_b)):
                        m = before
                        chain = chain[:m]
                        big_a = np.lib.stride_tricks.as_strided(a0, (a0.shape[0], kk * m), a0.strides)
                        big_b = np.lib.stride_tricks.as_strided(b0, (kk * m, b0.shape[1]), b0.strides)
                        break
            if len(chain) > 1:
                if not (np.may_share_memory(acc, big_a) or np.may_share_memory(acc, big_b)):
                    out_f.append(f)
                    out_a.append((big_a, big_b, acc))
                    out_w.append(where[k])
                    for i in chain:
                        done[i] = True
                    k += 1
                    continue
        out_f.append(f)
        out_a.append(args[k])
        out_w.append(where[k])
        k += 1
    s.fns, s.args, s.where = out_f, out_a, out_w


#: How many other effects a chain may move past.
_LOOKAHEAD = 16


def _touches(effect_args: tuple, arrays: tuple) -> bool:
    """True if an effect's array arguments may share memory with any of ``arrays``."""
    for x in effect_args:
        if isinstance(x, np.ndarray):
            for y in arrays:
                if y is not None and np.may_share_memory(x, y):
                    return True
    return False
