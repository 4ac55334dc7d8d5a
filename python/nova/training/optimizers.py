"""The updates of ``torch.optim.SGD`` and ``torch.optim.AdamW`` as plain tensor
ops, traced into the step program, and their state in torch's format.

Each rule reads a parameter group's hyperparameters from
``optimizer.param_groups`` at every call and turns them into the program's
0-d float32 inputs (:meth:`hyper_values`), so a ``torch.optim.lr_scheduler``
drives the compiled step unchanged. The scalar arithmetic torch's optimizers
do in Python floats (``1 - lr * weight_decay``, ``lr / (1 - beta1 ** t)``,
``sqrt(1 - beta2 ** t)``, the first momentum step's ``buf = grad``) is done
here in float64, as there, from the hyperparameters and the step count; the
tensor arithmetic runs on the chip: SGD's in the order torch's single-tensor
(``foreach=False``) CPU kernels use, AdamW's with its scalar factors folded
(:class:`AdamWRule`: fewer vector operations per element, the same values to
a few ulps).

What changes the program's structure (SGD's ``nesterov``, whether
``momentum`` is 0, ``maximize``, ``amsgrad``) is fixed at compile time;
a call that finds it changed raises ``TrainStepError``.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from nova.training.errors import TrainStepError


class UpdateRule:
    """One optimizer's update; subclasses set ``slots`` and ``hypers``."""

    #: Per-parameter state tensors, in torch's state names.
    slots: tuple[str, ...] = ()
    #: The names of a group's hyperparameter inputs.
    hypers: tuple[str, ...] = ()

    def check(self, group: dict[str, Any]) -> None:
        """Raises TrainStepError if ``group`` needs another program."""

    def hyper_values(self, group: dict[str, Any], steps: int) -> list[float]:
        """The group's hyperparameter inputs, ``steps`` updates done before this one."""
        raise NotImplementedError

    def update(self, params: list[torch.Tensor], grads: list[torch.Tensor],
               slots: list[list[torch.Tensor]], h: dict[str, torch.Tensor],
               scale: torch.Tensor | None = None
               ) -> tuple[list[torch.Tensor], list[list[torch.Tensor]]]:
        """New parameters and slots from ``grads`` times ``scale`` (a 0-d
        tensor, gradient clipping's factor; None: 1). Passing the factor in,
        instead of scaled gradients, lets a rule fold it into its own
        arithmetic: the scaled gradients are never stored."""
        raise NotImplementedError

    def torch_state(self, slots: dict[str, torch.Tensor], steps: int) -> dict[str, Any]:
        """One parameter's entry of ``optimizer.state_dict()["state"]``."""
        raise NotImplementedError

    def read_state(self, entry: dict[str, Any]) -> tuple[dict[str, torch.Tensor], int | None]:
        """A parameter's slots and step count from its torch state entry (None:
        the optimizer does not record a count)."""
        raise NotImplementedError


def _scalar(value: Any) -> float:
    return float(value.item() if isinstance(value, torch.Tensor) else value)


class SGDRule(UpdateRule):
    """``torch.optim.SGD``: weight decay, momentum with dampening, Nesterov.

    On the first step torch's momentum buffer is the gradient itself; later
    ``buf = momentum * buf + (1 - dampening) * grad``. Both are
    ``buf_scale * buf + grad_scale * grad``, the scales inputs of the program
    (0 and 1 first, ``momentum`` and ``1 - dampening`` after)."""

    def __init__(self, group: dict[str, Any]) -> None:
        self.nesterov = bool(group["nesterov"])
        self.has_momentum = _scalar(group["momentum"]) != 0
        self.slots = ("momentum_buffer",) if self.has_momentum else ()
        self.hypers = (("lr", "weight_decay", "momentum", "buf_scale", "grad_scale")
                       if self.has_momentum else ("lr", "weight_decay"))
        self.check(group)

    def check(self, group: dict[str, Any]) -> None:
        if group.get("maximize"):
            raise TrainStepError("SGD(maximize=True) is not supported")
        if bool(group["nesterov"]) != self.nesterov:
            raise TrainStepError("SGD's nesterov changed since the step was compiled")
        if (_scalar(group["momentum"]) != 0) != self.has_momentum:
            raise TrainStepError("SGD's momentum changed between 0 and non-zero since the "
                                 "step was compiled (the momentum buffers come and go)")

    def hyper_values(self, group: dict[str, Any], steps: int) -> list[float]:
        values = [_scalar(group["lr"]), _scalar(group["weight_decay"])]
        if self.has_momentum:
            momentum = _scalar(group["momentum"])
            first = steps == 0
            values += [momentum, 0.0 if first else momentum,
                       1.0 if first else 1.0 - _scalar(group["dampening"])]
        return values

    def update(self, params, grads, slots, h, scale=None):
        new_params, new_bufs = [], []
        for i, (p, g) in enumerate(zip(params, grads)):
            if scale is not None:
                g = g * scale
            g = g + h["weight_decay"] * p
            if self.has_momentum:
                buf = slots[0][i] * h["buf_scale"] + h["grad_scale"] * g
                new_bufs.append(buf)
                g = g + h["momentum"] * buf if self.nesterov else buf
            new_params.append(p - h["lr"] * g)
        return new_params, [new_bufs] if self.has_momentum else []

    def torch_state(self, slots, steps):
        if not self.has_momentum or steps == 0:
            return {}
        return {"momentum_buffer": slots["momentum_buffer"]}

    def read_state(self, entry):
        buf = entry.get("momentum_buffer")
        if buf is None:
            return {}, 0
        return {"momentum_buffer": buf}, None


