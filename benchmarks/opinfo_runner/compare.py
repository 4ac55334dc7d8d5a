"""Nova's outputs against eager's: floats within a tolerance (NaN and
infinities in the same places), integers and bools exactly, dtypes and shapes equal."""

from __future__ import annotations

import torch

from .ops import DEFAULT_TOLERANCE


def compare(got, want, tol: tuple[float, float] | None = None,
            sample_dtype: torch.dtype | None = None) -> tuple[bool, str]:
    """Whether ``got`` matches ``want``; a short reason when not. ``tol``
    (rtol, atol) applies to outputs of ``sample_dtype``; others get their
    dtype's default."""
    if len(got) != len(want):
        return False, f"{len(got)} outputs, eager has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(g, torch.Tensor):
            return False, f"output {i} is {type(g).__name__}, eager has a tensor"
        if tuple(g.shape) != tuple(w.shape):
            return False, f"output {i} shape {tuple(g.shape)}, eager {tuple(w.shape)}"
        if g.dtype != w.dtype:
            same = torch.equal(g.to(w.dtype), w)
            return False, (f"output {i} dtype {g.dtype}, eager {w.dtype} "
                           f"(values {'equal' if same else 'differ'} as {w.dtype})")
        if w.numel() == 0:
            continue
        if w.is_complex():
            g, w = torch.view_as_real(g), torch.view_as_real(w)
        if w.is_floating_point():
            rtol, atol = (tol if tol is not None and w.dtype == sample_dtype
                          else DEFAULT_TOLERANCE.get(w.dtype, DEFAULT_TOLERANCE[torch.float32]))
            why = _close(g.double(), w.double(), rtol, atol)
            if why:
                return False, f"output {i}{why}"
        elif not torch.equal(g, w):
            bad = g != w
            j = int(bad.flatten().nonzero()[0])
            return False, (f"output {i}: {int(bad.sum())}/{w.numel()} elements differ "
                           f"(got {g.flatten()[j].item()}, eager {w.flatten()[j].item()})")
    return True, ""


def _close(g64, w64, rtol: float, atol: float) -> str:
    nan_g, nan_w = torch.isnan(g64), torch.isnan(w64)
    if not torch.equal(nan_g, nan_w):
        return f" NaN at {int(nan_g.sum())} places, eager at {int(nan_w.sum())}"
    numel = w64.numel()
    g64, w64 = g64[~nan_w], w64[~nan_w]
    inf = torch.isinf(w64)
    if not torch.equal(g64[inf], w64[inf]):
        return " infinities differ"
    g64, w64 = g64[~inf], w64[~inf]
    if g64.numel() == 0:
        return ""
    err = (g64 - w64).abs()
    bad = ~(err <= atol + rtol * w64.abs())  # NaN or inf where eager is finite: bad
    if bool(bad.any()):
        j = int(torch.where(bad, torch.nan_to_num(err, nan=float("inf")), -1.0).argmax())
        return (f": {int(bad.sum())}/{numel} elements off (rtol {rtol:g}, atol {atol:g}), "
                f"worst got {float(g64[j]):.6g}, eager {float(w64[j]):.6g}")
    return ""
