"""The OpInfo runner's own parts (benchmarks/opinfo_runner): tolerances, the
comparison, the classes of a sample and the coverage page."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("expecttest")  # torch.testing._internal needs it

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from opinfo_runner import report  # noqa: E402
from opinfo_runner.compare import compare  # noqa: E402
from opinfo_runner.ops import DEFAULT_TOLERANCE, find_op, tolerance  # noqa: E402
from opinfo_runner.run import op_named, run_sample  # noqa: E402
from opinfo_runner.sweep import pick_samples  # noqa: E402


def test_tolerance_is_the_opinfo_override_or_the_default():
    # matmul overrides float32 on CPU (rtol 1e-5): never tighter than ours.
    assert tolerance(find_op("matmul"), torch.float32) == DEFAULT_TOLERANCE[torch.float32]
    assert tolerance(find_op("add"), torch.bfloat16) == (1.6e-2, 1e-5)
    assert tolerance(find_op("add"), torch.int64) is None


def test_tolerance_takes_a_looser_cpu_override():
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.testing._internal.common_device_type import toleranceOverride

    loose = [op for op in op_db for info in op.decorators
             if getattr(info, "device_type", None) in (None, "cpu")
             for dec in getattr(info, "decorators", ())
             if isinstance(dec, toleranceOverride) and torch.float32 in dec.d
             and dec.d[torch.float32].atol > 1e-4]
    assert loose, "no OpInfo loosens float32 on CPU any more"
    assert tolerance(loose[0], torch.float32)[1] > 1e-4


def test_compare_floats_nan_ints_and_dtypes():
    x = torch.tensor([1.0, float("nan"), 3.0])
    assert compare((x.clone(),), (x,))[0]
    ok, why = compare((x + 1e-3,), (x,))
    assert not ok and "elements off" in why
    assert compare((x + 1e-3,), (x,), (1e-2, 1e-2), torch.float32)[0]
    ok, why = compare((torch.tensor([1.0, 2.0, 3.0]),), (x,))
    assert not ok and "NaN" in why
    ok, why = compare((torch.tensor([1, 2], dtype=torch.int32),),
                      (torch.tensor([1, 2]),))
    assert not ok and "dtype" in why
    ok, why = compare((torch.tensor([1, 3]),), (torch.tensor([1, 2]),))
    assert not ok and "got 3, eager 2" in why
    ok, why = compare((torch.tensor([float("inf")]),), (torch.tensor([1.0]),))
    assert not ok


def test_op_named_finds_the_op_in_a_message():
    assert op_named("'linalg.generic' op cannot be lowered: 'math.acos' in its body") \
        == "linalg.generic"
    assert op_named("failed to legalize operation 'torch.aten.cumsum'") == "torch.aten.cumsum"
    assert op_named("timeout after 60 s") is None


def test_a_sample_torch_mlir_does_not_lower_is_not_counted_against_nova():
    # torch-mlir's default table leaves aten.addmv, which it does not lower.
    op = find_op("addmv")
    sample = pick_samples(op, torch.float32, 1)[0]
    row = run_sample(op, sample, torch.float32)
    assert row["class"] == "notlowerable", row
    assert "addmv" in row["error"]


def test_coverage_page_keeps_the_prose_around_its_generated_part(tmp_path):
    results = {"float32": {"add": [{"sample": 0, "class": "pass"},
                                   {"sample": 1, "class": "wrong", "error": "output 0: off"}],
                           "acos": [{"sample": 0, "class": "compile",
                                     "error": "'math.acos' has no vector-unit form"}]},
               "int64": {"add": [{"sample": 0, "class": "notlowerable", "error": "x"}]}}
    meta = {"date": "2026-12-02", "torch": "2.x", "commit": "abc", "command": "cmd"}
    page = tmp_path / "coverage.md"
    page.write_text(f"# Op coverage\n\nintro\n\n{report.BEGIN}\nold\n{report.END}\n\ncauses\n")
    report.write_doc(page, results, meta)
    text = page.read_text()
    assert text.startswith("# Op coverage\n\nintro") and text.endswith("causes\n")
    assert "old" not in text
    assert "| float32 | 2 | 1 | 1 | 1 | 0 | 0 | 0 | 33.3 |" in text
    assert "| int64 | 1 | 0 | 0 | 0 | 0 | 1 | 0 | - |" in text
    assert "`add` float32 #1" in text
