"""A partitioned program: one SPMD binary plus every chip's parameter shards."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from nova.runtime.binary import load_binary
from nova.runtime.program import ProgramInputError, _to_numpy


class ParallelProgram:
    """``program(*inputs)`` runs the SPMD binary on every chip of the mesh,
    each with its own parameter shards; inputs are replicated. Returns chip
    0's outputs (the plan replicates outputs)."""

    def __init__(self, binary: bytes, chip_params: Sequence[Sequence[np.ndarray]],
                 stages: dict | None = None) -> None:
        self.binary_bytes = bytes(binary)
        self.binary = load_binary(self.binary_bytes)
        self.chip_params = [[np.ascontiguousarray(p) for p in params] for params in chip_params]
        self.stages = dict(stages or {})
        count = len(self.chip_params[0]) if self.chip_params else 0
        inputs = sorted(self.binary.inputs, key=lambda e: e.index)
        self.input_entries = inputs[count:]
        self.output_entries = sorted(self.binary.outputs, key=lambda e: e.index)
        self.report = None

    def run(self, *args: Any) -> list[Any]:
        import torch

        from nova.sim import Simulator

        if len(args) != len(self.input_entries):
            raise ProgramInputError(
                f"the program takes {len(self.input_entries)} input(s), got {len(args)}")
        feed = {e.index: _to_numpy(a) for e, a in zip(self.input_entries, args)}
        per_chip = {chip: dict(enumerate(params)) for chip, params in enumerate(self.chip_params)}
        outputs, report = Simulator(self.binary).run(feed, per_chip=per_chip)
        self.report = report
        return [torch.from_numpy(np.array(outputs.get(e.index, outputs.get(e.name))))
                for e in self.output_entries]

    def __call__(self, *args: Any) -> Any:
        results = self.run(*args)
        return results[0] if len(results) == 1 else tuple(results)
