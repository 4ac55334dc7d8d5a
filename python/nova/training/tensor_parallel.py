"""A parallel plan on a training step: the plan resolved (PyTorch styles
translated), and the stand-in modules it needs while the step is traced.

A split ``nn.Embedding`` is traced as ``one_hot(ids) @ weight`` (as
``compile_parallel`` does, :mod:`nova.parallel.split_tables`), so a
vocab-parallel embedding and LM head partition correctly through the
backward too, and ``F.cross_entropy`` is traced as a dense reduction over
the classes (:mod:`nova.training.parallel_loss`); the other rewrites of a torch-style plan (Llama's grouped
key/value heads) apply likewise."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch

from nova.training.errors import TrainStepError

__all__ = ["resolve_plan", "traced_with_plan"]


def resolve_plan(model: torch.nn.Module, mesh: Any, plan: Any):
    """``plan`` as a :class:`nova.parallel.ParallelPlan` for ``mesh``."""
    from nova.parallel.compile import _is_torch_plan
    from nova.parallel.mesh import Mesh
    from nova.parallel.plan import ParallelPlan

    if mesh is None:
        raise TrainStepError("plan= needs mesh=, the mesh the plan's axes name")
    if not isinstance(mesh, Mesh):
        raise TrainStepError(f"mesh must be a nova.parallel.Mesh, got {type(mesh).__name__}")
    if _is_torch_plan(plan):
        from nova.parallel.torch_styles import check_heads, torch_plan
        plan = torch_plan(model, mesh, plan)
        check_heads(model, plan, mesh)
    if not isinstance(plan, ParallelPlan):
        raise TrainStepError(f"plan must be a nova.parallel.ParallelPlan or a dict of torch "
                             f"ParallelStyles, got {type(plan).__name__}")
    if getattr(plan, "relayouts", None):
        # The parameters would be stored re-laid-out (GPT-2's fused c_attn per
        # head), and so would their gradients and optimizer state.
        raise TrainStepError(
            f"the plan stores {sorted(plan.relayouts)} re-laid-out (a fused projection split "
            f"per head); training under such a plan is not supported yet: split the "
            f"projection's parts with ColwiseParallel on separate modules")
    return plan


@contextlib.contextmanager
def traced_with_plan(model: torch.nn.Module, mesh: Any, plan: Any) -> Iterator[None]:
    """While the step is traced: ``model`` with the plan's stand-in modules."""
    if plan is None:
        yield
        return
    from nova.parallel.rewrites import rewritten
    from nova.parallel.split_tables import embedding_rewrites
    from nova.training.parallel_loss import parallel_cross_entropy

    rewrites = tuple(getattr(plan, "rewrites", ()))
    rewrites += tuple(embedding_rewrites(model, plan, done=rewrites))
    # The cross-entropy too, so a vocabulary split by the plan stays split.
    with rewritten(model, rewrites, lambda axis: mesh.shape[mesh.axis(axis)]), \
            parallel_cross_entropy():
        yield
