"""nova.compile with the model's own call signature: keyword inputs, dict and
ModelOutput results, baked scalars, lifted constants, in-place input updates
and 0-d inputs, run on the simulator against torch eager."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import nova
from nova.runtime.program import ProgramInputError

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)


class KeywordsAndDict(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, *, bias=None, scale: float = 1.0):
        y = self.lin(x) * scale
        if bias is not None:
            y = y + bias
        return {"y": y, "nothing": None, "scale": scale}


def test_keyword_inputs_and_dict_outputs():
    model = KeywordsAndDict().eval()
    x, bias = torch.randn(4, 8), torch.randn(4, 8)
    program = nova.compile(model, x, bias=bias, scale=0.5)
    with torch.no_grad():
        expected = model(x, bias=bias, scale=0.5)
    got = program(x, scale=0.5, bias=bias)  # keywords in any order
    assert set(got) == {"y", "nothing", "scale"}
    assert got["nothing"] is None and got["scale"] == 0.5
    torch.testing.assert_close(got["y"], expected["y"], rtol=RTOL, atol=ATOL)
    with pytest.raises(ProgramInputError, match="scale was 0.5 when the model was exported"):
        program(x, bias=bias, scale=1.0)
    with pytest.raises(ProgramInputError, match=r"input 'bias' must have shape \[4, 8\]"):
        program(x, bias=torch.randn(2, 8), scale=0.5)


class WithConstants(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((4,), 2.0), persistent=False)

    def forward(self, x):
        return self.lin(x) * self.scale + torch.tensor([1.0, 2.0, 3.0, 4.0])


def test_non_persistent_buffers_and_lifted_constants_are_bound():
    model = WithConstants().eval()
    x = torch.randn(2, 4)
    program = nova.compile(model, x)
    assert len(program.params) == 4
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=RTOL, atol=ATOL)


def test_model_output_comes_back_as_its_type(tmp_path):
    outputs = pytest.importorskip("transformers.modeling_outputs")

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, inputs_embeds):
            return outputs.BaseModelOutput(last_hidden_state=torch.tanh(self.lin(inputs_embeds)))

    model = Encoder().eval()
    x = torch.randn(2, 4, 8)
    program = nova.compile(model, inputs_embeds=x)
    with torch.no_grad():
        expected = model(inputs_embeds=x)
    got = program(inputs_embeds=x)
    assert type(got) is outputs.BaseModelOutput
    torch.testing.assert_close(got.last_hidden_state, expected.last_hidden_state,
                               rtol=RTOL, atol=ATOL)
    path = tmp_path / "encoder.novaprog"
    program.save(path)
    loaded = nova.load(path)(inputs_embeds=x)
    assert type(loaded) is outputs.BaseModelOutput
    torch.testing.assert_close(loaded.last_hidden_state, got.last_hidden_state)


class UpdatesInput(nn.Module):
    def forward(self, x, state):
        state.copy_(state * 0.5 + x)
        return x * 2


def test_in_place_update_of_an_input_is_applied_like_torch():
    x = torch.randn(4, 8)
    state = torch.randn(4, 8)
    program = nova.compile(UpdatesInput(), x, state.clone())
    expected_state = state.clone()
    expected = UpdatesInput()(x, expected_state)
    got = program(x, state)
    assert isinstance(got, torch.Tensor)  # not (output, new state)
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(state, expected_state, rtol=RTOL, atol=ATOL)


def test_zero_d_tensor_input():
    class Scale(nn.Module):
        def forward(self, x, s):
            return x * s

    x, s = torch.randn(4, 8), torch.tensor(3.0)
    program = nova.compile(Scale(), x, s)
    torch.testing.assert_close(program(x, s), x * s, rtol=RTOL, atol=ATOL)
