"""Random ops on the nova device: drawn on the chip from the device's generators
(seeded by ``torch.manual_seed``), in strict mode (no op on the CPU). Their
numbers are not the CPU's (a different generator), so they are checked by their
statistics, by reproducibility, and against eager applied with the same mask."""
from __future__ import annotations

import math

import pytest
import torch

import hf_zoo
import nova.device  # noqa: F401

N = 4096


@pytest.fixture(autouse=True)
def _strict():
    torch.nova.set_fallback("error")
    yield
    torch.nova.set_fallback("warn")


def _within_3_sigma(fraction: float, p: float, n: int) -> bool:
    return abs(fraction - p) <= 3 * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_native_dropout_keeps_1_minus_p_and_scales_kept_values(p: float) -> None:
    torch.manual_seed(0)
    x = torch.rand(N) + 0.5
    out, mask = torch.native_dropout(x.to("nova"), p, True)
    out, mask = out.cpu(), mask.cpu()
    assert mask.dtype == torch.bool
    assert _within_3_sigma(mask.float().mean().item(), 1 - p, N)
    torch.testing.assert_close(out[mask], x[mask] / (1 - p), rtol=1e-6, atol=0)
    assert torch.all(out[~mask] == 0)


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_module_and_functional_in_train_mode(p: float) -> None:
    torch.manual_seed(1)
    ones = torch.ones(N, device="nova")
    for out in (torch.nn.Dropout(p).train()(ones), torch.nn.functional.dropout(ones, p),
                torch.nn.functional.dropout(ones.clone(), p, inplace=True)):
        kept = out.cpu() != 0
        assert _within_3_sigma(kept.float().mean().item(), 1 - p, N)
        torch.testing.assert_close(out.cpu()[kept], torch.full((int(kept.sum()),), 1 / (1 - p)),
                                   rtol=1e-6, atol=0)
    # Eval mode draws nothing and returns the input.
    state = torch.nova.get_rng_state()
    assert torch.equal(torch.nn.Dropout(p).eval()(ones).cpu(), ones.cpu())
    assert torch.equal(torch.nova.get_rng_state(), state)


