"""Megatron tensor parallelism of an MLP on 2 and 4 simulated chips, through
the upstream shard dialect, against torch eager."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nova.parallel import Mesh, Replicate, Shard, compile_parallel, megatron_mlp_plan
from nova.parallel.annotate import PlanError
from nova.parallel.plan import ParallelPlan
from nova.parallel.shards import local_shard

RTOL, ATOL = 1e-4, 1e-5


class MLP(torch.nn.Module):
    def __init__(self, d: int = 32, h: int = 64) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(d, h)
        self.fc2 = torch.nn.Linear(h, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


@pytest.mark.parametrize("target", ["nova-t1", "nova-t1-ring8"])
@pytest.mark.parametrize("tp", [2, 4])
def test_megatron_mlp_matches_torch(target: str, tp: int) -> None:
    torch.manual_seed(tp)
    model = MLP().eval()
    x = torch.randn(8, 32)
    mesh = Mesh((tp,), ("tp",))
    program = compile_parallel(model, x, mesh=mesh, target=target,
                               plan=megatron_mlp_plan("fc1", "fc2", axis="tp"))
    # One all-reduce, and each chip holds 1/tp of both weights.
    assert program.stages["nova"].count("nova.all_reduce") == 1
    assert [p.shape for p in program.chip_params[0]] == [
        (64 // tp, 32), (64 // tp,), (32, 64 // tp), (32,)]
    with torch.no_grad():
        expected = model(x)
    got = program(x)
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    assert program.report is not None and program.report.time_s > 0


def test_local_shard_blocks_follow_mesh_order() -> None:
    mesh = Mesh((2, 2), ("dp", "tp"))
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    placements = {0: Shard(0), 1: Shard(1)}
    assert local_shard(a, mesh, placements, 1).tolist() == [[2, 3], [6, 7]]
    assert local_shard(a, mesh, placements, 2).tolist() == [[8, 9], [12, 13]]
    assert local_shard(a, mesh, {0: Replicate()}, 3).shape == (4, 4)


def test_mesh_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match="positive"):
        Mesh((0,), ("tp",))
    with pytest.raises(ValueError, match="names"):
        Mesh((2, 2), ("tp",))


def test_plan_naming_unknown_parameter_is_an_error() -> None:
    model = MLP().eval()
    with pytest.raises(PlanError, match="fc3.weight"):
        compile_parallel(model, torch.randn(8, 32), mesh=Mesh((2,), ("tp",)),
                         plan=ParallelPlan({"fc3.weight": {"tp": Shard(0)}}))
