"""3-D parallelism: pipeline stages that each run on a DP x TP mesh
(``compile_pipeline_train_step(..., mesh=Mesh((2, 2), ("dp", "tp")),
plan=megatron_transformer_plan(model, batch_axis="dp"))``, 8 chips:
2 stages x 2 x 2). Each stage's bodies are partitioned over the
(pp, dp, tp) grid, so their collectives stay inside the stage; activations
cross between the chips at the same (dp, tp) coordinate. A 4-layer GPT, 4
micro-batches, 1F1B, 5 AdamW steps give the one-chip losses at every step
(rtol 1e-4), on the switch and on the ring, with ZeRO-1 over dp too;
DP2 x PP2 likewise. Each B takes its F's saved activations where the
partitioned F leaves them (the default) or recomputes the forward
(``recompute=True``): both give eager's losses and every parameter."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.parallel import Mesh, PipelineError
from nova.parallel.placements import Shard
from nova.parallel.plan import ParallelPlan, megatron_transformer_plan
from nova.training.pipeline_train import compile_pipeline_train_step

from .lm_batches import eager_microbatched, lm_cross_entropy, token_batches

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=4)


def _batches(n: int = 5):
    # No ignored labels: the mean of the micro-batches' losses is the batch's.
    return token_batches(CFG, n, ignored=False)


def _model_and_optimizer():
    torch.manual_seed(0)
    model = GPT(CFG)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2)


@pytest.fixture(scope="module")
def one_chip():
    model, optimizer = _model_and_optimizer()
    batches = _batches()
    step = nova.compile_train_step(model, lm_cross_entropy, optimizer, *batches[0])
    return step, torch.stack([step(*b) for b in batches])


def _train(target: str, mesh: Mesh, tp: bool, zero: int = 0):
    model, optimizer = _model_and_optimizer()
    batches = _batches()
    plan = megatron_transformer_plan(model, batch_axis="dp") if tp else None
    step = compile_pipeline_train_step(model, lm_cross_entropy, optimizer, *batches[0],
                                       stages=2, microbatches=4, target=target, mesh=mesh,
                                       plan=plan, zero=zero)
    return step, torch.stack([step(*b) for b in batches])


@pytest.mark.parametrize("target, zero", [("nova-t1", 0), ("nova-t1-ring8", 0),
                                          ("nova-t1", 1)])
def test_dp2_tp2_pp2_gives_the_one_chip_losses(one_chip, target, zero):
    """zero=1: each stage's AdamW state also split over dp (ZeRO-1), the
    updated parameters all-gathered over dp."""
    base, base_losses = one_chip
    step, losses = _train(target, Mesh((2, 2), ("dp", "tp")), tp=True, zero=zero)
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)
    # Parameters read back whole from each stage's four chips.
    ours, theirs = step.parameters(), base.parameters()
    for name in ("blocks.0.attn.q.weight", "blocks.3.mlp.fc2.weight", "tok_emb.weight"):
        torch.testing.assert_close(ours[name], theirs[name], rtol=1e-3, atol=1e-5)
    nova_ir = step.stages["nova"]
    assert nova_ir.count("func.func @chip") == 8
    # Stage collectives stay inside their stage: dp groups, tp groups.
    for line in nova_ir.splitlines():
        if "nova.all_reduce" in line or "nova.all_gather" in line:
            assert ("groups [[0, 2], [1, 3], [4, 6], [5, 7]]" in line
                    or "groups [[0, 1], [2, 3], [4, 5], [6, 7]]" in line), line
    if zero:
        # The state is split over dp as well: its arguments are smaller.
        exp_avg = step.layout.slots[0][0][0]
        assert step.stage_mesh.args[exp_avg]
    # Activations cross to the same (dp, tp) coordinate of the next stage.
    chip5 = nova_ir.split("func.func @chip5")[1].split("func.func @chip6")[0]
    assert "from 1 channel" in chip5 and "to 1 channel" in chip5


@pytest.fixture(scope="module")
def eager():
    """torch itself, micro-batch by micro-batch (the loss: their mean), 3 steps."""
    model, optimizer = _model_and_optimizer()
    return model, eager_microbatched(model, optimizer, _batches(3))


@pytest.mark.parametrize("recompute", [False, True])
def test_saved_or_recomputed_activations_give_eager(eager, recompute):
    """Saved activations cross from F to B in the placements sharding
    propagation gave F's results (parameters' shards, batch and head
    splits): 3 steps give eager's losses and every parameter."""
    model, optimizer = _model_and_optimizer()
    batches = _batches(3)
    step = compile_pipeline_train_step(model, lm_cross_entropy, optimizer, *batches[0],
                                       stages=2, microbatches=4, recompute=recompute,
                                       mesh=Mesh((2, 2), ("dp", "tp")),
                                       plan=megatron_transformer_plan(model, batch_axis="dp"))
    assert step.recompute == recompute
    losses = torch.stack([step(*b) for b in batches])
    torch.testing.assert_close(losses, eager[1], rtol=1e-4, atol=0)
    ours, theirs = step.parameters(), dict(eager[0].named_parameters())
    assert set(ours) == set(theirs)
    for name, value in theirs.items():
        torch.testing.assert_close(ours[name], value.detach(), rtol=1e-3, atol=1e-4)
    if not recompute:
        # Stage 0's Bx takes the saved tensors of F's it reads, not the
        # parameters and the input; G the weights' gradients once per step.
        assert step.deferred == ["", ""]
        F, Bx = (step._lowered[0][k] for k in ("F", "Bx"))
        saved = F[1].result_types[1:]
        assert Bx[1].arg_types[:len(Bx[0].saved)] == [saved[j] for j in Bx[0].saved]
        # The loss's exponentials are saved, not recomputed in B: the last
        # stage's Bx has only its blocks' exps (the exact GELU's backward), as
        # many as stage 0's (the same number of blocks, no loss).
        exps = [sum("math.exp" in l for l in stage["Bx"][0].mlir.splitlines())
                for stage in step._lowered]
        assert exps[0] == exps[1] > 0, exps


