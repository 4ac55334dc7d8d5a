"""Hugging Face models in their default configs (sizes set, dropout 0 so CPU
eager is the reference) trained on the nova device by a plain AdamW loop that
names no Nova API, in strict mode: every op on the chip."""
from __future__ import annotations

import copy

import pytest
import torch

import hf_zoo
import nova.device  # noqa: F401

ROUND = 512


def _round(n: int) -> int:
    return (n + ROUND - 1) // ROUND * ROUND


@pytest.fixture(autouse=True)
def _strict():
    torch.nova.set_fallback("error")
    yield
    torch.nova.set_fallback("warn")


def _build(name: str) -> tuple[torch.nn.Module, int]:
    """``name`` with one layer and few weight shapes (each op and shapes compiles
    a program on the device), and its vocabulary size for the batches."""
    sizes = hf_zoo.FEW_SHAPES[name]
    return hf_zoo.build(name, dropout=0.0, **sizes), sizes["vocab_size"]


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_hf_model_trains_on_the_device_like_cpu_eager(name: str) -> None:
    model, vocab = _build(name)
    reference = copy.deepcopy(model)
    data = hf_zoo.batches(name, 5, vocab=vocab)
    # Steps 2 and 3 see the same tokens: an embedding's gather DMA costs by the
    # runs of consecutive ids, so only equal data gives equal simulated time.
    data[3] = data[2]
    eager_losses, _ = hf_zoo.eager_steps(reference, lambda p: torch.optim.AdamW(p, lr=1e-3), data)

    fallbacks = torch.nova.fallback_report()
    h2d, d2h = torch.nova.transfer_bytes()
    model.to("nova")
    state_bytes = sum(t.numel() * t.element_size()
                      for t in [*model.parameters(), *model.buffers()])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    input_bytes, losses, step_ms = 0, [], []
    for batch in data:
        batch = {k: v.to("nova") for k, v in batch.items()}
        input_bytes += sum(v.numel() * v.element_size() for v in batch.values())
        start, end = torch.nova.Event(enable_timing=True), torch.nova.Event(enable_timing=True)
        start.record()
        optimizer.zero_grad()
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        end.record()
        losses.append(loss.item())
        step_ms.append(start.elapsed_time(end))
    # Host traffic: the model's first copy, the inputs, and one float per loss.item().
    assert torch.nova.transfer_bytes() == (h2d + state_bytes + input_bytes, d2h + 4 * len(data))
    torch.testing.assert_close(torch.tensor(losses), torch.stack(eager_losses), rtol=1e-4, atol=0)
    for (n, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=0, atol=1e-4, msg=n)
    # The same work (same shapes, same ids) takes the same simulated time.
    assert step_ms[2] == step_ms[3] and step_ms[2] > 0
    assert torch.nova.fallback_report() == fallbacks  # strict: nothing ran on the CPU


def test_memory_allocated_is_the_live_tensors():
    import gc

    gc.collect()  # earlier tests' tensors
    torch.nova.empty_cache()
    base = torch.nova.memory_allocated()
    model, vocab = _build("gpt2")
    model.to("nova")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = {k: v.to("nova") for k, v in hf_zoo.example("gpt2", vocab=vocab).items()}
    model(**batch).loss.backward()
    optimizer.step()
    live = [*model.parameters(), *model.buffers()] + [p.grad for p in model.parameters()]
    live += [s for state in optimizer.state.values() for s in state.values()
             if isinstance(s, torch.Tensor) and s.device.type == "nova"]
    live += list(batch.values())
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in live}
    assert torch.nova.memory_allocated() - base == sum(_round(n) for n in storages.values())
    assert torch.nova.max_memory_allocated() >= torch.nova.memory_allocated()


def test_torch_compile_on_the_device_is_faster_than_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(),
                                torch.nn.Linear(256, 64)).to("nova")
    x = torch.randn(32, 64).to("nova")
    compiled = torch.compile(model, backend="nova")
    compiled(x)  # compile
    times = []
    for run in (compiled, model):
        start, end = torch.nova.Event(enable_timing=True), torch.nova.Event(enable_timing=True)
        start.record()
        y = run(x)
        end.record()
        times.append(start.elapsed_time(end))
        assert y.device.type == "nova"
    torch.testing.assert_close(compiled(x).cpu(), model(x).cpu(), rtol=1e-5, atol=1e-5)
    assert times[0] < times[1]


def test_torch_compile_results_keep_eager_strides_on_the_device():
    """A compiled graph's results on the device have the strides eager gives
    (and the graph recorded): a transposed result, a view of one piece of a split."""
    def f(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = x @ w  # [2, 8, 12]
        piece = y.split(4, dim=2)[1]
        return (y * 2).transpose(1, 2), piece.view(2, 8, 2, 2), piece.view(2, 8, 2, 2).transpose(1, 2)

    torch.manual_seed(0)
    x, w = torch.randn(2, 8, 6), torch.randn(6, 12)
    eager = f(x, w)
    compiled = torch.compile(f, backend="nova")(x.to("nova"), w.to("nova"))
    for e, c in zip(eager, compiled):
        assert c.is_nova and c.shape == e.shape and c.stride() == e.stride()
        torch.testing.assert_close(c.cpu(), e, rtol=1e-4, atol=1e-5)


def test_torch_compile_of_a_hf_training_step_on_the_device():
    """GPT-2 (default config, dropout 0) through torch.compile on nova tensors:
    the losses and parameters of CPU eager, in less simulated time than eager."""
    model, vocab = _build("gpt2")
    reference = copy.deepcopy(model)
    data = hf_zoo.batches("gpt2", 3, vocab=vocab)
    data[2] = data[1]
    eager_losses, _ = hf_zoo.eager_steps(reference, lambda p: torch.optim.AdamW(p, lr=1e-3), data)
    model.to("nova")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    compiled = torch.compile(model, backend="nova")

    def step(run, batch) -> tuple[float, float]:
        start, end = torch.nova.Event(enable_timing=True), torch.nova.Event(enable_timing=True)
        start.record()
        optimizer.zero_grad()
        loss = run(**batch).loss
        loss.backward()
        optimizer.step()
        end.record()
        return loss.item(), start.elapsed_time(end)

    losses, times = [], []
    for batch in data:
        loss, ms = step(compiled, {k: v.to("nova") for k, v in batch.items()})
        losses.append(loss)
        times.append(ms)
    torch.testing.assert_close(torch.tensor(losses), torch.stack(eager_losses), rtol=1e-4, atol=0)
    for (n, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=0, atol=1e-4, msg=n)
    # The same step in eager on the device (same data as the last compiled step).
    _, eager_ms = step(model, {k: v.to("nova") for k, v in data[2].items()})
    assert times[2] < eager_ms
