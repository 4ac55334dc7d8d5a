"""Shared fixtures: the tests run against the installed `nova` package."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# Shared test helpers in this folder (hf_zoo) import as top-level modules from
# any test folder (pytest runs with --import-mode=importlib, which adds none).
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

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


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory) -> None:
    """Compiled programs cached on disk go to a folder of this session (of this
    worker, under pytest-xdist), not the user's ~/.cache/nova: a test never
    reads a binary an earlier run or another worker wrote."""
    import os

    if "NOVA_CACHE_DIR" not in os.environ:
        os.environ["NOVA_CACHE_DIR"] = str(tmp_path_factory.mktemp("nova-cache"))


@pytest.fixture
def matmul_ok() -> str:
    return MATMUL_OK


@pytest.fixture
def matmul_bad() -> str:
    return MATMUL_BAD


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


#: The small Hugging Face causal LMs the tests build (random weights, nothing
#: downloaded): GPT-2 and Llama with grouped-query attention.
HF_VOCAB = 128


@pytest.fixture
def hf_causal_lm():
    """``build(name, attn)``: a ``GPT2LMHeadModel`` (``name="gpt2"``) or a
    ``LlamaForCausalLM`` (``"llama"``) from a small config, in eval mode, with
    ``attn`` ("eager" or "sdpa") attention."""
    transformers = pytest.importorskip("transformers")

    def build(name: str, attn: str = "eager"):
        if name == "gpt2":
            config = transformers.GPT2Config(vocab_size=HF_VOCAB, n_embd=64, n_layer=2,
                                             n_head=4, n_positions=64,
                                             attn_implementation=attn)
            return transformers.GPT2LMHeadModel(config).eval()
        config = transformers.LlamaConfig(
            vocab_size=HF_VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
            attn_implementation=attn)
        return transformers.LlamaForCausalLM(config).eval()

    return build
