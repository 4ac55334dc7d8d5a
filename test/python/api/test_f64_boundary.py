"""f64 at the boundary: a model that takes or returns float64 (or holds
float64 parameters, ``model.double()``) compiles; the accelerator computes in
f32, and the caller gets its own dtype back."""

from __future__ import annotations

import torch
from torch import nn

import nova
from nova.runtime.binding import CallBinding


class _Mixed(nn.Module):
    def forward(self, x):
        return (x * 2).sin().sum(-1), x.float() + 1


def test_f64_inputs_and_outputs_come_back_in_the_callers_dtype():
    x = torch.randn(4, 8, dtype=torch.float64)
    program = nova.compile(_Mixed(), x)
    ours, theirs = program(x), _Mixed()(x)
    assert [t.dtype for t in ours] == [torch.float64, torch.float32]
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_double_model_matches_eager():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).double().eval()
    x = torch.randn(3, 8, dtype=torch.float64)
    out = nova.compile(model, x)(x)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-5)


def test_the_callers_dtype_survives_saving_the_binding():
    x = torch.randn(4, 8, dtype=torch.float64)
    binding = nova.compile(_Mixed(), x).binding
    again = CallBinding.from_json(binding.to_json())
    assert again.inputs[0].host_dtype == "float64"
    assert [leaf.host_dtype for leaf in again.outputs] == ["float64", None]
