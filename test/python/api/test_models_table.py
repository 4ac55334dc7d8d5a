"""The cells of docs/models.md (scripts/models_table.py writes the table from
the same functions): ten Hugging Face architectures in their default
configuration, inference and training through nova.compile, torch.compile and
compile_train_step, each against torch eager (test/python/hf_cells.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hf_cells  # noqa: E402


@pytest.mark.parametrize("name, cell, padded", hf_cells.cells(),
                         ids=[f"{n}-{c}{'-padded' if p else ''}" for n, c, p in hf_cells.cells()])
def test_model_cell(name: str, cell: str, padded: bool) -> None:
    result = hf_cells.run_cell(name, cell, padded=padded)
    assert result.ok, result.detail
