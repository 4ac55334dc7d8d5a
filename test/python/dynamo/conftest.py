"""Every dynamo test starts from a fresh Dynamo, a fresh in-process cache and
a disk cache of its own, so that counts of compiles and hits are exact."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import nova.dynamo

# The fallback fuzzer's generator (fallback_programs.py) is shared with scripts/fuzz_fallback.py.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("NOVA_CACHE_DIR", str(tmp_path / "nova-cache"))
    torch._dynamo.reset()
    nova.dynamo.clear_cache()
    yield
    torch._dynamo.reset()


@pytest.fixture
def train_beside_eager():
    """``run(compiled, model, reference, steps, fallback)``: AdamW steps of
    ``compiled`` (the torch.compile of ``model``) and of ``reference`` (a copy
    of ``model``) on one batch, side by side; their losses. ``fallback`` is
    the warnings filter for NovaFallbackWarning ("error" or "ignore")."""
    import warnings

    from nova.dynamo import NovaFallbackWarning

    def run(compiled, model, reference, steps: int, fallback: str, shapes=((4, 16), (4, 8))):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        reference_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
        x, y = (torch.randn(*shape) for shape in shapes)
        losses, expected = [], []
        with warnings.catch_warnings():
            warnings.simplefilter(fallback, NovaFallbackWarning)
            for _ in range(steps):
                for net, opt, out in ((compiled, optimizer, losses),
                                      (reference, reference_optimizer, expected)):
                    opt.zero_grad()
                    loss = torch.nn.functional.mse_loss(net(x), y)
                    loss.backward()
                    opt.step()
                    out.append(loss.item())
        return torch.tensor(losses), torch.tensor(expected)

    return run
