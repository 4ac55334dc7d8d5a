"""Frontend reproducers of issue 17, finding 6: each bad or unusual model gets a
clear Nova error naming the op or the input and the model's line, or just works."""

import inspect

import pytest
import torch
from torch import nn

import nova
from nova.compiler.errors import NovaError, NovaModelCompileError, NovaUnsupportedOpError
from nova.frontend.errors import NovaDataDependentError, NovaExportError
from nova.parallel import PipelineError
from nova.parallel.pipeline import compile_pipeline


class Affine(nn.Module):
    def forward(self, x):
        return x * 2 + 1


class ScaleBy(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x, s):
        return self.linear(x) * s


@pytest.mark.parametrize("value", [torch.tensor(3.0), torch.tensor(-1.5)])
def test_a_0d_input_compiles_and_is_called(value):
    program = nova.compile(Affine(), value)
    got = program(value)
    assert got.shape == ()
    torch.testing.assert_close(got, Affine()(value))


def test_a_0d_input_beside_a_tensor_and_a_parameter():
    model, x, s = ScaleBy(), torch.randn(3, 4), torch.tensor(0.5)
    torch.testing.assert_close(nova.compile(model, x, s)(x, s), model(x, s), rtol=1e-4, atol=1e-5)


def test_a_0d_integer_input():
    class AddInt(nn.Module):
        def forward(self, x, k):
            return x + k

    x, k = torch.tensor([1, 2, 3]), torch.tensor(4)
    assert torch.equal(nova.compile(AddInt(), x, k)(x, k), x + k)


@pytest.mark.parametrize("microbatches", [0, -2, 1.5, True])
def test_bad_microbatches_are_a_clear_error(microbatches):
    with pytest.raises(PipelineError, match=f"microbatches must be a positive integer, got {microbatches!r}"):
        compile_pipeline([nn.Linear(4, 4), nn.Linear(4, 4)], torch.randn(4, 4),
                         microbatches=microbatches)


def test_a_pipeline_input_without_a_batch_dimension_is_a_clear_error():
    with pytest.raises(PipelineError, match="batch dimension"):
        compile_pipeline([nn.Linear(4, 4), nn.Linear(4, 4)], torch.tensor(1.0), microbatches=1)


class DataDependent(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # the line the error must show
            return x + 1
        return x - 1


def test_data_dependent_control_flow_is_a_frontend_error_at_the_models_line():
    with pytest.raises(NovaDataDependentError) as info:
        nova.compile(DataDependent(), torch.randn(4))
    message = str(info.value)
    assert "control flow depends on the values of a tensor" in message
    assert "torch.where" in message
    line = inspect.getsourcelines(DataDependent.forward)[1] + 1
    assert info.value.frame.line == line and info.value.frame.file == __file__
    assert "if x.sum() > 0:" in message
    assert isinstance(info.value, NovaExportError) and isinstance(info.value, NovaError)


def double_plus(x):
    return x * 2 + torch.tanh(x)


def test_a_function_is_compiled_like_a_module():
    x = torch.randn(3, 5)
    torch.testing.assert_close(nova.compile(double_plus, x)(x), double_plus(x),
                               rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(nova.compile(lambda a, b: a @ b, x, x.T)(x, x.T), x @ x.T,
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("model", [3, "model", None])
def test_something_that_is_no_module_nor_function_is_a_clear_error(model):
    with pytest.raises(NovaExportError, match="takes a torch.nn.Module or a function, got"):
        nova.compile(model, torch.randn(2))


class Bessel(nn.Module):
    def forward(self, x):
        return torch.special.bessel_j0(x) * 2  # the line the error must show


def test_an_op_torch_mlir_cannot_lower_is_named_at_the_models_line():
    """torch-mlir has no form of bessel_j0 (it stays a generic torch.operator):
    the error names the ATen op, not torch.operator."""
    with pytest.raises(NovaUnsupportedOpError) as info:
        nova.compile(Bessel(), torch.randn(8))
    message = str(info.value)
    assert "'torch.aten.special_bessel_j0'" in message and "torch-mlir cannot lower" in message
    assert info.value.op_name == "torch.aten.special_bessel_j0"
    assert info.value.frame.line == inspect.getsourcelines(Bessel.forward)[1] + 1
    assert "torch.special.bessel_j0(x) * 2" in message


class BesselAfterLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = torch.relu(self.lin(x)).permute(1, 0)
        return torch.special.bessel_j0(y * 3.0)  # the line the error must show


def test_the_op_torch_mlir_failed_on_is_named_not_the_models_first_op():
    """A failed conversion leaves every op of the function in the torch
    dialect: the error names the op the conversion's diagnostic names, at its
    line, not the model's first op (it named ``torch.aten.permute`` at the
    linear's line)."""
    with pytest.raises(NovaUnsupportedOpError) as info:
        nova.compile(BesselAfterLayers(), torch.randn(4, 8))
    assert info.value.op_name == "torch.aten.special_bessel_j0"
    assert info.value.frame.line == inspect.getsourcelines(BesselAfterLayers.forward)[1] + 2
    assert "bessel_j0(y * 3.0)" in str(info.value)


class FFT(nn.Module):
    def forward(self, x):
        return torch.fft.fft(x).real  # the line the error must show


def test_a_complex_op_nova_has_no_rule_for_is_named_at_the_models_line():
    """Complex tensors become pairs of real ones (nova.frontend.complex_pairs);
    the FFT has no rule there: the error names it and the model's line."""
    with pytest.raises(NovaUnsupportedOpError) as info:
        nova.compile(FFT(), torch.randn(8))
    message = str(info.value)
    assert "fft_fft" in message
    assert info.value.frame.line == inspect.getsourcelines(FFT.forward)[1] + 1
    assert "torch.fft.fft(x).real" in message


def test_an_op_nova_cannot_lower_is_named_at_the_models_line():
    class Windows(nn.Module):
        def forward(self, x):
            return x.unfold(-1, 257, 257).flatten(-2)  # a window read Nova does not tile

    with pytest.raises(NovaModelCompileError) as info:
        nova.compile(Windows(), torch.randn(514))
    assert "not a projected permutation" in str(info.value)
    assert info.value.frame.line == inspect.getsourcelines(Windows.forward)[1] + 1


class EmptyBatchMatmul(nn.Module):
    def forward(self, x, w):
        rows = x[5:]  # no rows left: the line the error must show
        return torch.matmul(rows, w)


def test_a_zero_size_batched_matmul_never_reaches_torch_mlir():
    # torch-mlir's lowering of this 0x3x4 batched matmul dies of SIGFPE (the fuzzer's
    # crash); the zero-size pass leaves it no empty tensor: the result is empty,
    # returned by the host as eager's.
    x, w = torch.randn(5, 3, 4), torch.randn(1, 4, 4)
    out = nova.compile(EmptyBatchMatmul(), x, w)(x, w)
    assert out.shape == EmptyBatchMatmul()(x, w).shape == (0, 3, 4)


def test_a_zero_size_input_compiles():
    x, w = torch.randn(7, 3, 4), torch.randn(4, 0)
    out = nova.compile(EmptyBatchMatmul(), x, w)(x, w)
    assert out.shape == EmptyBatchMatmul()(x, w).shape == (2, 3, 0)
