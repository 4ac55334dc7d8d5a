"""Reference PyTorch models built from code (random weights, no downloads).

Used by the tests, the fixtures under test/Fixtures and the benchmarks.
"""
from nova.models.blocks import (
    MLP,
    GELU,
    LayerNorm,
    MultiHeadAttention,
    RMSNorm,
    SiLU,
    Softmax,
)
from nova.models.cnn import SmallCNN
from nova.models.gpt import GPT, GPTBlock, GPTConfig

__all__ = [
    "GELU",
    "GPT",
    "GPTBlock",
    "GPTConfig",
    "LayerNorm",
    "MLP",
    "MultiHeadAttention",
    "RMSNorm",
    "SiLU",
    "SmallCNN",
    "Softmax",
]
