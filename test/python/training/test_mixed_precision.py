"""Mixed precision (``compile_train_step(..., autocast=torch.bfloat16)``)
against torch's own ``torch.autocast("cpu", dtype=torch.bfloat16)`` training
loop on the same model and batches: the loss curve within rtol 2e-2 over 20
AdamW steps, float32 master weights and state, bf16 matmuls on the chip."""

from __future__ import annotations

import copy

import pytest
import torch

import nova
from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.training import TrainStepError


def _ce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             labels.reshape(-1))


def _batches(n: int, vocab: int, shape=(4, 16)):
    generator = torch.Generator().manual_seed(1)
    return [(torch.randint(0, vocab, shape, generator=generator),
             torch.randint(0, vocab, shape, generator=generator)) for _ in range(n)]


def test_bf16_autocast_loss_curve_matches_torch_autocast(tmp_path):
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=2, n_layers=2)
    model = GPT(cfg)
    # PyTorch's default initialisation (N(0, 1) embeddings), not GPT-2's: on random
    # labels its large first loss falls fast, which the curve below checks.
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    model.tok_emb.reset_parameters()  # the head shares it: the embedding's init, as tied
    reference = copy.deepcopy(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ref_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    batches = _batches(20, cfg.vocab_size)
    step = nova.compile_train_step(model, _ce, optimizer, *batches[0], autocast=torch.bfloat16,
                                   dump_dir=tmp_path)
    ours, theirs = [], []
    for ids, labels in batches:
        ours.append(float(step(ids, labels)))
        ref_optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = _ce(reference(ids), labels)
        loss.float().backward()
        ref_optimizer.step()
        theirs.append(float(loss.detach()))
    torch.testing.assert_close(torch.tensor(ours), torch.tensor(theirs), rtol=2e-2, atol=0)
    assert ours[-1] < 0.5 * ours[0]  # it trains
    assert step.stats.dtype == "bf16"  # MFU against the bf16 peak
    # The master weights and the optimizer state stay float32, close to torch's
    # (bf16 rounding in another order moves single elements, not the tensor).
    # Biases are left out: the key bias's gradient is zero up to rounding
    # (softmax ignores a per-row constant) and AdamW turns that noise into
    # full-size steps in either run.
    params = step.parameters()
    for name, value in reference.named_parameters():
        assert params[name].dtype == torch.float32
        if value.dim() < 2:
            continue
        drift = (params[name] - value.detach()).norm() / value.detach().norm()
        assert drift < 2e-2, (name, float(drift))
    state = step.optimizer_state_dict()["state"]
    assert all(s["exp_avg"].dtype == torch.float32 for s in state.values())
    # The linears' matmuls (forward and backward) run on the matrix unit in
    # bf16; the embedding's backward (a one-hot matmul) stays f32, as in torch.
    tiles = (tmp_path / "1-nova.mlir").read_text()
    matmuls = [line for line in tiles.splitlines() if "nova.matmul ins(" in line]
    bf16 = [line for line in matmuls if line.count("xbf16,") + line.count("xbf16>") >= 2]
    assert len(bf16) > 2 * (len(matmuls) - len(bf16)), (len(bf16), len(matmuls))


def test_f32_is_the_default_and_bad_dtypes_are_refused():
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TrainStepError, match="autocast must be torch.bfloat16 or torch.float16"):
        nova.compile_train_step(model, torch.nn.functional.mse_loss, optimizer,
                                torch.randn(2, 8), torch.randn(2, 4), autocast=torch.float64)
