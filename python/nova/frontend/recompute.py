"""Activation recomputation in a traced training step.

A block run under ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``
keeps only its inputs for the backward and runs its forward again there. The
trace records both runs, but they are the same ops on the same values, and
torch-mlir's and Nova's CSE would merge them back into one (the activations
saved after all). So while a step is traced, the recomputation reads its
floating-point and integer inputs through ``x * one``, where ``one`` is a
program input that holds 1 (exact for every value, and not a constant any
pass could fold): the recomputed ops then differ from the forward's and stay.

Dropout inside a recomputed block draws the same masks as in the forward: the
recomputation replays the random stream from where the block's forward began.

Blocks come from the model's own ``checkpoint`` calls (Hugging Face's
``gradient_checkpointing_enable()``; a reentrant checkpoint is recomputed the
non-reentrant way, as ``torch.autograd.grad`` needs) or from module names given to
``compile_train_step(..., recompute=[...])``, whose forwards are wrapped in
``checkpoint`` for the trace. This relies on torch's
``torch.utils.checkpoint._checkpoint_without_reentrant_generator`` (the
function that sets up the recomputation) and ``CheckpointFunction``, both
replaced for the trace only.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

import torch
import torch.utils.checkpoint as checkpoint_module

from nova.frontend.dropout import current_stream, random_stream
from nova.frontend.errors import NovaExportError


class Recompute:
    """The trace's ``one`` input and whether a recomputation used it."""

    def __init__(self, one: torch.Tensor) -> None:
        self.one = one
        self.used = False

    def barrier(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor) and (value.is_floating_point() or
                                                 value.dtype in _INTEGERS):
            self.used = True
            # Outside autograd: the product must save nothing, or the saved
            # tensors of the recomputation would not line up with the forward's.
            with torch.no_grad():
                out = value * self.one.to(value.dtype)
            return out.requires_grad_(value.requires_grad)
        return value


_INTEGERS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


@contextlib.contextmanager
def recomputation(model: torch.nn.Module, names: Sequence[str],
                  recompute: Recompute | None) -> Iterator[None]:
    """While tracing: ``names``' forwards run under checkpoint, and every
    non-reentrant checkpoint recomputes through ``recompute``'s barrier."""
    if recompute is None:
        yield
        return
    original = checkpoint_module._checkpoint_without_reentrant_generator

    def generator(fn, *options_and_args, **kwargs):
        stream = current_stream()
        start = None if stream is None else stream.offset

        def again(*inputs, **keywords):
            inputs = [recompute.barrier(v) for v in inputs]
            keywords = {k: recompute.barrier(v) for k, v in keywords.items()}
            if stream is None:
                return fn(*inputs, **keywords)
            resume, stream.offset = stream.offset, start
            try:
                with random_stream(stream):
                    return fn(*inputs, **keywords)
            finally:
                stream.offset = resume

        return original(again, *options_and_args, **kwargs)

    reentrant = checkpoint_module.CheckpointFunction
    wrapped = []
    try:
        checkpoint_module._checkpoint_without_reentrant_generator = generator
        # A reentrant checkpoint runs its own backward, which torch.autograd.grad
        # (the trace) does not allow: it is recomputed the non-reentrant way.
        checkpoint_module.CheckpointFunction = _NonReentrant
        for name in names:
            try:
                module = model.get_submodule(name)
            except AttributeError:
                raise NovaExportError(f"recompute: the model has no submodule {name!r}") from None
            forward = module.forward
            module.forward = _checkpointed(forward)
            wrapped.append(module)
        yield
    finally:
        checkpoint_module._checkpoint_without_reentrant_generator = original
        checkpoint_module.CheckpointFunction = reentrant
        for module in wrapped:
            del module.forward  # the class's forward again


class _NonReentrant:
    """Stands in for ``CheckpointFunction`` (``checkpoint(use_reentrant=True)``)."""

    @staticmethod
    def apply(function, preserve_rng_state, *args):
        return checkpoint_module.checkpoint(function, *args, use_reentrant=False,
                                            preserve_rng_state=preserve_rng_state)


def _checkpointed(forward):
    def run(*args, **kwargs):
        return checkpoint_module.checkpoint(forward, *args, use_reentrant=False, **kwargs)
    return run
