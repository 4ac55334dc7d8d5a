"""nova.compile on the reference models, run on the simulator, against torch eager."""

from __future__ import annotations

import pytest
import torch

import nova
from nova import models

RTOL, ATOL = 1e-4, 1e-5


def _check(model: torch.nn.Module, *args: torch.Tensor) -> nova.CompiledProgram:
    torch.manual_seed(0)
    model = model.eval()
    program = nova.compile(model, *args)
    with torch.no_grad():
        expected = model(*args)
    got = program(*args)
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    assert program.report is not None and program.report.time_s > 0
    return program


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)


def test_mlp():
    _check(models.MLP(64, 256), torch.randn(2, 16, 64))


def test_multi_head_attention_causal():
    _check(models.MultiHeadAttention(64, 4, causal=True), torch.randn(2, 16, 64))


def test_layernorm():
    _check(models.LayerNorm(64), torch.randn(2, 16, 64))


def test_rmsnorm():
    _check(models.RMSNorm(64), torch.randn(2, 16, 64))


def test_softmax():
    _check(models.Softmax(), 4.0 * torch.randn(4, 8, 32))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    _check(models.GELU(approximate), torch.randn(4, 8, 32))


def test_silu():
    _check(models.SiLU(), torch.randn(4, 8, 32))


def test_small_cnn():
    _check(models.SmallCNN(), torch.randn(2, 3, 16, 16))


def test_gpt_two_layers():
    cfg = models.GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16)
    _check(models.GPT(cfg), torch.randn(2, cfg.seq_len, cfg.d_model))


def test_matmul_larger_than_one_tile():
    # K > matrix rows (K-chunk loop), N > matrix columns (tile loop).
    class Linear(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(384, 320)

        def forward(self, x):
            return self.fc(x)

    _check(Linear(), torch.randn(96, 384))


def test_tiny_target_retiles_and_stays_correct():
    torch.manual_seed(0)
    model = models.MLP(32, 64).eval()
    x = torch.randn(16, 32)
    program = nova.compile(model, x, target="tiny")
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=RTOL, atol=ATOL)


def test_without_double_buffering_too():
    cfg = models.GPTConfig(d_model=64, n_heads=4, n_layers=1, seq_len=16)
    model = models.GPT(cfg).eval()
    x = torch.randn(2, cfg.seq_len, cfg.d_model)
    program = nova.compile(model, x, double_buffer=False)
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=RTOL, atol=ATOL)
