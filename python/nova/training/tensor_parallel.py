"""A parallel plan on a training step: the plan resolved (PyTorch styles
translated), and the stand-in modules it needs while the step is traced.

A split ``nn.Embedding`` is traced as ``one_hot(ids) @ weight`` (as
``compile_parallel`` does, :mod:`nova.parallel.split_tables`), so a
vocab-parallel embedding and LM head partition correctly through the
backward too, and ``F.cross_entropy`` is traced as a dense reduction over
the classes (:mod:`nova.training.parallel_loss`); the other rewrites of a torch-style plan (Llama's grouped
key/value heads) apply likewise.

A plan may store parameters re-laid-out (``TorchParallelPlan.relayouts``:
GPT-2's fused ``c_attn`` under ``FusedColwiseParallel``, its q, k and v
columns grouped per chip as Megatron lays out a fused QKV). The step is then
traced with the stand-in module reading the re-laid-out weight
(:class:`nova.parallel.rewrites.GroupedParts`, as ``compile_parallel``
exports the forward), so the device holds the parameter, its gradient and
its optimizer state in that order. The update (AdamW, SGD) is elementwise
and the clipping norm a sum over every element, so the step computes the
same numbers on the permuted tensors. The host keeps everything in the
model's own layout: :class:`StoredLayouts` permutes at bind time and
applies the inverse when reading back (:class:`nova.training.TrainStep`)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Mapping

import numpy as np
import torch

from nova.training.errors import TrainStepError

__all__ = ["StoredLayouts", "resolve_plan", "step_plan", "stored_layouts", "traced_with_plan"]


def resolve_plan(model: torch.nn.Module, mesh: Any, plan: Any, *, relayouts: bool = False):
    """``plan`` as a :class:`nova.parallel.ParallelPlan` for ``mesh``.
    A plan that stores parameters re-laid-out is refused unless ``relayouts``
    (the caller binds and reads them through :func:`stored_layouts`, as
    ``compile_train_step`` does: :func:`step_plan`)."""
    from nova.parallel.compile import is_torch_plan
    from nova.runtime.mesh import Mesh
    from nova.parallel.plan import ParallelPlan

    if mesh is None:
        raise TrainStepError("plan= needs mesh=, the mesh the plan's axes name")
    if not isinstance(mesh, Mesh):
        raise TrainStepError(f"mesh must be a nova.parallel.Mesh, got {type(mesh).__name__}")
    if is_torch_plan(plan):
        from nova.parallel.torch_styles import check_heads, torch_plan
        plan = torch_plan(model, mesh, plan)
        check_heads(model, plan, mesh)
    if not isinstance(plan, ParallelPlan):
        raise TrainStepError(f"plan must be a nova.parallel.ParallelPlan or a dict of torch "
                             f"ParallelStyles, got {type(plan).__name__}")
    if getattr(plan, "relayouts", None) and not relayouts:
        raise TrainStepError(
            f"the plan stores {sorted(plan.relayouts)} re-laid-out (a fused projection split "
            f"per head); training under such a plan is supported by compile_train_step only: "
            f"split the projection's parts with ColwiseParallel on separate modules")
    return plan


def step_plan(model: torch.nn.Module, mesh: Any, plan: Any):
    """``compile_train_step``'s plan: :func:`resolve_plan`, re-laid-out
    states allowed (:func:`stored_layouts`), and a tied weight placed under
    its first name only, the one the step knows it by (GPT-2's
    ``lm_head.weight`` is ``transformer.wte.weight``; a torch-style plan
    places both, alike)."""
    import dataclasses

    plan = resolve_plan(model, mesh, plan, relayouts=True)
    first = {id(p): name for name, p in model.named_parameters()}
    later = {name for name, p in model.named_parameters(remove_duplicate=False)
             if first[id(p)] != name}
    if not later & set(plan.placements):
        return plan
    return dataclasses.replace(plan, placements={name: placed for name, placed
                                                 in plan.placements.items()
                                                 if name not in later})


class StoredLayouts:
    """The parameters a plan stores re-laid-out, by state name: each a
    :class:`~nova.parallel.rewrites.Relayout` and the chips it groups for
    (those of the mesh axes that split the re-laid-out dimension).
    ``to_device`` / ``to_host`` convert a tensor of that name (a parameter,
    a gradient, an optimizer state tensor) between the model's layout and
    the stored one; other names pass through unchanged."""

    def __init__(self, layouts: Mapping[str, tuple[Any, int]] | None = None) -> None:
        self.layouts = dict(layouts or {})

    def __bool__(self) -> bool:
        return bool(self.layouts)

    def __contains__(self, name: str) -> bool:
        return name in self.layouts

    def to_device(self, name: str, array: np.ndarray) -> np.ndarray:
        """The stored tensor for the model's ``array`` named ``name``."""
        if name not in self.layouts:
            return array
        layout, chips = self.layouts[name]
        return layout.apply(torch.from_numpy(np.ascontiguousarray(array)), chips).numpy()

    def to_host(self, name: str, array: np.ndarray) -> np.ndarray:
        """The model's tensor for the stored ``array`` named ``name``."""
        if name not in self.layouts:
            return array
        layout, chips = self.layouts[name]
        return layout.undo(torch.from_numpy(np.ascontiguousarray(array)), chips).numpy()


def stored_layouts(plan: Any, mesh: Any) -> StoredLayouts:
    """The :class:`StoredLayouts` of a resolved ``plan`` on ``mesh`` (none
    for a plan without ``relayouts``)."""
    from nova.runtime.mesh import Shard

    result = {}
    for name, layout in dict(getattr(plan, "relayouts", None) or {}).items():
        chips = 1  # over the axes that split the re-laid-out dimension
        for axis, placement in plan.of(name).items():
            if isinstance(placement, Shard) and placement.dim == layout.dim:
                chips *= mesh.shape[mesh.axis(axis)]
        result[name] = (layout, chips)
    return StoredLayouts(result)


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
