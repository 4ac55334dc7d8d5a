"""A convolution's training step: the weight gradient is a convolution whose
"kernel" is the output gradient (H x W taps). nova-decompose-conv loops over
taps instead of unrolling them, so the program (and its compile time) stays
the size of the model, and the steps match torch."""

import copy

import pytest
import torch

import nova


# Stride 2: torch-mlir gives the weight gradient as a grouped convolution
# (the batch as its groups) with a 5-D result, whose layout change copies a
# strided 5-D view (collapsed to the tile rank).
@pytest.mark.parametrize("hw,stride", [(32, 1), (16, 2)])
def test_conv_weight_gradient_stays_small_and_matches_torch(tmp_path, hw: int, stride: int) -> None:
    torch.manual_seed(0)
    out = hw // stride
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, stride=stride), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(8 * out * out, 4))
    ref = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    x = torch.randn(2, 3, hw, hw)
    y = torch.tensor([1, 3])
    step = nova.compile_train_step(model, torch.nn.functional.cross_entropy, opt, x, y,
                                   dump_dir=tmp_path)
    # 32 x 32 taps of the weight gradient would be 2 x 1024 unrolled matmuls.
    tiled = (tmp_path / "1-nova.mlir").read_text()
    assert tiled.count("nova.matmul") < 64
    for _ in range(3):
        loss = step(x, y)
        ref_opt.zero_grad()
        ref_loss = torch.nn.functional.cross_entropy(ref(x), y)
        ref_loss.backward()
        ref_opt.step()
        torch.testing.assert_close(loss, ref_loss.detach(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("groups,stride", [(2, 1), (2, 2), (4, 1), (4, 2)])
def test_grouped_conv_forward_matches_torch(groups: int, stride: int) -> None:
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(4, 8, 3, padding=1, groups=groups, stride=stride)
    x = torch.randn(2, 4, 10, 10)
    program = nova.compile(conv, x)
    torch.testing.assert_close(program(x), conv(x).detach(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("pool", [torch.nn.MaxPool2d(2), torch.nn.MaxPool2d(3, stride=2, padding=1),
                                  torch.nn.AvgPool2d(2), torch.nn.AvgPool2d(3, stride=1, padding=1)],
                         ids=["max2", "max3s2p1", "avg2", "avg3p1"])
def test_pooling_forward_matches_torch(pool: torch.nn.Module) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), pool)
    x = torch.randn(2, 3, 8, 8)
    program = nova.compile(model, x)
    torch.testing.assert_close(program(x), model(x).detach(), rtol=1e-4, atol=1e-5)
