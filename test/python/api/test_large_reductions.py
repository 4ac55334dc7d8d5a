"""Reductions too large for SRAM even one output element at a time (a
gradient norm over an embedding table): nova-tile splits their reduction
loops and each chunk is combined into the carried output. Compared with
torch eager; the tensors are larger than nova-t1's 24 MiB of SRAM."""

import pytest
import torch

import nova


@pytest.mark.parametrize("fn", [
    lambda x: (x * x).sum(),                 # clip_grad_norm_'s sum of squares
    lambda x: x.amax(dim=(0, 1)),            # a full max
    lambda x: x.sum(dim=0),                  # long columns, split rows
], ids=["sum_of_squares", "max", "column_sum"])
def test_reduction_larger_than_sram_matches_torch(fn) -> None:
    torch.manual_seed(0)
    x = torch.randn(4096, 2048)  # 32 MiB
    got = nova.compile(fn, x)(x)
    torch.testing.assert_close(got, fn(x), rtol=1e-4, atol=1e-3)