def test_sequence_parallel_stages_give_eager(eager):
    """Megatron's sequence parallelism inside the stages
    (``sequence_parallel=True``): the ids and every activation crossing
    between stages split along the sequence over tp as well as the batch
    over dp, at one sequence per dp chip (the micro-batch of the 3-D
    benchmark row, where a propagation rule once merged the batch and
    sequence splits of the tokens and gathered the weights instead). 3 steps
    give eager's losses and every parameter; the weights' gradients still
    run once per step; the stage bodies reduce-scatter and all-gather over
    tp, and no weight is all-gathered."""
    model, optimizer = _model_and_optimizer()
    batches = _batches(3)
    plan = megatron_transformer_plan(model, batch_axis="dp", sequence_parallel=True)
    step = compile_pipeline_train_step(model, lm_cross_entropy, optimizer, *batches[0],
                                       stages=2, microbatches=4,
                                       mesh=Mesh((2, 2), ("dp", "tp")), plan=plan)
    losses = torch.stack([step(*b) for b in batches])
    torch.testing.assert_close(losses, eager[1], rtol=1e-4, atol=0)
    ours, theirs = step.parameters(), dict(eager[0].named_parameters())
    for name, value in theirs.items():
        torch.testing.assert_close(ours[name], value.detach(), rtol=1e-3, atol=1e-4)
    assert step.deferred == ["", ""]
    # The ids (and activations) on a chip: 1 sequence of 16 / 2 tokens.
    ids_arg = step.layout.inputs[0]
    assert step.stage_mesh.args[ids_arg] == {0: Shard(0), 1: Shard(1)}
    forward = step._lowered[0]["F"][1]
    assert forward.result_types[0] == step._lowered[1]["F"][1].arg_types[
        len(step.layout.params[1]) + len(step.layout.constants[1])]
    assert "1x8x32" in forward.result_types[0], forward.result_types[0]
    tp_groups = "groups [[0, 1], [2, 3], [4, 5], [6, 7]]"
    nova_ir = step.stages["nova"]
    assert any("nova.reduce_scatter" in l and tp_groups in l for l in nova_ir.splitlines())
    # No weight gathered over tp in a forward: each all-gather over tp
    # gathers the sequence (dim 1) of the chip's [1, 8, 32] activations.
    f0 = step._lowered[0]["F"][0].mlir
    gathers = [l for l in f0.splitlines() if "nova.all_gather" in l and tp_groups in l]
    assert gathers
    for line in gathers:
        assert "ins(%" in line and "memref<1x8x32x" in line and " dim 1 " in line, line
    # Backward, each layer's input gradient is reduce-scattered over tp, never
    # all-reduced whole: Bx returns what G reads of it (the norms' output
    # gradients) split along the sequence as well.
    for stage in step._lowered:
        bx = stage["Bx"][0].mlir.splitlines()
        assert any("nova.reduce_scatter" in l and tp_groups in l for l in bx)
        whole = [l for l in bx if "nova.all_reduce" in l and "x32xf32" in l]
        assert not whole, whole


def test_dp2_pp2_gives_the_one_chip_losses(one_chip):
    _, base_losses = one_chip
    _, losses = _train("nova-t1", Mesh((2,), ("dp",)), tp=False)
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)


def test_mesh_errors():
    model, optimizer = _model_and_optimizer()
    ids, labels = _batches(1)[0]
    with pytest.raises(PipelineError, match="need mesh="):
        compile_pipeline_train_step(model, lm_cross_entropy, optimizer, ids, labels,
                                    plan=megatron_transformer_plan(model))
    with pytest.raises(PipelineError, match="max_grad_norm"):
        compile_pipeline_train_step(model, lm_cross_entropy, optimizer, ids, labels,
                                    mesh=Mesh((2,), ("dp",)), max_grad_norm=1.0)
    with pytest.raises(PipelineError, match="batch_axis"):
        compile_pipeline_train_step(model, lm_cross_entropy, optimizer, ids, labels,
                                    mesh=Mesh((2, 2), ("dp", "tp")), zero=1,
                                    plan=megatron_transformer_plan(model))
    sp = megatron_transformer_plan(model, batch_axis="dp", sequence_parallel=True)
    with pytest.raises(PipelineError, match="sequence parallelism splits"):
        compile_pipeline_train_step(model, lm_cross_entropy, optimizer, ids[:, :15],
                                    labels[:, :15], mesh=Mesh((2, 2), ("dp", "tp")), plan=sp)
    labels_split = ParallelPlan({**sp.placements, "input1": {"tp": Shard(1)}}, batch_axis="dp")
    with pytest.raises(PipelineError, match="only input0"):
        compile_pipeline_train_step(model, lm_cross_entropy, optimizer, ids, labels,
                                    mesh=Mesh((2, 2), ("dp", "tp")), plan=labels_split)
    with pytest.raises(PipelineError, match="does not split"):
        compile_pipeline_train_step(model, lm_cross_entropy, optimizer, ids[:6], labels[:6],
                                    microbatches=2, mesh=Mesh((2,), ("dp",)))
