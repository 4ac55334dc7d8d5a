"""The cells of docs/models.md: each Hugging Face architecture of
:mod:`hf_zoo` in its default configuration (only sizes set) through each way
a user runs it on Nova, checked against torch eager.

``scripts/models_table`` writes the table from :func:`run_cell`;
``test/python/api/test_models_table.py`` asserts every cell. A cell is a
pass only when its numbers match eager's:

- inference (``nova.compile``, ``torch.compile``): every output tensor within
  rtol 1e-4 / atol 1e-5;
- training (3 AdamW steps, dropout probabilities 0): the loss at every step
  within rtol 1e-4 and every parameter's gradient at step 1 within
  max |delta| <= 1e-3 * max |eager grad| + 1e-6 (per parameter; the 1e-6 is for a
  gradient that is zero in exact arithmetic, where eager holds rounding noise:
  :func:`hf_zoo.gradient_mismatches`).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import torch

import hf_zoo

RTOL, ATOL = 1e-4, 1e-5
STEPS = 3

#: Columns of the table, in order: (key, heading).
CELLS = (
    ("infer_nova", "inference, `nova.compile`"),
    ("infer_dynamo", "inference, `torch.compile`"),
    ("train_dynamo", "3 AdamW steps, `torch.compile`"),
    ("train_step", "3 AdamW steps, `compile_train_step`"),
)
#: Extra rows: a padded batch with an ``attention_mask`` (training cells only).
PADDED = ("gpt2", "llama")


@dataclass(frozen=True)
class CellResult:
    ok: bool
    detail: str          # the worst error against eager, or the failure
    seconds: float


def _optimizer(parameters: Any) -> torch.optim.Optimizer:
    return torch.optim.AdamW(parameters, lr=1e-3)


def _tensors(value: Any, prefix: str = "") -> dict[str, torch.Tensor]:
    """Every tensor in a model output (ModelOutput, tuple, cache), by path."""
    if isinstance(value, torch.Tensor):
        return {prefix: value}
    found: dict[str, torch.Tensor] = {}
    if hasattr(value, "to_tuple"):
        value = dict(value.items())
    if isinstance(value, dict):
        for key, item in value.items():
            found.update(_tensors(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            found.update(_tensors(item, f"{prefix}[{i}]"))
    return found


def _compare_outputs(out: Any, ref: Any) -> str:
    got, want = _tensors(out), _tensors(ref)
    if "logits" not in want or "logits" not in got:
        raise AssertionError(f"outputs {sorted(got)} lack logits (eager: {sorted(want)})")
    worst = 0.0
    for key, expected in want.items():
        if key not in got:
            continue  # caches Nova returns in another structure are checked through logits
        torch.testing.assert_close(got[key], expected, rtol=RTOL, atol=ATOL, msg=lambda m: f"{key}: {m}")
        worst = max(worst, (got[key].float() - expected.float()).abs().max().item())
    return f"max |Δ| {worst:.1e}"


def _inference_batch(name: str) -> dict[str, torch.Tensor]:
    """Keyword inputs without labels; an encoder-decoder also gets the decoder's
    ids (T5 does not make them itself without labels)."""
    batch = hf_zoo.example(name, labels=False)
    if hf_zoo.ARCHITECTURES[name].kind == "seq2seq":
        batch["decoder_input_ids"] = hf_zoo.example(name, seed=2, labels=False)["input_ids"][:, :5]
    return batch


def _infer_nova(name: str) -> str:
    import nova.dynamo as _  # noqa: F401 - nova.dynamo.report
    import nova

    model = hf_zoo.build(name, train=False)
    batch = _inference_batch(name)
    out = nova.compile(model, target="nova-t1", **batch)(**batch)
    with torch.no_grad():
        ref = model(**batch)
    return _compare_outputs(out, ref)


def _infer_dynamo(name: str) -> str:
    import nova.dynamo as _  # noqa: F401 - nova.dynamo.report
    import nova

    torch._dynamo.reset()
    nova.dynamo.clear_cache()
    model = hf_zoo.build(name, train=False)
    batch = _inference_batch(name)
    with torch.no_grad():
        ref = model(**batch)
        out = torch.compile(model, backend="nova")(**batch)
    return _compare_outputs(out, ref) + _eager_ops(nova)


def _eager_ops(nova: Any) -> str:
    """What ran in eager since the cell cleared the backend's counts: a graph
    wholly in eager fails the cell (its numbers would be eager's own); single ops
    in eager between Nova partitions are counted in the detail."""
    graphs = list(nova.dynamo.report())
    if not graphs:
        raise AssertionError("no graph reached the nova backend")
    whole = [f"{g.label} ({g.kind}): {g.eager_reason}" for g in graphs if g.eager_reason]
    if whole:
        raise AssertionError(f"graphs ran wholly in eager: {'; '.join(whole)}")
    # An op in eager is allowed only where there is nothing to compute: a tensor
    # without elements (the empty KV cache a default config starts with).
    other = [f"{op} ({why})" for g in graphs for op, why in g.eager_ops
             if "without elements" not in why]
    if other:
        raise AssertionError(f"ops ran in eager: {'; '.join(other[:3])}")
    eager = sum(len(g.eager_ops) for g in graphs)
    return f", {eager} ops on empty tensors in eager" if eager else ""


def _check_training(losses: list[torch.Tensor], grads: dict[str, torch.Tensor],
                    ref_losses: list[torch.Tensor], ref_grads: dict[str, torch.Tensor]) -> str:
    for i, (loss, want) in enumerate(zip(losses, ref_losses)):
        torch.testing.assert_close(loss.detach().float().reshape(()), want.float().reshape(()),
                                   rtol=RTOL, atol=0.0, msg=lambda m: f"loss at step {i + 1}: {m}")
    bad = hf_zoo.gradient_mismatches(grads, ref_grads)
    if bad:
        name, (delta, scale) = next(iter(bad.items()))
        raise AssertionError(f"{len(bad)} gradients differ from eager's, e.g. {name}: "
                             f"max |Δ| {delta:.3e}, max |eager grad| {scale:.3e}")
    worst = max((grads[k].float() - g.float()).abs().max().item() / max(g.abs().max().item(), 1e-30)
                for k, g in ref_grads.items() if g.abs().max().item() > hf_zoo.GRAD_ATOL)
    return f"losses within rtol 1e-4, grads max |Δ|/max|g| {worst:.1e}"


def _training_reference(name: str, padded: bool) -> tuple[list, dict, list]:
    data = hf_zoo.batches(name, STEPS, padded=padded)
    model = hf_zoo.build(name, dropout=0.0)
    losses, grads = hf_zoo.eager_steps(model, _optimizer, data)
    return losses, grads, data


def _train_dynamo(name: str, padded: bool = False) -> str:
    import nova.dynamo as _  # noqa: F401 - nova.dynamo.report
    import nova

    torch._dynamo.reset()
    nova.dynamo.clear_cache()
    ref_losses, ref_grads, data = _training_reference(name, padded)
    model = hf_zoo.build(name, dropout=0.0)
    compiled = torch.compile(model, backend="nova")
    optimizer = _optimizer(model.parameters())
    losses, grads = [], {}
    for i, batch in enumerate(data):
        optimizer.zero_grad()
        loss = compiled(**batch).loss
        loss.backward()
        if i == 0:
            grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()
                     if p.grad is not None}
        optimizer.step()
        losses.append(loss.detach())
    return _check_training(losses, grads, ref_losses, ref_grads) + _eager_ops(nova)


def _train_step(name: str, padded: bool = False) -> str:
    import nova.dynamo as _  # noqa: F401 - nova.dynamo.report
    import nova

    ref_losses, ref_grads, data = _training_reference(name, padded)
    model = hf_zoo.build(name, dropout=0.0)
    optimizer = _optimizer(model.parameters())
    step = nova.compile_train_step(model, None, optimizer, keep_grads=True, **data[0])
    losses, grads = [], {}
    for i, batch in enumerate(data):
        losses.append(step(**batch))
        if i == 0:
            grads = step.grads()
    return _check_training(losses, grads, ref_losses, ref_grads)


RUNNERS: dict[str, Callable[..., str]] = {
    "infer_nova": _infer_nova, "infer_dynamo": _infer_dynamo,
    "train_dynamo": _train_dynamo, "train_step": _train_step,
}


def run_cell(name: str, cell: str, *, padded: bool = False) -> CellResult:
    """Runs one cell; a failure (an exception or a mismatch) is a result, not raised."""
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runner = RUNNERS[cell]
            detail = runner(name, padded=True) if padded else runner(name)
        return CellResult(True, detail, time.perf_counter() - start)
    except Exception as error:  # noqa: BLE001 - the table shows every failure
        text = " ".join(f"{type(error).__name__}: {error}".split())
        return CellResult(False, text[:300], time.perf_counter() - start)


def cells() -> list[tuple[str, str, bool]]:
    """Every (architecture, cell, padded) of the table."""
    grid = [(name, cell, False) for name in hf_zoo.ARCHITECTURES for cell, _ in CELLS]
    grid += [(name, cell, True) for name in PADDED for cell in ("train_dynamo", "train_step")]
    return grid
