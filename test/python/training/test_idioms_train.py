"""Real-code idioms in training steps, against eager: boolean-mask writes
(nova.frontend.masked_lanes, forward and backward), uint8 / int16 batch
tensors (nova.frontend.narrow_ints) and runtime asserts
(nova.frontend.shape_asserts), through compile_train_step (3 AdamW steps,
the loss and the gradient of every parameter at each) and, for the asserts,
through torch.compile's training graphs."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

import nova
import nova.dynamo


class Masked(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin, self.gate = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x).clone()
        h[h > 0] += self.gate(x)[h > 0]
        h[x < -1] = 0
        return h.masked_fill(x > 1.5, -1e4)


class Narrow(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
        # int16 wraps (255 * 300 > 32767); uint8 + 7 wraps above 248.
        scale = (codes.to(torch.int16) * 300).float() / 1000 + (codes + 7).float()
        return self.lin(x) * (scale / 256)


class Asserting(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch._assert_async(x.abs().sum() > 0, "input must not be all zero")
        return self.lin(x)


_G = torch.Generator().manual_seed(0)
X = torch.randn(4, 8, generator=_G)
TARGET = torch.randn(4, 8, generator=_G)
CODES = torch.randint(0, 256, (4, 8), dtype=torch.uint8, generator=_G)
CODES[0, :3] = torch.tensor([249, 250, 255], dtype=torch.uint8)

CASES = {"masked_writes": (Masked, (X,)), "uint8_int16": (Narrow, (X, CODES)),
         "assert_async": (Asserting, (X,))}


def _steps_like_eager(model: torch.nn.Module, step, reference: torch.nn.Module,
                      batch: tuple[torch.Tensor, ...]) -> None:
    optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    for _ in range(3):
        loss = step(*batch, TARGET)
        optimizer.zero_grad()
        expected = F.mse_loss(reference(*batch), TARGET)
        expected.backward()
        torch.testing.assert_close(torch.as_tensor(loss), expected.detach(), rtol=1e-4, atol=1e-6)
        grads = step.grads()
        for name, parameter in reference.named_parameters():
            torch.testing.assert_close(grads[name], parameter.grad, rtol=1e-4, atol=1e-5,
                                       msg=name)
        optimizer.step()


@pytest.mark.parametrize("name", list(CASES))
def test_compile_train_step_matches_eager(name: str) -> None:
    model_class, batch = CASES[name]
    torch.manual_seed(0)
    model = model_class()
    reference = copy.deepcopy(model)
    step = nova.compile_train_step(model, F.mse_loss,
                                   torch.optim.AdamW(model.parameters(), lr=1e-2),
                                   *batch, TARGET, keep_grads=True, model_inputs=len(batch))
    _steps_like_eager(model, step, reference, batch)


def test_a_failed_assert_in_a_train_step_raises_its_message() -> None:
    from nova.sim.errors import AssertionFailedError

    model = Asserting()
    step = nova.compile_train_step(model, F.mse_loss,
                                   torch.optim.AdamW(model.parameters(), lr=1e-2), X, TARGET)
    step(X, TARGET)
    with pytest.raises(AssertionFailedError, match="input must not be all zero"):
        step(torch.zeros_like(X), TARGET)


def test_torch_compile_training_keeps_the_assert(tmp_path, monkeypatch) -> None:
    """torch.compile's training graphs: the assert runs on Nova (it used to be
    dropped), the gradients are eager's."""
    from nova.sim.errors import AssertionFailedError

    monkeypatch.setenv("NOVA_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    nova.dynamo.clear_cache()
    torch.manual_seed(0)
    model = Asserting()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="nova")
    F.mse_loss(compiled(X), TARGET).backward()
    F.mse_loss(reference(X), TARGET).backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)
    rows = nova.dynamo.report()
    assert [r.kind for r in rows] == ["forward", "backward"]
    assert all(r.eager_ops == [] and r.eager_reason is None for r in rows)
    with pytest.raises(AssertionFailedError, match="input must not be all zero"):
        compiled(torch.zeros_like(X))
    torch._dynamo.reset()


def test_torch_compile_training_with_uint8_matches_eager(tmp_path, monkeypatch) -> None:
    """torch.compile's training graphs run their uint8 / int16 ops on Nova too
    (carried in int32, converted at the call): no op in eager; losses and every
    gradient are eager's."""
    monkeypatch.setenv("NOVA_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    nova.dynamo.clear_cache()
    torch.manual_seed(0)
    model = Narrow()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="nova")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    reference_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    for _ in range(2):
        optimizer.zero_grad()
        reference_optimizer.zero_grad()
        loss = F.mse_loss(compiled(X, CODES), TARGET)
        loss.backward()
        expected = F.mse_loss(reference(X, CODES), TARGET)
        expected.backward()
        torch.testing.assert_close(loss.detach(), expected.detach(), rtol=1e-4, atol=1e-6)
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)
        optimizer.step()
        reference_optimizer.step()
    rows = nova.dynamo.report()
    assert [r.kind for r in rows] == ["forward", "backward"]
    assert all(r.eager_ops == [] and r.eager_reason is None for r in rows), \
        [(r.eager_ops, r.eager_reason) for r in rows]
    torch._dynamo.reset()
