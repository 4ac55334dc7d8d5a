"""The activation-engine target (issue 39 item 5, docs/isa.md 2.7): a forward and a
training step compiled for nova-t1-act give nova-t1's numbers bit for bit and eager's
to f32 tolerance, the compiler places work on the activation engine, and the report
shows its busy time."""

from __future__ import annotations

import copy

import torch

import nova

RTOL, ATOL = 1e-4, 1e-5


class _Block(torch.nn.Module):
    """Embedding, a GELU MLP, LayerNorm, a tanh gate and an LM head: transcendentals
    (erf / tanh / rsqrt / exp in the loss) and plain elementwise work."""

    def __init__(self, vocab: int = 48, d: int = 16) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.fc = torch.nn.Linear(d, 2 * d)
        self.proj = torch.nn.Linear(2 * d, d)
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids)
        h = h + self.proj(torch.nn.functional.gelu(self.fc(h))) * torch.tanh(h)
        return self.head(self.norm(h))


def _loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def _engines(report) -> dict[str, tuple[int, float]]:
    out: dict[str, tuple[int, float]] = {}
    for e in report.engines:
        n, b = out.get(e.engine, (0, 0.0))
        out[e.engine] = (n + e.instructions, b + e.busy_ns)
    return out


def test_forward_matches_nova_t1_and_eager_with_work_on_the_activation_engine():
    torch.manual_seed(0)
    model = _Block().eval()
    ids = torch.randint(0, 48, (2, 8))
    expected = model(ids)
    results, reports = {}, {}
    for name in ("nova-t1", "nova-t1-act"):
        program = nova.compile(model, ids, target=name)
        results[name] = program(ids)
        reports[name] = program.report
    torch.testing.assert_close(results["nova-t1-act"], expected, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(results["nova-t1-act"], results["nova-t1"], rtol=0, atol=0)
    act, base = _engines(reports["nova-t1-act"]), _engines(reports["nova-t1"])
    assert "activation" not in base
    count, busy = act["activation"]
    assert count > 0 and busy > 0
    # The work moved: the vector engine runs fewer instructions than on nova-t1.
    assert act["vector"][0] < base["vector"][0]
    assert "activation" in reports["nova-t1-act"].summary()


def test_training_step_matches_nova_t1_and_eager():
    """One f32 AdamW step with clipping: loss, every gradient and every updated
    parameter against eager (f32 tolerance) and against nova-t1 (bit for bit)."""
    torch.manual_seed(0)
    model = _Block()
    reference = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(5)
    ids = torch.randint(0, 48, (2, 8), generator=generator)
    labels = torch.randint(0, 48, (2, 8), generator=generator)
    options = dict(lr=1e-2, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)
    steps = {}
    for name in ("nova-t1", "nova-t1-act"):
        m = copy.deepcopy(model)
        opt = torch.optim.AdamW(m.parameters(), **options)
        step = nova.compile_train_step(m, _loss, opt, ids, labels, max_grad_norm=0.5, keep_grads=True,
                                       target=name)
        steps[name] = (step, step(ids, labels))
    ref_opt = torch.optim.AdamW(reference.parameters(), **options)
    expected = _loss(reference(ids), labels)
    expected.backward()
    torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.5)
    ref_opt.step()
    act, loss = steps["nova-t1-act"]
    base, base_loss = steps["nova-t1"]
    torch.testing.assert_close(loss, expected.detach(), rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(loss, base_loss, rtol=0, atol=0)
    grads, params = act.grads(), act.parameters()
    base_grads, base_params = base.grads(), base.parameters()
    for name, value in reference.named_parameters():
        torch.testing.assert_close(grads[name], value.grad, rtol=RTOL, atol=ATOL, msg=lambda m: f"grad {name}: {m}")
        torch.testing.assert_close(params[name], value.detach(), rtol=RTOL, atol=ATOL,
                                   msg=lambda m: f"param {name}: {m}")
        torch.testing.assert_close(grads[name], base_grads[name], rtol=0, atol=0)
        torch.testing.assert_close(params[name], base_params[name], rtol=0, atol=0)
    count, busy = _engines(act.report)["activation"]
    assert count > 0 and busy > 0
    assert "activation" not in _engines(base.report)
