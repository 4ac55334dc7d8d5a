"""One program class for one chip and many: ``load_state_dict`` (written for
multi-chip programs, which split each state by their layout) works the same on
a single-chip program from ``nova.compile``."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.errors import ParallelError

RTOL, ATOL = 1e-4, 1e-5


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def test_single_chip_program_loads_a_state_dict() -> None:
    torch.manual_seed(0)
    model, other = MLP().eval(), MLP().eval()
    x = torch.randn(2, 8)
    program = nova.compile(model, x)
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=RTOL, atol=ATOL)
        program.load_state_dict(other.state_dict())  # after a run: written again
        torch.testing.assert_close(program(x), other(x), rtol=RTOL, atol=ATOL)
        program.load_state_dict({"fc2.bias": model.fc2.bias})  # the others kept
        expected = other.fc2(torch.relu(other.fc1(x))) - other.fc2.bias + model.fc2.bias
        torch.testing.assert_close(program(x), expected, rtol=RTOL, atol=ATOL)
    with pytest.raises(ParallelError, match=r"\['fc3.weight'\] are not states"):
        program.load_state_dict({"fc3.weight": other.fc2.weight})
    with pytest.raises(ParallelError, match=r"fc1.weight must be float32\[16, 8\]"):
        program.load_state_dict({"fc1.weight": torch.zeros(8, 16)})
