"""Cross-entropy as a dense reduction over the classes, for logits split
along the vocabulary (a vocab-parallel LM head): Megatron's parallel
cross-entropy, as ``torch.distributed.tensor.parallel.loss_parallel`` gives.

torch lowers ``F.cross_entropy`` to a lookup of each row's target logit,
which sharding propagation cannot partition along a split vocabulary. Here
the target logit is ``sum(where(one_hot(target), logits, 0))`` instead, so each chip
reduces its slice of the vocabulary (the max, the sum of exponentials and
the target logit) and partitioning all-reduces three numbers per row; no
chip holds the full logits. The value is the same up to rounding: the
select adds exact zeros."""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

__all__ = ["dense_cross_entropy", "parallel_cross_entropy"]


def dense_cross_entropy(input: torch.Tensor, target: torch.Tensor, weight=None,
                        size_average=None, ignore_index: int = -100, reduce=None,
                        reduction: str = "mean", label_smoothing: float = 0.0) -> torch.Tensor:
    """``F.cross_entropy`` for class indices (classes on dim 1, or the only
    dim), with no class weights and no label smoothing."""
    if (weight is not None or label_smoothing or size_average is not None or reduce is not None
            or target.is_floating_point()):
        return None  # not this form: the caller runs torch's own
    if (input.dtype in (torch.bfloat16, torch.float16)
            and torch.is_autocast_enabled(input.device.type)):
        # Autocast runs F.cross_entropy in float32 (its fp32 cast policy),
        # which this mode intercepts before autocast sees the call.
        input = input.float()
    classes = 1 if input.dim() > 1 else 0
    logits = input.movedim(classes, -1)
    valid = target != ignore_index
    index = torch.where(valid, target, torch.zeros_like(target))
    one_hot = (index.unsqueeze(-1) == torch.arange(logits.shape[-1], device=index.device))
    rows = _RowCrossEntropy.apply(logits, one_hot)
    loss = torch.where(valid, rows, torch.zeros_like(rows))
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / valid.sum().to(loss.dtype)


class _RowCrossEntropy(torch.autograd.Function):
    """``logsumexp(logits) - sum(where(one_hot, logits, 0))`` over the last
    dim, with the gradient written as one op per term:
    ``exp(logits - peak) * (g / total) - where(one_hot, g, 0)``, each row factor
    broadcast inside the product. Autograd's own backward materialises the
    broadcast of ``g / total`` (the backward of the sum) as a tensor of its
    own whose only operand is a replicated row vector, which sharding
    propagation then keeps whole: a full ``[rows, vocab]`` tensor on every
    chip, sliced afterwards."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, one_hot: torch.Tensor) -> torch.Tensor:
        peak = logits.amax(-1, keepdim=True)
        exp = (logits - peak).exp()
        total = exp.sum(-1)
        ctx.save_for_backward(exp, total, one_hot)
        # A select, not a product with the one-hot as floats: one vector op
        # per logit fewer (the compare's conversion), the same exact zeros.
        target = torch.where(one_hot, logits, 0.0).sum(-1)
        return total.log() + peak.squeeze(-1) - target

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        exp, total, one_hot = ctx.saved_tensors
        row = grad.unsqueeze(-1)
        return exp * (grad / total).unsqueeze(-1) - torch.where(one_hot, row, 0.0), None


class _ParallelLossMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.cross_entropy:
            result = dense_cross_entropy(*args, **kwargs)
            if result is not None:
                return result
        return func(*args, **kwargs)


@contextlib.contextmanager
def parallel_cross_entropy() -> Iterator[None]:
    """While tracing: ``F.cross_entropy`` as :func:`dense_cross_entropy`."""
    with _ParallelLossMode():
        yield
