"""A bf16 tensor given to an f32 program is refused, never upcast (issue 17,
finding 6), on every call path: single-chip, multi-chip and pipeline."""

import pytest
import torch
from torch import nn

import nova
from nova.parallel import Mesh, data_parallel_plan
from nova.parallel.pipeline import compile_pipeline
from nova.runtime.binding import ProgramInputError

X = torch.randn(4, 4)


def test_single_chip_refuses_a_bf16_tensor_for_an_f32_input():
    program = nova.compile(nn.Linear(4, 4), X)
    with pytest.raises(ProgramInputError, match=r"input 0 must have dtype float32, got bfloat16"):
        program(X.bfloat16())
    with pytest.raises(ProgramInputError, match=r"must have dtype float32, got float64"):
        program(X.double())


def test_a_keyword_input_is_named():
    class Masked(nn.Module):
        def forward(self, x, mask):
            return x * mask

    program = nova.compile(Masked(), X, mask=torch.ones(4, 4))
    with pytest.raises(ProgramInputError, match=r"input 'mask' must have dtype float32, got bfloat16"):
        program(X, mask=torch.ones(4, 4, dtype=torch.bfloat16))


def test_a_bf16_program_refuses_an_f32_tensor_and_takes_bf16():
    model = nn.Linear(4, 4).to(torch.bfloat16)
    program = nova.compile(model, X.bfloat16())
    with pytest.raises(ProgramInputError, match=r"must have dtype bfloat16, got float32"):
        program(X)
    got = program(X.bfloat16())
    assert got.dtype == torch.bfloat16


def test_multi_chip_refuses_a_bf16_tensor_for_an_f32_input():
    program = nova.compile(nn.Linear(4, 4), X, mesh=Mesh((2,), ("dp",)),
                           plan=data_parallel_plan("dp"))
    with pytest.raises(ProgramInputError, match=r"input 0 must have dtype float32, got bfloat16"):
        program(X.bfloat16())


def test_multi_chip_bf16_program_runs_and_returns_bf16():
    model = nn.Linear(4, 4).to(torch.bfloat16)
    program = nova.compile(model, X.bfloat16(), mesh=Mesh((2,), ("dp",)),
                           plan=data_parallel_plan("dp"))
    got = program(X.bfloat16())
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), model(X.bfloat16()).float(), rtol=2e-2, atol=2e-2)


def test_pipeline_checks_its_input():
    stages = [nn.Linear(4, 4), nn.Linear(4, 4)]
    program = compile_pipeline(stages, X, microbatches=2)
    with pytest.raises(ProgramInputError, match=r"input 0 must have dtype float32, got bfloat16"):
        program(X.bfloat16())
    with pytest.raises(ProgramInputError, match=r"must have shape \[4, 4\] \(2 microbatches of \[2, 4\]\), got \[6, 4\]"):
        program(torch.randn(6, 4))
    torch.testing.assert_close(program(X), stages[1](stages[0](X)), rtol=1e-4, atol=1e-5)


def test_an_input_of_another_structure_is_named():
    program = nova.compile(nn.Linear(4, 4), X)
    with pytest.raises(ProgramInputError, match="input 0 was a tensor at export, got a list"):
        program(X.tolist())
