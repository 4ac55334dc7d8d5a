"""1-D and 3-D convolutions compiled through 2-D ones
(nova.frontend.decompose_conv), against eager."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import nova

CASES = {
    "conv1d": (lambda: nn.Conv1d(3, 4, 3), (2, 3, 10)),
    "conv1d_strided_padded_dilated_grouped": (
        lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2), (2, 4, 11)),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(3, 2, 3, stride=2), (1, 3, 5)),
    "conv3d": (lambda: nn.Conv3d(2, 3, 2), (1, 2, 4, 4, 4)),
    "conv3d_grouped": (lambda: nn.Conv3d(2, 4, 2, groups=2), (1, 2, 4, 4, 4)),
    "conv3d_depth_strided_padded": (
        lambda: nn.Conv3d(2, 3, (3, 1, 1), stride=(2, 1, 1), padding=(1, 0, 0)), (1, 2, 5, 3, 3)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_convolution_matches_eager(name):
    make, shape = CASES[name]
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(*shape)
    program = nova.compile(model, x)
    torch.testing.assert_close(program(x), model(x), rtol=1e-4, atol=1e-5)