def test_gradients_through_dropout_equal_eager_with_the_same_mask() -> None:
    torch.manual_seed(2)
    w = torch.randn(16, 16)
    x = torch.randn(8, 16)
    wd = w.to("nova").requires_grad_()
    xd = x.to("nova").requires_grad_()
    h = xd @ wd
    out, mask = torch.native_dropout(h, 0.3, True)
    (out.tanh() * torch.arange(16.0, device="nova")).sum().backward()
    # Eager on the CPU with the device's mask.
    we, xe = w.clone().requires_grad_(), x.clone().requires_grad_()
    he = xe @ we
    oute = he * mask.cpu().float() / 0.7
    (oute.tanh() * torch.arange(16.0)).sum().backward()
    torch.testing.assert_close(out.detach().cpu(), oute.detach(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(wd.grad.cpu(), we.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(xd.grad.cpu(), xe.grad, rtol=1e-4, atol=1e-5)


def test_rand_randn_uniform_normal_moments() -> None:
    torch.manual_seed(3)
    u = torch.rand(N, device="nova").cpu().double()
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 4 * math.sqrt(1 / 12 / N)
    assert abs(u.var() - 1 / 12) < 4 * math.sqrt(1 / 180 / N)  # var of (u - 1/2)^2 is 1/180
    z = torch.randn(N, device="nova").cpu().double()
    assert abs(z.mean()) < 4 / math.sqrt(N)
    assert abs(z.var() - 1) < 4 * math.sqrt(2 / N)
    a = torch.empty(N, device="nova").uniform_(-2, 3).cpu().double()
    assert a.min() >= -2 and a.max() < 3 and abs(a.mean() - 0.5) < 4 * 5 / math.sqrt(12 * N)
    g = torch.empty(N, device="nova").normal_(3.0, 2.0).cpu().double()
    assert abs(g.mean() - 3) < 4 * 2 / math.sqrt(N) and abs(g.std() - 2) < 4 * 2 / math.sqrt(2 * N)
    like = torch.randn_like(torch.empty(4, 8, device="nova"))
    assert like.shape == (4, 8) and like.is_nova


def test_bernoulli_exponential_and_integers() -> None:
    torch.manual_seed(4)
    b = torch.empty(N, device="nova").bernoulli_(0.3).cpu()
    assert set(b.unique().tolist()) <= {0.0, 1.0} and _within_3_sigma(b.mean().item(), 0.3, N)
    probs = torch.full((N,), 0.8, device="nova")
    assert _within_3_sigma(torch.bernoulli(probs).cpu().mean().item(), 0.8, N)
    assert _within_3_sigma(torch.empty(N, device="nova").bernoulli_(probs).cpu().mean().item(), 0.8, N)
    e = torch.empty(N, device="nova").exponential_(2.0).cpu().double()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 4 * 0.5 / math.sqrt(N)
    r = torch.randint(-3, 7, (N,), device="nova").cpu()
    assert r.dtype == torch.int64 and r.min() == -3 and r.max() == 6
    assert abs(r.double().mean() - 1.5) < 4 * math.sqrt(99 / 12 / N)
    q = torch.empty(N, dtype=torch.int32, device="nova").random_(5).cpu()
    assert q.dtype == torch.int32 and set(q.unique().tolist()) == {0, 1, 2, 3, 4}


def test_same_seed_same_values_and_rng_state_restores() -> None:
    def draw() -> list[torch.Tensor]:
        x = torch.ones(64, device="nova")
        return [torch.rand(64, device="nova").cpu(), torch.randn(64, device="nova").cpu(),
                torch.nn.functional.dropout(x, 0.5).cpu()]

    torch.manual_seed(5)
    first = draw()
    torch.manual_seed(5)
    again = draw()
    torch.manual_seed(6)
    other = draw()
    for a, b, c in zip(first, again, other):
        assert torch.equal(a, b) and not torch.equal(a, c)
    # Consecutive draws differ; set_rng_state replays them.
    assert not torch.equal(first[0], first[1])
    state = torch.nova.get_rng_state()
    replay_a = draw()
    torch.nova.set_rng_state(state)
    replay_b = draw()
    for a, b in zip(replay_a, replay_b):
        assert torch.equal(a, b)
    # fork_rng restores the device's state on exit.
    state = torch.nova.get_rng_state()
    with torch.random.fork_rng(devices=[0], device_type="nova"):
        torch.rand(8, device="nova")
    assert torch.equal(torch.nova.get_rng_state(), state)
    # torch.nova.manual_seed seeds the current chip only; manual_seed_all every chip.
    torch.nova.manual_seed(7)
    assert torch.nova.initial_seed() == 7
    torch.nova.manual_seed_all(8)
    assert [torch.nova.get_rng_state(i)[:8].view(torch.int64).item() for i in range(2)] == [8, 8]


def test_a_nova_generator_draws_like_the_chip_generator() -> None:
    generator = torch.Generator("nova").manual_seed(9)
    assert generator.device == torch.device("nova", 0) and generator.initial_seed() == 9
    first = torch.rand(64, device="nova", generator=generator).cpu()
    assert generator.get_offset() > 0
    torch.nova.manual_seed(9)  # the same seed and offset: the same stream
    assert torch.equal(torch.rand(64, device="nova").cpu(), first)
    state = generator.get_state()
    assert torch.equal(state, torch.nova.get_rng_state())
    a = torch.randn(64, device="nova", generator=generator).cpu()
    generator.set_state(state)
    assert torch.equal(torch.randn(64, device="nova", generator=generator).cpu(), a)
    dropped = torch.empty(N, device="nova").bernoulli_(0.25, generator=generator).cpu()
    assert _within_3_sigma(dropped.mean().item(), 0.25, N)


def test_a_cached_program_serves_every_call() -> None:
    torch.rand(32, device="nova")
    programs = torch.nova.op_cache_stats()["programs"]
    values = {tuple(torch.rand(32, device="nova").cpu().tolist()) for _ in range(3)}
    assert torch.nova.op_cache_stats()["programs"] == programs  # the key is an input
    assert len(values) == 3


def test_ops_without_a_device_form_fall_back_or_raise() -> None:
    with pytest.raises(nova.device.host.NovaFallbackError, match="aten.multinomial"):
        torch.multinomial(torch.ones(5, device="nova"), 3)
    with pytest.raises(nova.device.host.NovaFallbackError, match="torch.Generator on cpu"):
        torch.rand(4, device="nova", generator=torch.Generator())
    torch.nova.set_fallback("warn")
    with pytest.warns(UserWarning, match="aten.multinomial.* ran on the CPU"):
        picked = torch.multinomial(torch.ones(5, device="nova"), 3)
    assert picked.is_nova and picked.shape == (3,)


def _train_gpt2(seed: int, compile: bool = False, steps: int = 2) -> list[float]:
    sizes = hf_zoo.FEW_SHAPES["gpt2"]  # one layer, few weight shapes: fewer ops to compile
    model = hf_zoo.build("gpt2", **sizes)  # dropout as shipped (0.1)
    assert model.config.resid_pdrop == 0.1 and model.config.attn_pdrop == 0.1
    # One batch: the loss falls step by step.
    data = hf_zoo.batches("gpt2", 1, vocab=sizes["vocab_size"]) * steps
    model.to("nova")
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    run = torch.compile(model, backend="nova") if compile else model
    torch.manual_seed(seed)
    losses = []
    for batch in data:
        optimizer.zero_grad()
        loss = run(**{k: v.to("nova") for k, v in batch.items()}).loss
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_hf_gpt2_with_dropout_trains_on_the_device_in_strict_mode() -> None:
    fallbacks = torch.nova.fallback_report()
    first = _train_gpt2(seed=0)
    assert torch.nova.fallback_report() == fallbacks  # strict: nothing ran on the CPU
    assert all(math.isfinite(x) for x in first) and first[-1] < first[0]
    # The same seed: the same masks, the same losses (two steps: the second's
    # masks come after the first's draws); another seed: another first loss.
    assert _train_gpt2(seed=0) == first
    assert _train_gpt2(seed=1, steps=1)[0] != first[0]


def test_torch_compile_of_hf_gpt2_with_dropout_on_the_device() -> None:
    """The compiled path draws its masks from a seed input (a fresh seed per call
    from torch's generator), on the chip beside the activations."""
    fallbacks = torch.nova.fallback_report()
    first = _train_gpt2(seed=0, compile=True)
    assert torch.nova.fallback_report() == fallbacks
    assert all(math.isfinite(x) for x in first) and first[-1] < first[0]
    assert _train_gpt2(seed=0, compile=True) == first


def test_the_fallback_decisions_record_run_is_on_the_host_and_keeps_the_rng() -> None:
    """Deciding a split runs the graph once for its values: on the CPU (no op
    compiled for the device) and from a forked generator (torch's stream as
    it was)."""
    from nova.dynamo.partition import record_values

    import operator

    graph = torch.fx.Graph()  # an aot_autograd graph's form: aten ops, a device argument
    x = graph.placeholder("x")
    noise = graph.call_function(torch.ops.aten.rand.default, ([4],),
                                {"device": torch.device("nova")})
    dropped = graph.call_function(torch.ops.aten.native_dropout.default, (x, 0.5, True))
    kept = graph.call_function(operator.getitem, (dropped, 0))
    graph.output(graph.call_function(torch.ops.aten.add.Tensor, (kept, noise)))
    gm = torch.fx.GraphModule({}, graph)
    x = torch.arange(4.0, device="nova")
    state, compiled = torch.get_rng_state(), torch.nova.op_cache_stats()["compiled"]
    values = record_values(gm, [x])
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.nova.op_cache_stats()["compiled"] == compiled
    tensors = [v for v in values.values() if isinstance(v, torch.Tensor)]
    assert len(tensors) >= 3 and all(v.device.type == "cpu" for v in tensors)
    assert x.device.type == "nova"  # the argument itself is left where it was
