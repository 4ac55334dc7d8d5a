"""Shared fixtures: the tests run against the installed `nova` package."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# A valid one-op program, and the same op with a contraction mismatch that the
# nova.matmul verifier rejects.
MATMUL_OK = """\
func.func @matmul_ok(%a: memref<4x8xf32, #nova.memory_space<sram>>,
                     %b: memref<8x4xf32, #nova.memory_space<sram>>,
                     %c: memref<4x4xf32, #nova.memory_space<acc>>) {
  nova.matmul ins(%a, %b : memref<4x8xf32, #nova.memory_space<sram>>, memref<8x4xf32, #nova.memory_space<sram>>)
              outs(%c : memref<4x4xf32, #nova.memory_space<acc>>)
  return
}
"""

MATMUL_BAD = MATMUL_OK.replace("8x4xf32", "16x4xf32")


@pytest.fixture
def matmul_ok() -> str:
    return MATMUL_OK


@pytest.fixture
def matmul_bad() -> str:
    return MATMUL_BAD


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT
