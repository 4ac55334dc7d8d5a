"""Identical layers share their code (nova-roll-layers): the rolled programs
against torch eager, their size against the straight-line ones, and models
whose layers differ, which compile as before."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import nova
from nova import models

RTOL, ATOL = 1e-4, 1e-5


def _compile(model: nn.Module, *args, roll: bool, monkeypatch) -> nova.CompiledProgram:
    monkeypatch.setenv("NOVA_ROLL_LAYERS", "1" if roll else "0")
    return nova.compile(model, *args, target="nova-t1")


def _rolled(program) -> bool:
    return "nova.layers" in program.stages["nova"]


@pytest.mark.parametrize("layers", [2, 4])
def test_gpt_layers_share_one_loop_and_match_eager(layers: int, monkeypatch) -> None:
    cfg = models.GPTConfig(d_model=32, n_heads=2, n_layers=layers, seq_len=8)
    torch.manual_seed(0)
    model = models.GPT(cfg).eval()
    x = torch.randn(1, cfg.seq_len, cfg.d_model)
    program = _compile(model, x, roll=True, monkeypatch=monkeypatch)
    assert _rolled(program)
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=RTOL, atol=ATOL)
        # The parameters stay bound: a second call with other inputs.
        x2 = torch.randn(1, cfg.seq_len, cfg.d_model)
        torch.testing.assert_close(program(x2), model(x2), rtol=RTOL, atol=ATOL)


def test_rolled_binary_does_not_grow_with_depth(monkeypatch) -> None:
    rolled, straight = {}, {}
    for layers in (2, 4):
        cfg = models.GPTConfig(d_model=32, n_heads=2, n_layers=layers, seq_len=8)
        torch.manual_seed(0)
        model = models.GPT(cfg).eval()
        x = torch.randn(1, cfg.seq_len, cfg.d_model)
        rolled[layers] = len(_compile(model, x, roll=True, monkeypatch=monkeypatch)
                             .stages["binary"])
        program = _compile(model, x, roll=False, monkeypatch=monkeypatch)
        assert not _rolled(program)
        straight[layers] = len(program.stages["binary"])
    # Two more layers add a fraction of what they add straight-line (at
    # GPT-2 small's width, benchmarks/binary_size.py: nothing but their weights'
    # descriptors).
    assert rolled[4] < straight[4]
    assert rolled[4] - rolled[2] < (straight[4] - straight[2]) / 4


def test_gpt_language_model_with_embeddings_rolls(monkeypatch) -> None:
    cfg = models.GPTConfig(d_model=32, n_heads=4, n_layers=3, seq_len=8, vocab_size=64)
    torch.manual_seed(0)
    model = models.GPT(cfg).eval()
    ids = torch.randint(0, 64, (2, 8))
    program = _compile(model, ids, roll=True, monkeypatch=monkeypatch)
    assert _rolled(program)
    with torch.no_grad():
        torch.testing.assert_close(program(ids), model(ids), rtol=RTOL, atol=ATOL)


def test_hf_gpt2_layers_roll_and_match_eager(monkeypatch) -> None:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=3, n_embd=32, n_head=2, vocab_size=128,
                                     n_positions=16, attn_implementation="eager")
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 128, (1, 16))
    program = _compile(model, ids, roll=True, monkeypatch=monkeypatch)
    assert _rolled(program)
    with torch.no_grad():
        torch.testing.assert_close(program(ids).logits, model(ids).logits,
                                   rtol=RTOL, atol=ATOL)


class _Widening(nn.Module):
    """Blocks of the same code but different widths: not copies of one another."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(a, b) for a, b in ((16, 32), (32, 48), (48, 64)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = torch.tanh(block(x)) * 0.5
        return x


def test_layers_of_different_shapes_compile_as_before(monkeypatch) -> None:
    torch.manual_seed(0)
    model = _Widening().eval()
    x = torch.randn(4, 16)
    program = _compile(model, x, roll=True, monkeypatch=monkeypatch)
    assert not _rolled(program)
    straight = _compile(model, x, roll=False, monkeypatch=monkeypatch)
    assert program.stages["binary"] == straight.stages["binary"]
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=RTOL, atol=ATOL)
