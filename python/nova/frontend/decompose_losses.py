"""Cross-entropy over the classes in fewer vector passes.

``F.cross_entropy`` is ``nll_loss(log_softmax(x))``. torch's decompositions
make of a ``[rows, classes]`` input, per element, on the vector unit:

    forward   m = amax(x); s = sum(exp(x - m)); out = (x - m) - log(s)
              (out stored for the backward; nll gathers one element per row)
    backward  G = where(target == iota, -1, 0) * w          # nll_loss_backward
              dx = G - exp(out) * sum(G, classes)           # _log_softmax_backward_data

with ``w`` each row's weight (``grad / total_weight`` for the mean, 0 on an
ignored row): 17 vector cycles per element (exp counts 4), at GPT-2's
vocabulary 2048 x 50304 elements each. Here:

    forward   m = amax(x); e = exp(x - m) (stored); s = sum(e);
              the loss from x[i, t_i] - m_i - log(s_i), one element per row
    backward  dx = where(target == iota, e c - w, e c),  c = w / s

(12 cycles; ``out`` is never formed, ``e`` takes its place in HBM). ``G`` has
exactly one non-zero per row (``-w`` at the target), so ``sum(G) = -w``, and
``exp(out) = e / s``: the gradient is torch's formula, with the softmax taken
as ``e / s`` rather than ``exp(out)`` (a few ulps of f32 apart); the loss is
bit for bit torch's (the same per-element subtractions, on the gathered
elements only).

Each decomposition records what it made for the tensor it returns:
``_log_softmax`` its row maxima, ``e``, ``s`` and ``log(s)``; ``nll_loss_backward``
its row weights and targets. A consumer takes the short path only when its
argument is that very tensor (so a log-softmax someone else also reads, or a
gradient something was added to, keeps torch's decomposition), the input
2-D float32 with the classes on dim 1 and no class weights. What the short
paths leave without readers (``out``, ``G``) the trace drops.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch._decomp import decompositions as torch_decomp

aten = torch.ops.aten

_NONE, _MEAN = 0, 1  # torch's Reduction values


class _Made:
    """What a decomposition made for the tensors it returned, found again from
    the tensor or any alias of it (autograd hands a saved output back as an
    ``alias``): same storage, sizes, strides and offset. Holds the tensors, so
    a storage cannot be freed and reused while recorded; one per trace."""

    def __init__(self) -> None:
        self._made: dict[int, list[tuple[torch.Tensor, tuple]]] = {}

    def record(self, tensor: torch.Tensor, parts: tuple) -> None:
        self._made.setdefault(tensor.untyped_storage()._cdata, []).append((tensor, parts))

    def find(self, tensor: torch.Tensor) -> tuple | None:
        for made, parts in self._made.get(tensor.untyped_storage()._cdata, ()):
            if (made.shape, made.stride(), made.storage_offset(), made.dtype) == \
                    (tensor.shape, tensor.stride(), tensor.storage_offset(), tensor.dtype):
                return parts
        return None


def _rewrites() -> dict[torch._ops.OperatorBase, Callable]:
    #: _log_softmax's result -> (x, row maxima, exp(x - max), row sums, their logs).
    log_softmax_parts = _Made()
    #: nll_loss_backward's result -> (row weights [N, 1], safe targets [N, 1]).
    one_hot_rows = _Made()

    def log_softmax(x, dim, half_to_float):
        if x.dim() != 2 or dim % 2 != 1 or x.dtype != torch.float32 or half_to_float:
            return torch_decomp._log_softmax(x, dim, half_to_float)
        x = x.contiguous()
        row_max = torch.amax(x, 1, keepdim=True)
        shifted = x - row_max
        exps = torch.exp(shifted)
        sums = torch.sum(exps, 1, keepdim=True)
        log_sum = torch.log(sums)
        result = shifted - log_sum
        log_softmax_parts.record(result, (x, row_max, exps, sums, log_sum))
        return result

    def nll_loss_forward(self, target, weight, reduction, ignore_index):
        parts = log_softmax_parts.find(self)
        if parts is None or weight is not None or self.dim() != 2 or target.dim() != 1:
            return torch_decomp.nll_loss_forward(self, target, weight, reduction, ignore_index)
        x, row_max, _, _, log_sum = parts
        # torch's _nll_loss_forward, gathering x and forming the log-softmax of
        # the gathered elements only (the same two subtractions per element).
        valid = target != ignore_index
        safe_target = torch.where(valid, target, 0).unsqueeze(1)
        picked = (torch.gather(x, 1, safe_target) - row_max) - log_sum
        result = torch.where(valid, -picked.squeeze(1), 0)
        if reduction == _NONE:
            return result, self.new_full((), 0.0)
        total_weight = valid.sum().to(self)
        result = result.sum()
        if reduction == _MEAN:
            result = result / total_weight
        return result, total_weight

    def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
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
            one_hot_rows.record(result, (rows, torch.where(valid, target, 0)))
        return result

    def log_softmax_backward_data(grad_output, output, dim, input_dtype):
        known = one_hot_rows.find(grad_output)
        if known is None or output.dim() != 2 or dim % 2 != 1 or \
                output.dtype != torch.float32 or grad_output.dtype != torch.float32:
            return torch_decomp._log_softmax_backward_data(grad_output, output, dim,
                                                           input_dtype)
        rows, target = known
        parts = log_softmax_parts.find(output)
        if parts is None:
            scaled = torch.exp(output) * rows
        else:  # exp(output) = e / s, the row's division folded into its weight
            _, _, exps, sums, _ = parts
            scaled = exps * (rows / sums)
        classes = torch.arange(output.shape[1], device=output.device).unsqueeze(0)
        grad = torch.where(target == classes, scaled - rows, scaled)
        return grad if input_dtype == grad.dtype else grad.to(input_dtype)

    return {aten._log_softmax.default: log_softmax,
            aten.nll_loss_forward.default: nll_loss_forward,
            aten.nll_loss_backward.default: nll_loss_backward,
            aten._log_softmax_backward_data.default: log_softmax_backward_data}


def loss_decompositions() -> dict[torch._ops.OperatorBase, Callable]:
    """The four decompositions, sharing what they record (one table per trace)."""
    return _rewrites()
