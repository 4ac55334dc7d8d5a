"""A plan's stand-in modules inside pipeline stages while their bodies are
traced, as ``compile_train_step`` traces a model under a plan
(:func:`nova.training.tensor_parallel.traced_with_plan`): an ``nn.Embedding``
whose table the plan splits is looked up as ``one_hot(ids) @ weight`` (which
partitioning splits exactly and ``nova-localize-one-hot-lookups`` turns into
each chip's masked lookup), and ``F.cross_entropy`` is the dense form that
keeps a split vocabulary split (:mod:`nova.training.parallel_loss`). Without
them, the last stage's loss gathers the whole logits and a lookup of a split
table is not partitioned exactly.

The stages hold the model's modules themselves (not copies), so each
rewritten module is swapped wherever a stage holds it, and put back on exit.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Sequence

from torch import nn

from nova.parallel.errors import PipelineError

__all__ = ["stages_with_plan"]


@contextlib.contextmanager
def stages_with_plan(model: nn.Module | None, stages: Sequence[nn.Module],
                     plan) -> Iterator[None]:
    """While the stages' bodies are traced: ``stages`` with ``plan``'s
    stand-ins for ``model``'s modules (nothing without a plan)."""
    if plan is None or model is None:
        yield
        return
    from nova.parallel.rewrites import stand_in
    from nova.parallel.split_tables import embedding_rewrites
    from nova.training.parallel_loss import parallel_cross_entropy

    rewrites = tuple(getattr(plan, "rewrites", ()))
    rewrites += tuple(embedding_rewrites(model, plan, done=rewrites))
    for rewrite in rewrites:
        if rewrite.kind != "one_hot_embedding":
            raise PipelineError(f"{rewrite.module}: the plan rewrites it as "
                                f"{rewrite.kind!r}, which pipeline stages do not support yet")
    swaps = []
    try:
        for rewrite in rewrites:
            original = model.get_submodule(rewrite.module)
            replacement = stand_in(model, rewrite, 1)
            holders = [(parent, name) for stage in stages
                       for parent in stage.modules()
                       for name, child in parent.named_children() if child is original]
            for parent, name in holders:
                swaps.append((parent, name, original))
                setattr(parent, name, replacement)
        with parallel_cross_entropy():
            yield
    finally:
        for parent, name, original in reversed(swaps):
            setattr(parent, name, original)
