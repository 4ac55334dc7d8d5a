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

    dx = where(target == iota, e w - w, e w),  e = exp(out)

(exp, mul, cmp, sub, select: no reduction and no ``G``), bit for bit what
torch's formula gives: ``0 - e (-w) = e w`` off the target, ``-w - e (-w) =
e w - w`` on it. ``nll_loss_backward`` records its row weights and targets
for the tensor it returns; ``_log_softmax_backward_data`` takes this path
only when its gradient is that very tensor (a tensor nothing else was added
to), the input 2-D with the classes on dim 1 and no class weights; anything
else keeps torch's decomposition. ``G`` is then left without readers and the
trace drops it.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch._decomp import decompositions as torch_decomp
from torch.utils.weak import WeakIdKeyDictionary

aten = torch.ops.aten

_MEAN = 1  # torch's Reduction.MEAN

#: nll_loss_backward's result -> (row weights [N, 1], safe targets [N, 1]).
_one_hot_rows: WeakIdKeyDictionary = WeakIdKeyDictionary()


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
    scaled = torch.exp(output) * rows
    classes = torch.arange(output.shape[1], device=output.device).unsqueeze(0)
    grad = torch.where(target == classes, scaled - rows, scaled)
    return grad if input_dtype == grad.dtype else grad.to(input_dtype)


def loss_decompositions() -> dict[torch._ops.OperatorBase, Callable]:
    return {aten.nll_loss_backward.default: _nll_loss_backward,
            aten._log_softmax_backward_data.default: _log_softmax_backward_data}
