"""Cross-entropy's backward over the classes in fewer vector passes.

``F.cross_entropy`` is ``nll_loss(log_softmax(x))``; autograd runs the two
backwards in turn, and their decompositions (torch's) make of a
``[rows, classes]`` logits gradient:

    G = where(target == iota, -1, 0) * w          # nll_loss_backward: cmp, select, mul
    dx = G - exp(out) * sum(G, classes)           # sum, exp, mul, sub

with ``w`` each row's weight (``grad / total_weight`` for the mean, 0 on an
ignored row). At GPT-2's vocabulary these are passes over 2048 x 50304
elements each, on the vector unit. ``G`` has exactly one non-zero per row
(``-w`` at the target), so ``sum(G) = -w`` and

    dx = e w + (target == iota) (-w),  e = exp(out)

(exp, mul, a compare writing 0.0 / 1.0, one multiply-add instruction: no
reduction, no ``G`` and no select), bit for bit what torch's formula gives:
``0 - e (-w) = e w`` off the target (``e w + -0``), ``-w - e (-w) = e w -
w`` on it. The classes and targets are compared as f32 (exact below
2^24 classes). ``nll_loss_backward`` records its row weights and targets
for the tensor it returns; ``_log_softmax_backward_data`` takes this path
only when its gradient is that very tensor (a tensor nothing else was added
to), the input 2-D with the classes on dim 1 and no class weights; anything
else keeps torch's decomposition. ``G`` is then left without readers and the
trace drops it.

The forward is decomposed with its parts kept: ``log_softmax(x)`` as ``s = x
- max``, ``E = exp(s)``, ``lse = log(sum(E))``, ``out = s - lse``. Its
backward then takes ``e = E * exp(-lse)`` (one multiply by a per-row factor
where ``exp(out)`` cost an exp per element), and ``nll_loss`` picks
``x[target] - max - lse`` (one element per row) instead of reading ``out``:
``out`` is left without readers, so the log-probabilities are never written,
and ``x - max`` has one reader (the exp) and fuses into it. Over GPT-2's
logits that is two passes of 2048 x 50304 f32 and four vector operations per
element fewer. ``e`` differs from ``exp(out)`` by rounding (two roundings
instead of one, within f32's epsilon); the loss is the same sum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch._decomp import decompositions as torch_decomp
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils.weak import WeakIdKeyDictionary

aten = torch.ops.aten

_NONE, _MEAN = 0, 1  # torch's Reduction.NONE, MEAN

#: nll_loss_backward's result -> (row weights [N, 1], safe targets [N, 1]).
_one_hot_rows: WeakIdKeyDictionary = WeakIdKeyDictionary()


@dataclass(frozen=True)
class _Parts:
    """A 2-D f32 log_softmax over dim 1: its input, row max, exps and row log-sum-exp."""
    x: torch.Tensor
    x_max: torch.Tensor
    exps: torch.Tensor
    lse: torch.Tensor
    layout: tuple
    #: The result's storage: an entry whose storage has died is stale, even
    #: when a new storage (another trace's) reuses its address.
    key: StorageWeakRef


#: log_softmax's result, by storage (autograd saves an output as a new tensor
#: sharing it) -> its parts.
_log_softmax_parts: dict[StorageWeakRef, _Parts] = {}


def _layout(t: torch.Tensor) -> tuple:
    return tuple(t.shape), t.stride(), t.storage_offset(), t.dtype


def _parts_of(t: torch.Tensor) -> _Parts | None:
    """``t``'s parts if ``t`` is a log_softmax result of this trace: never an
    entry of another trace (another fake mode), whose tensors would enter
    this graph as constants (a wrong loss and gradients)."""
    from torch._subclasses.fake_tensor import maybe_get_fake_mode

    parts = _log_softmax_parts.get(StorageWeakRef(t.untyped_storage()))
    if parts is None or parts.key.expired() or parts.layout != _layout(t) or \
            maybe_get_fake_mode(parts.x) is not maybe_get_fake_mode(t):
        return None
    return parts


def _log_softmax(x, dim, half_to_float):
    if half_to_float or x.dim() != 2 or dim % 2 != 1 or x.dtype != torch.float32 or \
            x.shape[1] == 0:
        return torch_decomp._log_softmax(x, dim, half_to_float)
    x = x.contiguous()
    x_max = torch.amax(x, 1, keepdim=True)
    shifted = x - x_max
    exps = torch.exp(shifted)
    lse = torch.log(torch.sum(exps, 1, keepdim=True))
    result = shifted - lse
    for key in [k for k in _log_softmax_parts if k.expired()]:
        del _log_softmax_parts[key]
    key = StorageWeakRef(result.untyped_storage())
    _log_softmax_parts[key] = _Parts(x, x_max, exps, lse, _layout(result), key)
    return result


def _nll_loss_forward(self, target, weight, reduction, ignore_index):
    parts = _parts_of(self) if weight is None and self.dim() == 2 and target.dim() == 1 \
        else None
    if parts is None:
        return torch_decomp._nll_loss_forward(self, target, weight, reduction, ignore_index)
    valid = target != ignore_index
    safe = torch.where(valid, target, 0).unsqueeze(1)
    picked = torch.gather(parts.x, 1, safe) - parts.x_max - parts.lse  # out[target]
    result = torch.where(valid, -picked.squeeze(1), 0)
    if reduction == _NONE:
        return result, self.new_full((), 0.0)
    total_weight = valid.sum().to(self)
    result = result.sum()
    return (result / total_weight if reduction == _MEAN else result), total_weight


def _nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
                       total_weight):
    result = torch_decomp.nll_loss_backward(grad_output, self, target, weight, reduction,
                                            ignore_index, total_weight)
    if self.dim() == 2 and target.dim() == 1 and weight is None and \
            self.dtype == torch.float32:
        go = grad_output / total_weight if reduction == _MEAN else grad_output
        target = target.unsqueeze(1)
        valid = target != ignore_index
        go = go.unsqueeze(1) if go.dim() == 1 else go
        rows = torch.where(valid, go.to(self.dtype), 0)  # [N, 1]
        _one_hot_rows[result] = (rows, torch.where(valid, target, 0))
    return result


def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    known = _one_hot_rows.get(grad_output)
    if known is None or output.dim() != 2 or dim % 2 != 1 or \
            output.dtype != torch.float32 or grad_output.dtype != torch.float32:
        return torch_decomp._log_softmax_backward_data(grad_output, output, dim, input_dtype)
    rows, target = known
    parts = _parts_of(output)
    scaled = (parts.exps * (torch.exp(-parts.lse) * rows) if parts is not None
              else torch.exp(output) * rows)
    # where(target == classes, scaled - rows, scaled), one pass fewer: see
    # the module docstring.
    if output.shape[1] > 2 ** 24:  # class indices no longer exact in f32
        classes = torch.arange(output.shape[1], device=output.device).unsqueeze(0)
        grad = torch.where(target == classes, scaled - rows, scaled)
    else:
        classes = torch.arange(output.shape[1], device=output.device,
                               dtype=torch.float32).unsqueeze(0)
        hit = (target.to(torch.float32) == classes).to(torch.float32)
        grad = scaled + hit * -rows
    return grad if input_dtype == grad.dtype else grad.to(input_dtype)


def loss_decompositions() -> dict[torch._ops.OperatorBase, Callable]:
    return {aten._log_softmax.default: _log_softmax,
            aten.nll_loss_forward.default: _nll_loss_forward,
            aten.nll_loss_backward.default: _nll_loss_backward,
            aten._log_softmax_backward_data.default: _log_softmax_backward_data}
