"""Training on the simulated chip: one step (forward, loss, backward, clipping,
the optimizer's update) compiled as one program.

    step = nova.compile_train_step(model, loss_fn, optimizer, x, y)
    for x, y in batches:
        loss = step(x, y)
    step.sync_to(model, optimizer)

Pipeline parallel: ``compile_pipeline_train_step`` (1F1B / GPipe over chips).
See docs/training.md.
"""

from nova.training.errors import TrainStepError
from nova.training.train_step import TrainStep, compile_train_step
from nova.training.pipeline_train import PipelineTrainStep, compile_pipeline_train_step, gpt_stages

__all__ = ["PipelineTrainStep", "TrainStep", "TrainStepError", "compile_pipeline_train_step",
           "compile_train_step", "gpt_stages"]
