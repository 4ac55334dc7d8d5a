"""The binary's I/O table names a program's parameters, inputs and outputs
after the model's (not argN): state names, the forward's argument names,
the output structure's keys; rolled layers keep every name."""

from __future__ import annotations

import torch
from torch import nn

import nova


class TwoInputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 3)

    def forward(self, x, mask=None):
        return {"logits": self.proj(x) * mask, "hidden": x + 1}


def test_io_entries_carry_input_and_output_names():
    torch.manual_seed(0)
    model = TwoInputs().eval()
    x, mask = torch.randn(2, 4), torch.ones(2, 3)
    program = nova.compile(model, x, mask=mask)
    binary = program.binary
    assert [e.name for e in binary.inputs] == ["proj.weight", "proj.bias", "x", "mask"]
    assert [e.name for e in binary.outputs] == ["logits", "hidden"]
    assert [e.name for e in program.input_entries] == ["x", "mask"]
    out = program(x, mask=mask)
    expected = model(x, mask=mask)
    for key in ("logits", "hidden"):
        torch.testing.assert_close(out[key], expected[key], rtol=1e-4, atol=1e-5)


def test_rolled_layers_keep_the_names():
    from nova.models import GPT, GPTConfig

    torch.manual_seed(0)
    model = GPT(GPTConfig(d_model=32, n_heads=2, n_layers=2, seq_len=8, vocab_size=64)).eval()
    ids = torch.randint(0, 64, (1, 8))
    program = nova.compile(model, ids)
    assert "nova.layers" in program.stages["nova"]  # one loop over the two blocks
    assert [e.name for e in program.input_entries] == ["x"]
    assert [e.name for e in program.output_entries] == ["output0"]
    params = [e.name for e in program.binary.inputs][:-1]
    assert params[:3] == ["tok_emb.weight", "pos_emb.weight", "blocks.0.ln1.weight"]
    assert "blocks.1.mlp.fc2.bias" in params
    torch.testing.assert_close(program(ids), model(ids), rtol=1e-4, atol=1e-5)
