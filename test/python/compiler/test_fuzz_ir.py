"""Mutated lit-suite IR through nova-opt: every case is accepted or rejected with
a diagnostic, never a crash, a silent failure or a hang (nova.compiler.fuzz_ir).
Bounded and seeded; scripts/fuzz_ir.py is the long run."""

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nova.compiler.fuzz_ir import OK, classify, corpus, mutate, run_case, run_ir
from nova.compiler.tools import find_tool

ROOT = Path(__file__).resolve().parents[3]
SEEDS = corpus(ROOT / "test")


def test_corpus_covers_the_lit_suite() -> None:
    assert len(SEEDS) > 300
    pipelines = {a.split("=")[0] for s in SEEDS for a in s.args}
    for p in ("--nova-lower-to-isa", "--convert-nova-to-isa", "--nova-linalg-normalize", "--nova-partition"):
        assert p in pipelines


def test_mutations_are_deterministic_and_change_the_text() -> None:
    text = SEEDS[0].text
    a = [mutate(text, random.Random(i)) for i in range(20)]
    b = [mutate(text, random.Random(i)) for i in range(20)]
    assert a == b
    assert sum(m[0] != text for m in a) >= 18


def test_classify() -> None:
    assert classify(0, "") == "accepted"
    assert classify(1, "<stdin>:3:5: error: bad") == "rejected"
    assert classify(1, "") == "silent"
    assert classify(-6, "") == "crash"
    assert classify(1, "Assertion `x' failed.") == "crash"
    assert classify(None, "") == "hang"


@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(SEEDS) - 1), st.integers(0, 2**32 - 1))
def test_mutated_ir_is_accepted_or_rejected_clearly(index: int, seed: int) -> None:
    out = run_case(find_tool("nova-opt"), SEEDS[index], random.Random(seed), timeout=30.0)
    assert out.kind in OK, f"{out.kind} on {out.seed} after {out.mutation}:\n{out.stderr_tail}"


# Reproducers of the reliability issue: upstream verifiers and passes that
# assert on malformed input are guarded before Nova hands them the IR.
REPRODUCERS = {
    "reassociation_index_huge": ("", """
func.func @f(%a: tensor<4x8xf32>) -> tensor<32xf32> {
  %0 = tensor.collapse_shape %a [[0, 9223372036854775807]] : tensor<4x8xf32> into tensor<32xf32>
  return %0 : tensor<32xf32>
}"""),
    "split_axis_beyond_grid": ("--nova-partition", """
shard.grid @g(shape = 4)
func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  %s = shard.sharding @g split_axes = [[2]] : !shard.sharding
  %0 = shard.shard %a to %s : tensor<8xf32>
  return %0 : tensor<8xf32>
}"""),
    "grid_dim_huge": ("--nova-partition", """
shard.grid @g(shape = 9223372036854775807)
func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %a to %s : tensor<8xf32>
  return %0 : tensor<8xf32>
}"""),
    "transpose_permutation_huge": ("", """
func.func @f(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %0 = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [100000000000000000000, 0]
  return %0 : tensor<8x4xf32>
}"""),
}


@pytest.mark.parametrize("name", sorted(REPRODUCERS))
def test_reproducer_is_a_clear_error(name: str) -> None:
    args, text = REPRODUCERS[name]
    kind, _, err = run_ir(find_tool("nova-opt"), text, [args] if args else [], timeout=30.0)
    assert kind == "rejected", f"{kind}:\n{err[-2000:]}"
