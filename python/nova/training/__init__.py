"""Training on the simulated chip: one step (forward, loss, backward, clipping,
the optimizer's update) compiled as one program.

    step = nova.compile_train_step(model, loss_fn, optimizer, x, y)
    for x, y in batches:
        loss = step(x, y)
    step.sync_to(model, optimizer)

See docs/training.md.
"""

from nova.training.errors import TrainStepError
from nova.training.train_step import TrainStep, compile_train_step

__all__ = ["TrainStep", "TrainStepError", "compile_train_step"]
