"""A mixture-of-experts model (Hugging Face Mixtral, tiny default config): its
expert loop depends on the router's values, which one static Nova program
cannot hold. nova.compile refuses it with the model's line first and points to
torch.compile(backend="nova"), which runs it (graphs on Nova, the loop in
eager) with eager's logits."""

from __future__ import annotations

import pytest
import torch

import nova

transformers = pytest.importorskip("transformers")


def _mixtral() -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.MixtralConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
        num_experts_per_tok=2, max_position_embeddings=32)
    return transformers.MixtralForCausalLM(config).eval()


def test_expert_loop_names_the_model_line_and_suggests_torch_compile(capfd) -> None:
    ids = torch.randint(0, 64, (2, 8))
    with pytest.raises(nova.NovaModelCompileError) as raised:
        nova.compile(_mixtral(), input_ids=ids)
    message = str(raised.value)
    first = message.splitlines()[0]
    assert "modeling_mixtral.py:" in first and "depends on the values of a tensor" in first
    assert 'torch.compile(model, backend="nova")' in message
    assert len(capfd.readouterr().err.splitlines()) < 20  # no graph dump above it


def test_torch_compile_runs_the_expert_loop() -> None:
    model = _mixtral()
    ids = torch.randint(0, 64, (2, 8))
    with torch.no_grad():
        want = model(input_ids=ids).logits
        got = torch.compile(model, backend="nova")(input_ids=ids).logits
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