class AdamWRule(UpdateRule):
    """``torch.optim.AdamW``: decoupled weight decay, bias-corrected moments.

    Inputs per group: ``decay = 1 - lr * weight_decay``, ``1 - beta1``,
    ``beta2``, ``1 - beta2``, ``step = lr / (1 - beta1 ** t) *
    sqrt(1 - beta2 ** t)`` and ``eps_bc2 = eps * sqrt(1 - beta2 ** t)``, from
    the group and the step count ``t`` (torch's ``state["step"]``).

    torch's ``p -= lr / bc1 * m / (sqrt(v) / bc2 + eps)`` (``bc1 = 1 -
    beta1 ** t``, ``bc2 = sqrt(1 - beta2 ** t)``) is evaluated as ``p -= step
    * m / (sqrt(v) + eps * bc2)``, the same value with the bias corrections
    folded into the host's float64 scalars: one division per element instead
    of two (a division costs the vector unit four times an add); the moments
    are updated as torch's single-tensor kernel does, a clip factor folded
    into them (the clipped gradients are not stored). The folding moves the
    result by a few ulps of f32 (torch's own foreach and fused kernels differ
    from its single-tensor one by as much)."""

    slots = ("exp_avg", "exp_avg_sq")
    hypers = ("decay", "one_minus_beta1", "beta2", "one_minus_beta2", "step", "eps_bc2")

    def __init__(self, group: dict[str, Any]) -> None:
        self.check(group)

    def check(self, group: dict[str, Any]) -> None:
        if group.get("amsgrad"):
            raise TrainStepError("AdamW(amsgrad=True) is not supported")
        if group.get("maximize"):
            raise TrainStepError("AdamW(maximize=True) is not supported")

    def hyper_values(self, group: dict[str, Any], steps: int) -> list[float]:
        lr, wd, eps = _scalar(group["lr"]), _scalar(group["weight_decay"]), _scalar(group["eps"])
        beta1, beta2 = (_scalar(b) for b in group["betas"])
        t = steps + 1  # torch increments state["step"] before using it
        bc2 = math.sqrt(1.0 - beta2 ** t)
        return [1.0 - lr * wd, 1.0 - beta1, beta2, 1.0 - beta2,
                lr / (1.0 - beta1 ** t) * bc2, eps * bc2]

    def update(self, params, grads, slots, h, scale=None):
        new_params, new_m, new_v = [], [], []
        # Written so that each pair of operations is one two-stage vector
        # instruction: 2 passes for m and 2 for v, the clip's factor included.
        c2 = h["one_minus_beta2"] if scale is None else scale * scale * h["one_minus_beta2"]
        for p, g, m, v in zip(params, grads, slots[0], slots[1]):
            delta = g - m if scale is None else g * scale - m
            m = m + delta * h["one_minus_beta1"]  # torch's lerp for a weight < 0.5
            # torch's addcmul order, (value * g) * g; with a clip factor c,
            # (c^2 value * g) * g is (value * cg) * cg to a few ulps.
            v = v * h["beta2"] + (g * c2) * g
            update = h["step"] * (m / (torch.sqrt(v) + h["eps_bc2"]))
            new_params.append(p * h["decay"] - update)
            new_m.append(m)
            new_v.append(v)
        return new_params, [new_m, new_v]

    def torch_state(self, slots, steps):
        if steps == 0:
            return {}
        return {"step": torch.tensor(float(steps)), "exp_avg": slots["exp_avg"],
                "exp_avg_sq": slots["exp_avg_sq"]}

    def read_state(self, entry):
        if "exp_avg" not in entry:
            return {}, 0
        return ({"exp_avg": entry["exp_avg"], "exp_avg_sq": entry["exp_avg_sq"]},
                int(_scalar(entry["step"])))


def rule_for(optimizer: torch.optim.Optimizer) -> UpdateRule:
    """The update rule of ``optimizer`` (an SGD or AdamW), from its first group;
    every group must agree on what fixes the program's structure."""
    groups = optimizer.param_groups
    if isinstance(optimizer, torch.optim.AdamW):
        rule: UpdateRule = AdamWRule(groups[0])
    elif type(optimizer) is torch.optim.SGD:
        rule = SGDRule(groups[0])
    else:
        raise TrainStepError(f"{type(optimizer).__name__} is not supported: Nova compiles the "
                             "updates of torch.optim.SGD and torch.optim.AdamW")
    for group in groups[1:]:
        rule.check(group)
    return rule
