"""The frontend's reading of an exported program: state arguments (lifted
constants and non-persistent buffers included), pytree inputs and outputs,
baked Python scalars, in-place input updates, and no eager run on the host."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from nova.frontend import NovaExportError, TensorSpec, import_model
from nova.runtime.binding import ProgramInputError


class WithConstants(nn.Module):
    """A non-persistent buffer and a tensor constant created in forward."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((4,), 2.0), persistent=False)

    def forward(self, x):
        return self.lin(x) * self.scale + torch.tensor([1.0, 2.0, 3.0, 4.0])


def test_lifted_constants_and_non_persistent_buffers_are_arguments():
    imported = import_model(WithConstants(), torch.randn(2, 4))
    names = [p.name for p in imported.params]
    assert names[:3] == ["lin.weight", "lin.bias", "scale"]
    assert len(names) == 4 and "lifted_tensor" in names[3]
    assert imported.params[3] == TensorSpec(names[3], (4,), "float32")
    torch.testing.assert_close(imported.param_values[3], torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert imported.inputs == (TensorSpec("input0", (2, 4), "float32"),)
    assert imported.outputs == (TensorSpec("output0", (2, 4), "float32"),)


def test_the_model_only_sees_fake_tensors():
    seen = []

    class Spy(nn.Module):
        def forward(self, x):
            seen.append(type(x))
            return x * 2

    import_model(Spy(), torch.randn(3))
    assert seen and torch.Tensor not in seen


class KeywordsAndDict(nn.Module):
    def forward(self, x, *, mask=None, scale: float = 1.0, steps: int = 1):
        y = x * scale if mask is None else x * mask * scale
        return {"y": y, "nothing": None, "steps": steps}


def test_keyword_inputs_scalars_and_dict_outputs():
    x, mask = torch.randn(2, 3), torch.ones(2, 3, dtype=torch.bool)
    imported = import_model(KeywordsAndDict(), x, mask=mask, scale=0.5, steps=3)
    assert imported.inputs == (TensorSpec("input0", (2, 3), "float32"),
                               TensorSpec("mask", (2, 3), "bool"))
    assert imported.outputs == (TensorSpec("y", (2, 3), "float32"),)
    binding = imported.binding
    leaves = binding.flatten((x,), {"steps": 3, "mask": mask, "scale": 0.5})
    assert binding.tensors_of(leaves) == [x, mask]
    y = torch.zeros(2, 3)
    assert binding.restore([y], leaves) == {"y": y, "nothing": None, "steps": 3}


def test_a_baked_scalar_must_keep_its_value():
    x = torch.randn(2, 3)
    binding = import_model(KeywordsAndDict(), x, scale=0.5).binding
    with pytest.raises(ProgramInputError, match=r"scale was 0.5 when the model was exported"):
        binding.flatten((x,), {"scale": 2.0})
    with pytest.raises(ProgramInputError,
                       match=r"takes 1 input\(s\) and keyword argument\(s\) scale, got 2"):
        binding.flatten((x, x), {"scale": 0.5})


class UpdatesInput(nn.Module):
    def forward(self, x, state):
        state.copy_(state + x)
        state[0] = 0.0
        return x * 2


def test_in_place_updates_are_written_back_not_returned():
    x, state = torch.randn(3, 4), torch.randn(3, 4)
    imported = import_model(UpdatesInput(), x, state.clone())
    assert [o.name for o in imported.outputs] == ["output0", "input1.mutated"]
    binding = imported.binding
    assert binding.mutations == ((1, 1),)
    leaves = binding.flatten((x, state), {})
    new_state = torch.full((3, 4), 7.0)
    out = binding.restore([x * 2, new_state], leaves)
    torch.testing.assert_close(out, x * 2)
    torch.testing.assert_close(state, new_state)


def test_a_buffer_updated_in_place_is_a_clear_error():
    class Counter(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("count", torch.zeros(1))

        def forward(self, x):
            self.count += 1
            return x + self.count

    with pytest.raises(NovaExportError, match="updates its buffer 'count' in place"):
        import_model(Counter(), torch.randn(2))


def test_integer_bool_and_zero_d_inputs_keep_dtype_and_shape():
    class Mixed(nn.Module):
        def forward(self, ids, keep, s):
            return torch.where(keep, ids.float() * s, 0.0)

    imported = import_model(Mixed(), torch.arange(6).reshape(2, 3),
                            torch.ones(2, 3, dtype=torch.bool), torch.tensor(2.0))
    assert imported.inputs == (TensorSpec("input0", (2, 3), "int64"),
                               TensorSpec("input1", (2, 3), "bool"),
                               TensorSpec("input2", (), "float32"))


def test_nested_inputs_and_tuple_outputs_are_named_by_path():
    class Nested(nn.Module):
        def forward(self, pair, extra):
            a, b = pair
            return a + b, (a * extra["w"],)

    t = torch.randn(2)
    imported = import_model(Nested(), (t, t), {"w": t})
    assert [i.name for i in imported.inputs] == ["input0.0", "input0.1", "input1.w"]
    assert [o.name for o in imported.outputs] == ["output0", "output1.0"]
