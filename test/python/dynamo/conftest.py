"""Every dynamo test starts from a fresh Dynamo, a fresh in-process cache and
a disk cache of its own, so that counts of compiles and hits are exact."""

from __future__ import annotations

import pytest
import torch

import nova.dynamo


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("NOVA_CACHE_DIR", str(tmp_path / "nova-cache"))
    torch._dynamo.reset()
    nova.dynamo.clear_cache()
    yield
    torch._dynamo.reset()
