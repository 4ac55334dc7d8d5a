"""ATen decompositions for dtypes the vector and matrix units do not take
for some ops, rewritten into ops they do (exactly, in every case):

- bool comparisons (``ge``/``gt``/``le``/``lt``): torch-mlir compares i1
  unsigned, and the vector unit compares signed; compared as int32 instead
  (False < True either way);
- bool ``mul``: ``logical_and`` (the vector unit multiplies no i1);
- bool ``maximum``/``minimum``/``fmax``/``fmin``/``clamp*`` and the
  ``max``/``min``/``amax``/``amin`` reductions: computed in int32 and cast
  back (torch-mlir writes bool clamps as ``maxsi``/``minsi`` on i1, whose
  signed order, true < false, is not torch's);
- integer and bool ``reciprocal``: in the default float dtype, so that 1 / 0
  is inf as in eager (torch-mlir's integer lowering asserts a nonzero input);
- integer ``mm``/``bmm``: the matrix engine multiplies floats only, so a
  broadcast multiply and a sum over the contraction axis on the vector unit
  (exact in the integer type, wrapping as torch's kernel does);
- ``torch._int_mm`` (int8 x int8 -> int32, quantised inference): on the matrix
  unit in f32, exact by chunks of the inner dimension (see :func:`_int_mm`).

Each rewrite returns ``NotImplemented`` for other dtypes, which leaves the op
to the next entry of the table (torch-mlir's, if it has one) or as it is.
"""

from __future__ import annotations

from typing import Callable

import torch

aten = torch.ops.aten

_INTEGER = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def _is_bool(x) -> bool:
    return isinstance(x, torch.Tensor) and x.dtype == torch.bool


def _bool_as_int32(op, fallback):
    """``op`` on bool tensors computed on int32 copies; the result cast back
    to bool when ``op`` returns the input's dtype (not for comparisons)."""
    def rewrite(*args, **kwargs):
        if not any(_is_bool(a) for a in args):
            return fallback(*args, **kwargs) if fallback else NotImplemented
        widened = [a.to(torch.int32) if _is_bool(a) else a for a in args]
        out = op(*widened, **kwargs)
        if isinstance(out, torch.Tensor) and out.dtype == torch.int32:
            return out.to(torch.bool)
        if isinstance(out, tuple):  # max.dim / min.dim: (values, indices)
            return (out[0].to(torch.bool), *out[1:])
        return out
    return rewrite


def _bool_mul(fallback):
    def rewrite(a, b):
        if _is_bool(a) and _is_bool(b):
            return torch.logical_and(a, b)
        return fallback(a, b) if fallback else NotImplemented
    return rewrite


def _integer_reciprocal(fallback):
    def rewrite(x):
        if x.dtype in _INTEGER or x.dtype == torch.bool:
            x = x.to(torch.get_default_dtype())
        if x.is_floating_point():
            return torch.div(1.0, x)
        return fallback(x) if fallback else NotImplemented
    return rewrite


def _integer_matmul(batched: bool, fallback):
    def rewrite(a, b):
        if a.dtype not in _INTEGER or b.dtype not in _INTEGER:
            return fallback(a, b) if fallback else NotImplemented
        # (..., m, k, 1) * (..., 1, k, n) summed over k.
        return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2, dtype=a.dtype)
    return rewrite


#: Inner-dimension chunk of an int8 matmul on the matrix unit: |a·b| <= 2^14 per
#: product, so a sum of 1024 of them stays within f32's exact integers (2^24).
_INT_MM_CHUNK = 1024


def _int_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``torch._int_mm`` (int8 x int8 -> int32) on the matrix unit, exactly: int8
    values are exact in f32, f32 products and sums of up to 1024 of them are
    exact integers; chunks of the inner dimension are added in int32 (wrapping
    as torch's int32 accumulator does)."""
    if a.dtype != torch.int8 or b.dtype != torch.int8:
        return NotImplemented
    out = None
    for start in range(0, a.shape[1], _INT_MM_CHUNK):
        stop = min(start + _INT_MM_CHUNK, a.shape[1])
        part = torch.mm(a[:, start:stop].to(torch.float32),
                        b[start:stop].to(torch.float32)).to(torch.int32)
        out = part if out is None else out + part
    return out


def dtype_decompositions(table: dict) -> dict[torch._ops.OperatorBase, Callable]:
    """The rewrites of this module, each falling back to ``table``'s entry
    for its op (if any) on the dtypes it does not rewrite."""
    out = {}
    for op in (aten.ge.Tensor, aten.gt.Tensor, aten.le.Tensor, aten.lt.Tensor,
               aten.ge.Scalar, aten.gt.Scalar, aten.le.Scalar, aten.lt.Scalar,
               aten.maximum.default, aten.minimum.default, aten.fmax.default,
               aten.fmin.default, aten.max.default, aten.min.default, aten.amax.default,
               aten.amin.default, aten.max.dim, aten.min.dim,
               aten.clamp.default, aten.clamp.Tensor, aten.clamp_min.default,
               aten.clamp_min.Tensor, aten.clamp_max.default, aten.clamp_max.Tensor):
        out[op] = _bool_as_int32(op, table.get(op))
    out[aten.mul.Tensor] = _bool_mul(table.get(aten.mul.Tensor))
    out[aten.reciprocal.default] = _integer_reciprocal(table.get(aten.reciprocal.default))
    out[aten.mm.default] = _integer_matmul(False, table.get(aten.mm.default))
    out[aten.bmm.default] = _integer_matmul(True, table.get(aten.bmm.default))
    out[aten._int_mm.default] = _int_mm
    return out
