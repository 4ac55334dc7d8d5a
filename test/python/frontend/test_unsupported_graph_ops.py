"""Random ops in an inference program (dropout in training mode, torch.rand,
sdpa's dropout_p) and tensors of data-dependent shape (nonzero, x[mask]) are
named errors at the model's line."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import nova
from nova.compiler.errors import NovaUnsupportedOpError


class _Dropout(torch.nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.5, training=True) + 1


class _Sdpa(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.25)


class _Noise(torch.nn.Module):
    def forward(self, x):
        return x + torch.rand_like(x)


@pytest.mark.parametrize("model,args", [
    (_Dropout(), (torch.randn(4, 8),)),
    (_Sdpa(), (torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8))),
    (_Noise(), (torch.randn(4, 8),)),
], ids=["dropout", "sdpa_dropout_p", "rand_like"])
def test_random_op_is_a_named_error_at_the_model_line(model, args):
    with pytest.raises(NovaUnsupportedOpError) as caught:
        nova.compile(model, *args)
    message = str(caught.value)
    assert "random op" in message
    assert "test_unsupported_graph_ops.py" in message


def test_dropout_in_eval_mode_compiles():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5)).eval()
    x = torch.randn(4, 8)
    torch.testing.assert_close(nova.compile(model, x)(x), model(x))


class _NonZero(torch.nn.Module):
    def forward(self, x):
        return torch.nonzero(x) * 2


class _MaskSelect(torch.nn.Module):
    def forward(self, x):
        return x[x > 0] + 1


@pytest.mark.parametrize("model", [_NonZero(), _MaskSelect()], ids=["nonzero", "mask_select"])
def test_data_dependent_shape_is_a_named_error_at_the_model_line(model):
    from nova.frontend.errors import NovaDataDependentError

    with pytest.raises(NovaDataDependentError) as caught:
        nova.compile(model, torch.randn(4, 5))
    message = str(caught.value)
    assert "depends on the input's values" in message
    assert "test_unsupported_graph_ops.py" in message


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32])
def test_wide_unsigned_results_are_named_errors(dtype):
    """uint8 and int16 are carried in int32 (test_narrow_ints.py); wider
    unsigned types are refused at the model's line."""
    class Cast(torch.nn.Module):
        def forward(self, x):
            return x.to(dtype)

    with pytest.raises(NovaUnsupportedOpError) as caught:
        nova.compile(Cast(), torch.randn(3, 4))
    message = str(caught.value)
    assert str(dtype).removeprefix("torch.") in message
    assert "test_unsupported_graph_ops.py" in message
