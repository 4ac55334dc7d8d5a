"""Random small models for the fuzzer of torch.compile(backend="nova")'s
per-op fallback in training: chains and joins of ops Nova lowers with ops it
cannot lower, placed so that the op Nova cannot lower is in the forward graph
(``erfinv``, ``erfc``, ``median``), in the backward graph only (a custom
autograd.Function whose backward calls ``erfinv``), or in both (``lgamma``,
whose derivative is ``digamma``; ``digamma``, whose derivative is
``polygamma``; ``i0``, whose derivative is ``special_i1``).

A case must run (the ops Nova lowers on Nova, the rest in eager: a graph
refused whole counts as a failure) and give eager's outputs and the
gradients of every parameter and of the input (:func:`check`). Case ``i``
of seed ``s`` is always the same model (:func:`make_case`).
"""

from __future__ import annotations

import copy
import random
import warnings
from dataclasses import dataclass
from typing import Callable

import torch

WIDTH, BATCH = 8, 4
RTOL, ATOL = 1e-4, 1e-5


class _ErfinvBackward(torch.autograd.Function):
    """Forward ``1.5 x`` (Nova lowers it); backward ``g (1.5 + erfinv(tanh(x) / 2))``,
    whose ``erfinv`` Nova cannot lower: an op in the backward graph only."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * 1.5

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * (1.5 + torch.erfinv(torch.tanh(x) * 0.5))


UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "exp": lambda h: torch.exp(h * 0.1),
    "square": lambda h: h * h * 0.1,
    "softmax": lambda h: torch.softmax(h, -1),
    "center": lambda h: h - h.mean(-1, keepdim=True),
    "layer_norm": lambda h: torch.nn.functional.layer_norm(h, (WIDTH,)),
    "sum": lambda h: h.sum(-1, keepdim=True) * 0.1 + h,
}
#: Ops Nova cannot lower: name -> (function, where: forward / backward / both).
EAGER: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], str]] = {
    "erfinv": (lambda h: torch.erfinv(torch.tanh(h) * 0.5), "forward"),
    "erfc": (torch.erfc, "forward"),
    "median": (lambda h: h - torch.median(h, -1, keepdim=True)[0], "forward"),
    "erfinv_backward": (_ErfinvBackward.apply, "backward"),
    "lgamma": (lambda h: torch.lgamma(h.abs() + 1.0), "both"),
    "digamma": (lambda h: torch.digamma(h.abs() + 1.0), "both"),
    "i0": (lambda h: torch.special.i0(h * 0.5), "both"),
}
BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": torch.add,
    "mul": lambda a, b: a * b * 0.5,
    "sub": torch.sub,
}


@dataclass(frozen=True)
class Step:
    op: str            # a key of UNARY, EAGER or BINARY, or "linear<i>"
    inputs: tuple[int, ...]


@dataclass(frozen=True)
class Case:
    steps: tuple[Step, ...]
    outputs: tuple[int, ...]
    linears: int
    input_grad: bool
    seed: int

    @property
    def placement(self) -> set[str]:
        return {EAGER[s.op][1] for s in self.steps if s.op in EAGER}

    def describe(self) -> str:
        body = "; ".join(f"v{i + 1}={s.op}({','.join(f'v{j}' for j in s.inputs)})"
                         for i, s in enumerate(self.steps))
        return f"{body}; out {list(self.outputs)}; x.requires_grad={self.input_grad}"


class Model(torch.nn.Module):
    def __init__(self, case: Case) -> None:
        super().__init__()
        self.case = case
        self.linears = torch.nn.ModuleList(torch.nn.Linear(WIDTH, WIDTH)
                                           for _ in range(case.linears))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values = [x]
        for step in self.case.steps:
            args = [values[i] for i in step.inputs]
            if step.op.startswith("linear"):
                values.append(self.linears[int(step.op[6:])](args[0]))
            elif step.op in UNARY:
                values.append(UNARY[step.op](args[0]))
            elif step.op in EAGER:
                values.append(EAGER[step.op][0](args[0]))
            else:
                values.append(BINARY[step.op](*args))
        return tuple(values[i] for i in self.case.outputs)


def make_case(seed: int, index: int) -> Case:
    """Case ``index`` of ``seed``: 3-9 steps, at least one linear and one op
    Nova cannot lower."""
    rng = random.Random(seed * 1_000_003 + index)
    linears = rng.randint(1, 3)
    count = rng.randint(3, 9)
    forced = {rng.randrange(count): "eager", rng.randrange(count): "linear"}
    steps: list[Step] = []
    for i in range(count):
        available = i + 1  # x and the values made so far
        pick = lambda: rng.randrange(available) if rng.random() < 0.3 else available - 1
        kind = forced.get(i) or rng.choices(["linear", "unary", "eager", "binary"],
                                            [3, 4, 2, 2])[0]
        if kind == "linear":
            steps.append(Step(f"linear{rng.randrange(linears)}", (pick(),)))
        elif kind == "unary":
            steps.append(Step(rng.choice(sorted(UNARY)), (pick(),)))
        elif kind == "eager":
            steps.append(Step(rng.choice(sorted(EAGER)), (pick(),)))
        else:
            steps.append(Step(rng.choice(sorted(BINARY)), (pick(), rng.randrange(available))))
    last = len(steps)
    outputs = {last, *rng.sample(range(1, last + 1), rng.randint(0, 2))}
    trained = [False]  # whether value i depends on a parameter
    for step in steps:
        trained.append(step.op.startswith("linear") or any(trained[i] for i in step.inputs))
    if not any(trained[i] for i in outputs):  # the loss must reach a parameter
        outputs.add(max(i for i, t in enumerate(trained) if t))
    outputs = sorted(outputs)
    return Case(tuple(steps), tuple(outputs), linears, rng.random() < 0.5, seed)


def check(case: Case, index: int = 0) -> str | None:
    """Runs ``case`` compiled with Nova and in eager; None when it matches,
    else what went wrong (an exception, a graph refused whole, a mismatch)."""
    import nova.dynamo

    torch.manual_seed(case.seed * 7919 + index)
    model = Model(case)
    reference = copy.deepcopy(model)
    x = torch.randn(BATCH, WIDTH)
    weights = [torch.randn(BATCH, WIDTH) for _ in case.outputs]
    rows_before = len(nova.dynamo.report())
    torch._dynamo.reset()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = []
            for net in (torch.compile(model, backend="nova"), reference):
                xi = x.clone().requires_grad_(case.input_grad)
                outs = net(xi)
                sum((o * w).sum() for o, w in zip(outs, weights)).backward()
                grads = [p.grad for p in (net if net is reference else model).parameters()]
                results.append((outs, grads, xi.grad))
    except Exception as error:  # a crash or a refusal is a failure, reported as such
        return f"raised {type(error).__name__}: {str(error).splitlines()[0][:300]}"
    (outs, grads, x_grad), (ref_outs, ref_grads, ref_x_grad) = results
    exact = None  # the float64 run, made only when float32 results differ
    for i, (a, b) in enumerate(zip(outs, ref_outs)):
        if not torch.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True):
            exact = exact or _float64_run(case, reference, x, weights)
            if not _as_accurate(a, b, exact[0][i]):
                return f"output {i} differs by {(a - b).abs().max().item():.3g}"
    for i, (a, b) in enumerate(zip(grads + [x_grad], ref_grads + [ref_x_grad])):
        if (a is None) != (b is None):
            return f"gradient {i} is {'None' if a is None else 'set'} in Nova, not in eager"
        if a is not None and not torch.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True):
            exact = exact or _float64_run(case, reference, x, weights)
            if not _as_accurate(a, b, exact[1][i]):
                return f"gradient {i} differs by {(a - b).abs().max().item():.3g}"
    for row in list(nova.dynamo.report())[rows_before:]:
        if row.eager_reason is not None:
            return f"graph {row.label} ran whole in eager: {row.eager_reason}"
        if row.partitions < 1 and row.calls:
            return f"graph {row.label} ran nothing on Nova"
    return None


#: How much further from the float64 result than eager's Nova may be, when the two
#: float32 results differ beyond RTOL / ATOL (torch.compile's own accuracy rule,
#: ``torch._dynamo.utils.same(..., fp64_ref=...)``, allows a multiple of eager's error).
FP64_MULTIPLIER = 3.0


def _float64_run(case: Case, reference: torch.nn.Module, x: torch.Tensor,
                 weights: list[torch.Tensor]) -> tuple[list, list]:
    """Outputs and gradients (parameters, then x) of the eager program in float64.
    Ill-conditioned chains (a layer_norm of nearly constant rows after lgamma's
    poles) amplify float32 rounding: which of two float32 results is right is told
    by the float64 one."""
    model = copy.deepcopy(reference).double()
    model.zero_grad()
    xi = x.double().requires_grad_(case.input_grad)
    outs = model(xi)
    sum((o * w.double()).sum() for o, w in zip(outs, weights)).backward()
    return list(outs), [p.grad for p in model.parameters()] + [xi.grad]


def _as_accurate(got: torch.Tensor, eager: torch.Tensor, exact: torch.Tensor | None) -> bool:
    """Whether Nova's float32 ``got`` is within FP64_MULTIPLIER of eager's error
    against the float64 ``exact`` (plus ATOL), NaNs where eager has them."""
    if exact is None:
        return False
    exact = exact.detach().float()
    if not torch.equal(got.isnan(), eager.isnan()):
        return False
    keep = ~eager.isnan()
    nova_error = (got[keep].detach() - exact[keep]).abs().max().item() if keep.any() else 0.0
    eager_error = (eager[keep].detach() - exact[keep]).abs().max().item() if keep.any() else 0.0
    return nova_error <= FP64_MULTIPLIER * eager_error + ATOL
