"""A training step that does not fit the target's HBM is a TrainStepMemoryError
naming every category and the largest tensors: before compiling when the
parameters, gradients and optimizer state alone are too big, and from the
compiler's memory plan otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import nova
from nova.compiler.errors import NovaModelCompileError
from nova.training import TrainStepError
from nova.training.errors import TrainStepMemoryError

REPO_ROOT = Path(__file__).resolve().parents[3]


def _target(tmp_path, hbm_bytes: int) -> str:
    data = json.loads((REPO_ROOT / "targets" / "nova-t1.json").read_text())
    data.update(name="small-hbm", hbm_bytes=hbm_bytes)
    path = tmp_path / "small-hbm.json"
    path.write_text(json.dumps(data))
    return str(path)


def _model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2)


def _example():
    return torch.randn(4, 8), torch.randn(4, 4)


def test_parameters_gradients_and_state_over_hbm_fail_before_compiling(tmp_path, monkeypatch):
    import nova.training.train_step as train_step

    def no_trace(*args, **kwargs):
        raise AssertionError("the step was traced: the memory check comes first")

    monkeypatch.setattr(train_step, "import_train_step", no_trace)
    model, optimizer = _model()
    # 848 B of parameters, 848 B of gradients, 1696 B of AdamW state.
    with pytest.raises(TrainStepMemoryError) as caught:
        nova.compile_train_step(model, torch.nn.functional.mse_loss, optimizer, *_example(),
                                target=_target(tmp_path, 2048))
    error = caught.value
    assert isinstance(error, TrainStepError)
    text = str(error)
    for word in ("parameters", "gradients", "optimizer state", "2.00 KiB (2048 bytes)",
                 "3392 bytes", "largest tensors: 0.weight 512 B"):
        assert word in text, text
    breakdown = error.breakdown
    assert breakdown.largest[0] == ("0.weight", 512)
    assert breakdown.resident == 3392 and breakdown.capacity == 2048


def test_compiler_hbm_error_is_reraised_with_the_breakdown(tmp_path):
    model, optimizer = _model()
    # Room for parameters, gradients and state (3392 B), not for the whole
    # program (3456 B: the updates run in place, so it needs little more).
    with pytest.raises(TrainStepMemoryError) as caught:
        nova.compile_train_step(model, torch.nn.functional.mse_loss, optimizer, *_example(),
                                target=_target(tmp_path, 3424))
    error = caught.value
    assert isinstance(error.__cause__, NovaModelCompileError)
    text = str(error)
    assert "the compiler's memory plan needs" in text and "the target has 3.34 KiB" in text
    for word in ("parameters", "gradients", "optimizer state", "results (updated copies)",
                 "largest tensors: 0.weight 512 B"):
        assert word in text, text
    assert error.breakdown.total > 3424 and error.breakdown.capacity == 3424
