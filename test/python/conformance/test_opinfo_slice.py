"""A fixed fast slice of the OpInfo conformance run (benchmarks/opinfo_coverage.py):
one sample per op, ops chosen to cover the families (elementwise unary and
binary, comparisons, reductions, scans, matmuls, shapes and views, indexing,
normalization and activations, convolution and pooling) in float32, and a few
in bfloat16, int64 and bool. Every sample here passes (docs/coverage.md): each
must still compile, run on the simulator and match eager (a regression guard,
through the runner's own code)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("expecttest")  # torch.testing._internal needs it

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from opinfo_runner.ops import DTYPES, find_op  # noqa: E402
from opinfo_runner.run import run_sample  # noqa: E402
from opinfo_runner.sweep import pick_samples  # noqa: E402

# (OpInfo, dtype, sample index): the first sample of each that passed in the full run.
SLICE = [
    # elementwise unary
    ("abs", "float32", 0), ("neg", "float32", 0), ("exp", "float32", 0),
    ("log", "float32", 0), ("sqrt", "float32", 0), ("rsqrt", "float32", 0),
    ("cos", "float32", 0), ("tanh", "float32", 0), ("sigmoid", "float32", 0),
    ("erf", "float32", 0), ("floor", "float32", 0), ("frac", "float32", 0),
    # elementwise binary, ternary
    ("add", "float32", 0), ("sub", "float32", 1), ("mul", "float32", 2),
    ("div.no_rounding_mode", "float32", 0), ("remainder", "float32", 0),
    ("pow", "float32", 0), ("maximum", "float32", 0), ("clamp", "float32", 0),
    ("where", "float32", 0), ("addcmul", "float32", 0), ("lerp", "float32", 0),
    # comparisons
    ("eq", "float32", 0), ("lt", "float32", 1),
    # reductions and scans
    ("sum", "float32", 0), ("mean", "float32", 0), ("amax", "float32", 0),
    ("argmax", "float32", 0), ("prod", "float32", 0), ("var", "float32", 0),
    ("cumsum", "float32", 0), ("cumprod", "float32", 0),
    # matmuls
    ("mm", "float32", 0), ("bmm", "float32", 0), ("matmul", "float32", 0),
    ("addmm", "float32", 0), ("baddbmm", "float32", 0), ("mv", "float32", 0),
    ("nn.functional.linear", "float32", 0),
    # shapes, views, copies
    ("reshape", "float32", 0), ("permute", "float32", 0), ("transpose", "float32", 0),
    ("cat", "float32", 0), ("stack", "float32", 0), ("expand", "float32", 0),
    ("squeeze", "float32", 0), ("flatten", "float32", 0), ("narrow", "float32", 0),
    ("flip", "float32", 0), ("diagonal", "float32", 0), ("tril", "float32", 0),
    ("chunk", "float32", 0),
    # indexing
    ("index_select", "float32", 0), ("gather", "float32", 0),
    ("nn.functional.embedding", "float32", 0),
    # normalization, activations, softmax
    ("softmax", "float32", 0), ("log_softmax", "float32", 0),
    ("nn.functional.layer_norm", "float32", 0), ("nn.functional.relu", "float32", 0),
    ("nn.functional.gelu", "float32", 0), ("nn.functional.silu", "float32", 0),
    # convolution, pooling
    ("nn.functional.conv2d", "float32", 0), ("nn.functional.avg_pool2d", "float32", 0),
    ("nn.functional.interpolate.bilinear", "float32", 0), ("nn.functional.max_pool2d", "float32", 0),
    # other dtypes
    ("add", "bfloat16", 0), ("addmm", "bfloat16", 0), ("sum", "bfloat16", 0),
    ("softmax", "bfloat16", 0),
    ("add", "int64", 0), ("mul", "int64", 0), ("sum", "int64", 0),
    ("floor_divide", "int64", 0), ("cumsum", "int64", 0), ("bitwise_left_shift", "int64", 0),
    ("add", "bool", 0), ("eq", "bool", 0), ("where", "bool", 0), ("expand", "bool", 0),
    # nova.frontend's rewrites for dtypes the units do not take, and max pooling
    ("nn.functional.max_pool1d", "bfloat16", 0), ("mm", "int64", 0), ("bmm", "int64", 0),
    ("ge", "bool", 0), ("mul", "bool", 0), ("maximum", "bool", 0),
]


@pytest.mark.parametrize("name,dtype,index", SLICE,
                         ids=[f"{n}-{d}-{i}" for n, d, i in SLICE])
def test_opinfo_sample_passes(name, dtype, index):
    op = find_op(name)
    sample = pick_samples(op, DTYPES[dtype], index + 1)[index]
    # These samples lower with torch-mlir's defaults: skip that (slow) check.
    row = run_sample(op, sample, DTYPES[dtype], timeout=120, check_lowerable=False)
    assert row["class"] == "pass", row
