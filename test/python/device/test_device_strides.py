"""Views and results on the nova device have CPU eager's shapes, strides and
storage offsets (a compiled graph traced on them records those), and views share
the base's storage."""
from __future__ import annotations

from typing import Callable

import pytest
import torch

import nova.device  # noqa: F401

CASES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "split_view": lambda x: x.split(4, dim=2)[1].view(2, 8, 2, 2),
    "split_view_transpose": lambda x: x.split(4, dim=2)[1].view(2, 8, 2, 2).transpose(1, 2),
    "split_with_sizes": lambda x: x.split([5, 7], dim=2)[1],
    "chunk": lambda x: x.chunk(3, dim=2)[2],
    "unbind": lambda x: x.unbind(1)[3],
    "narrow": lambda x: x.narrow(2, 3, 5),
    "select": lambda x: x.select(2, 3),
    "slice_step": lambda x: x[:, ::2, 1::3],
    "expand": lambda x: x[:, :1].expand(2, 5, 12),
    "squeeze": lambda x: x[:, :1].squeeze(1),
    "unsqueeze": lambda x: x.transpose(0, 2).unsqueeze(1),
    "flatten": lambda x: x.flatten(0, 1),
    "reshape_view": lambda x: x[:, 2:6].reshape(2, 4, 3, 4),
    "unflatten": lambda x: x.unflatten(2, (3, 4)),
    "diagonal": lambda x: x.diagonal(0, 1, 2),
    "permute": lambda x: x.permute(2, 0, 1),
    "movedim": lambda x: x.movedim(0, -1),
    "mT": lambda x: x.mT,
    "unfold": lambda x: x.unfold(2, 4, 2),
    "view_dtype": lambda x: x.view(torch.int32),
    "reshape_copy": lambda x: x.transpose(1, 2).reshape(2, 96),
    "clone_transposed": lambda x: x.transpose(1, 2).clone(),
    "add_transposed": lambda x: x.transpose(1, 2) + 1,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_strides_match_cpu_eager(name: str) -> None:
    base = torch.arange(2 * 8 * 12, dtype=torch.float32).reshape(2, 8, 12)
    device = base.to("nova")
    cpu, nova = CASES[name](base), CASES[name](device)
    assert (nova.shape, nova.stride(), nova.storage_offset()) == \
        (cpu.shape, cpu.stride(), cpu.storage_offset())
    if cpu._base is base:  # a view on the CPU: a view of the device tensor's storage too
        assert nova.untyped_storage().data_ptr() == device.untyped_storage().data_ptr()
    assert torch.equal(nova.cpu(), cpu)
