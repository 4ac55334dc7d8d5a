"""Tensor/data parallelism through the upstream ``shard`` dialect.

    from nova.parallel import Mesh, megatron_mlp_plan, compile_parallel
    mesh = Mesh((2,), ("tp",))
    program = compile_parallel(mlp, x, mesh=mesh,
                               plan=megatron_mlp_plan("fc1", "fc2", axis="tp"),
                               target="nova-t1")
    y = program(x)

A plan maps parameter names to one placement per mesh axis (DTensor style).
The plan becomes ``shard.grid`` + ``shard.shard`` annotations on the
linalg-on-tensors program; upstream ``sharding-propagation`` and
``shard-partition`` (the ``nova-partition`` pipeline) make it a per-chip
SPMD program whose collectives become nova collectives.

A tensor-parallel plan may also be written as for PyTorch's
``parallelize_module``: ``{"transformer.h.*.mlp.c_fc": ColwiseParallel(), ...}``
(``torch_plan``; ``gpt2_tp_plan`` and ``llama_tp_plan`` are ready-made).
"""

from nova.parallel.errors import ChipCountError, ParallelError, PipelineError
from nova.runtime.mesh import Mesh, Partial, Placement, Replicate, Shard
from nova.parallel.plan import (ParallelPlan, data_parallel_plan, megatron_block_plan,
                                megatron_mlp_plan, megatron_transformer_plan)

__all__ = ["ChipCountError", "Mesh", "ParallelError", "ParallelPlan", "PipelineError", "Partial",
           "Placement", "Replicate", "Shard", "compile_parallel", "compile_pipeline", "data_parallel_plan",
           "megatron_block_plan", "megatron_mlp_plan", "megatron_transformer_plan",
           "split_gpt", "split_stages", "ParallelProgram", "PlanError",
           # PyTorch's tensor-parallel vocabulary (torch_styles.py, hf_plans.py)
           "FusedColwiseParallel", "TorchParallelPlan", "gpt2_tp_plan", "llama_tp_plan",
           "torch_plan"]


def __getattr__(name: str):
    # torch and the compiler are imported only when compiling.
    if name == "ParallelProgram":
        from nova.parallel.program import ParallelProgram
        return ParallelProgram
    if name == "PlanError":
        from nova.parallel.annotate import PlanError
        return PlanError
    if name == "compile_parallel":
        from nova.parallel.compile import compile_parallel
        return compile_parallel
    if name in ("compile_pipeline", "split_gpt", "split_stages"):  # pipeline parallelism (pipeline.py)
        from nova.parallel import pipeline
        return getattr(pipeline, name)
    if name in ("FusedColwiseParallel", "TorchParallelPlan", "torch_plan"):
        from nova.parallel import torch_styles  # imports torch.distributed
        return getattr(torch_styles, name)
    if name in ("gpt2_tp_plan", "llama_tp_plan"):
        from nova.parallel import hf_plans
        return getattr(hf_plans, name)
    raise AttributeError(f"module 'nova.parallel' has no attribute {name!r}")
