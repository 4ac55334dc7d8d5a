"""A collective runs on its own engine queue and is synchronized by data flow
only: compute that does not read its result proceeds while it moves data."""

from __future__ import annotations

import torch
from torch import nn

from nova.parallel import Mesh, compile_parallel, megatron_mlp_plan

from .traces import any_overlap, engine_spans


class TwoBranches(nn.Module):
    """A row-parallel MLP (ends in an all-reduce) next to an independent,
    replicated projection of the same input."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 64)
        self.side = nn.Linear(64, 256)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))), self.side(x)


def test_all_reduce_overlaps_independent_matmul(tmp_path) -> None:
    torch.manual_seed(0)
    model = TwoBranches().eval()
    x = torch.randn(64, 64)
    program = compile_parallel(model, x, mesh=Mesh((2,), ("tp",)),
                               plan=megatron_mlp_plan("fc1", "fc2", axis="tp"))
    assert program.stages["nova"].count("nova.all_reduce") == 1
    got = program.run(x, trace=True)
    with torch.no_grad():
        expected = model(x)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5)

    path = tmp_path / "trace.json"
    program.write_trace(path)
    collective = engine_spans(path, 0, "collective")
    matrix = engine_spans(path, 0, "matrix")
    assert collective and matrix
    assert any_overlap(matrix, collective), "the matrix engine idles while chip 0's all-reduce runs"
