"""Chip counts and meshes are checked against the target at compile time
(issue 17, finding 5): nova-t1 has 8 chips."""

import pytest
import torch
from torch import nn

import nova
from nova.parallel import ChipCountError, Mesh, data_parallel_plan
from nova.parallel.pipeline import compile_pipeline
from nova.parallel.target_chips import target_chips

X = torch.randn(16, 4)


def test_target_chip_counts_are_read_from_the_target_files():
    assert target_chips("nova-t1") == 8
    assert target_chips("nova-t1-torus16") == 16
    assert target_chips("no-such-target") is None


def test_more_chips_than_the_target_has_is_refused():
    with pytest.raises(ChipCountError, match=r"chips=9 needs 9 chips but target 'nova-t1' has 8; "
                                             r"targets with enough chips: nova-t1-torus16 \(16 chips\), "
                                             r"nova-t1-64 \(64 chips\)") as info:
        nova.compile(nn.Linear(4, 4), X, chips=9)
    assert (info.value.target, info.value.available, info.value.requested) == ("nova-t1", 8, 9)


def test_a_mesh_larger_than_the_target_is_refused():
    with pytest.raises(ChipCountError, match=r"mesh \(16,\) needs 16 chips but target 'nova-t1' has 8"):
        nova.compile(nn.Linear(4, 4), X, mesh=Mesh((16,), ("dp",)), plan=data_parallel_plan("dp"))
    with pytest.raises(ChipCountError, match=r"mesh \(4, 4\) needs 16 chips"):
        nova.compile(nn.Linear(4, 4), X, mesh=Mesh((4, 4), ("dp", "tp")),
                     plan=data_parallel_plan("dp"))


def test_more_pipeline_stages_than_chips_is_refused():
    with pytest.raises(ChipCountError, match="a pipeline of 9 stages needs 9 chips"):
        compile_pipeline([nn.Linear(4, 4) for _ in range(9)], X, microbatches=2)


def test_the_target_chip_count_itself_compiles_and_runs():
    model = nn.Linear(4, 4)
    program = nova.compile(model, X, chips=8)
    torch.testing.assert_close(program(X), model(X), rtol=1e-4, atol=1e-5)


def test_a_16_chip_mesh_compiles_on_a_16_chip_target():
    model = nn.Linear(4, 4)
    program = nova.compile(model, X, mesh=Mesh((16,), ("dp",)), plan=data_parallel_plan("dp"),
                           target="nova-t1-torus16")
    torch.testing.assert_close(program(X), model(X), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("chips", [-1, "2", 1.5, True])
def test_a_chip_count_that_is_no_count_is_a_nova_error(chips):
    from nova.parallel import ParallelError

    with pytest.raises(ParallelError, match=f"chips must be a non-negative integer, got {chips!r}"):
        nova.compile(nn.Linear(4, 4), X, chips=chips)
