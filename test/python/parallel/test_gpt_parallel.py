"""The 2-layer GPT gives the same outputs on 1 chip, on 4 chips with TP=4,
on 8 chips with DP=2 x TP=4 and with PP=2 stages x 4 microbatches, on a
switch (nova-t1) and a ring (nova-t1-ring8), all through the compiler and
the simulator, against torch eager."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.models.gpt import GPT, GPTConfig
from nova.parallel import Mesh, compile_parallel, megatron_transformer_plan
from nova.parallel.pipeline import compile_pipeline, split_gpt

RTOL, ATOL = 1e-4, 1e-5
TARGETS = ["nova-t1", "nova-t1-ring8"]


@pytest.fixture(scope="module")
def gpt_and_batch():
    torch.manual_seed(0)
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16)).eval()
    x = torch.randn(4, 16, 64)
    with torch.no_grad():
        expected = model(x)
    return model, x, expected


def _compile(layout: str, model, x, target: str):
    if layout == "1 chip":
        return nova.compile(model, x, target=target)
    if layout == "TP=4":
        return compile_parallel(model, x, mesh=Mesh((4,), ("tp",)), target=target,
                                plan=megatron_transformer_plan(model, axis="tp"))
    if layout == "DP=2 x TP=4":
        return compile_parallel(model, x, mesh=Mesh((2, 4), ("dp", "tp")), target=target,
                                plan=megatron_transformer_plan(model, axis="tp",
                                                               batch_axis="dp"))
    assert layout == "PP=2 x M=4"
    return compile_pipeline(split_gpt(model, 1), x, microbatches=4, target=target)


# All-reduces per forward pass: two per layer under TP (after attention, after
# the MLP), none for one chip or the pipeline (which uses send/recv).
ALL_REDUCES = {"1 chip": 0, "TP=4": 4, "DP=2 x TP=4": 4, "PP=2 x M=4": 0}


# A lone chip has no topology (a ring needs at least 2 chips).
CASES = [("1 chip", "nova-t1")] + [(layout, target) for layout in list(ALL_REDUCES)[1:]
                                   for target in TARGETS]


@pytest.mark.parametrize("layout,target", CASES)
def test_gpt_layouts_match_torch(gpt_and_batch, layout: str, target: str) -> None:
    model, x, expected = gpt_and_batch
    program = _compile(layout, model, x, target)
    assert program.stages["nova"].count("nova.all_reduce") == ALL_REDUCES[layout]
    got = program(x)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    assert program.report is not None and program.report.time_s > 0


def test_dp_tp_groups_follow_the_mesh(gpt_and_batch) -> None:
    """On the (dp=2, tp=4) mesh the TP all-reduces run within each dp row."""
    model, x, _ = gpt_and_batch
    program = _compile("DP=2 x TP=4", model, x, "nova-t1")
    assert "groups [[0, 1, 2, 3], [4, 5, 6, 7]]" in program.stages["nova"]
    # Each chip holds half the batch and one head: [2, 1, 16, 16] scores.
    assert "tensor<2x1x16x16xf32>" in program.stages["linalg"]


def test_sequence_parallel_matches_torch(gpt_and_batch) -> None:
    """LayerNorms and residual adds on each chip's slice of the sequence; an
    all-gather of the sequence before every column-parallel layer, a
    reduce-scatter after every row-parallel one."""
    model, x, expected = gpt_and_batch
    plan = megatron_transformer_plan(model, axis="tp", sequence_parallel=True)
    program = compile_parallel(model, x, mesh=Mesh((4,), ("tp",)), plan=plan,
                               target="nova-t1-ring8")
    nova_ir = program.stages["nova"]
    # Megatron-SP: a reduce-scatter after each row-parallel layer (the
    # all-reduce + slice that partitioning gives, fused), an all-gather
    # before q/k/v and fc1 of each layer.
    assert nova_ir.count("nova.reduce_scatter") == 4
    assert nova_ir.count("nova.all_reduce") == 0
    assert nova_ir.count("nova.all_gather") >= 4
    torch.testing.assert_close(program(x), expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("target", TARGETS)
def test_sequence_parallel_with_data_parallel_on_a_2d_mesh(gpt_and_batch, target) -> None:
    """Sequence parallelism next to a batch split (DP=2 x TP=4): its
    resharding on the 2-D grid, which MLIR 22's shard-partition cannot do,
    goes through nova.reshard (nova-materialize-reshards), and gives eager's
    outputs; the sequence's gathers and reduce-scatters stay within each
    data-parallel replica's tensor-parallel group."""
    model, x, expected = gpt_and_batch
    plan = megatron_transformer_plan(model, axis="tp", batch_axis="dp",
                                     sequence_parallel=True)
    program = compile_parallel(model, x, mesh=Mesh((2, 4), ("dp", "tp")), plan=plan,
                               target=target)
    nova_ir = program.stages["nova"]
    assert nova_ir.count("nova.reduce_scatter") == 4
    tp_groups = "groups [[0, 1, 2, 3], [4, 5, 6, 7]]"
    for line in nova_ir.splitlines():
        if "nova.reduce_scatter" in line or "nova.all_gather" in line:
            assert tp_groups in line, line
    torch.testing.assert_close(program(x), expected, rtol=RTOL, atol=ATOL)
