"""Accumulating writes of whole rows (``index_add``, ``index_put(...,
accumulate=True)``) in inference programs, against torch eager: they compile
to the DMA's scatter-add (nova-form-scatter), repeated ids add up, an id out of
range faults, and the forms the scatter does not take keep the one-hot matmul.
Inputs are tiny so the file runs in seconds."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import nova
from nova.sim.errors import AssertionFailedError, EngineFaultError

RTOL, ATOL = 1e-4, 1e-5


class Fn(nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _compiled(fn, *args):
    program = nova.compile(Fn(fn), *args, target="nova-t1")
    got = program(*args)
    expected = fn(*args)
    for g, e in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        torch.testing.assert_close(g, e, rtol=RTOL, atol=ATOL)
    return program


def _scatters(program) -> int:
    return program.stages["nova_isa"].count("nova_isa.dma_scatter")


IDS = torch.tensor([3, 0, 3, 7, 1, 3, 9, 0])  # repeated ids must add up


def test_index_put_accumulate_rows_is_a_dma_scatter() -> None:
    torch.manual_seed(0)
    base, values = torch.randn(10, 16), torch.randn(8, 16)
    program = _compiled(lambda b, i, v: torch.index_put(b, (i,), v, accumulate=True),
                        base, IDS, values)
    isa = program.stages["nova_isa"]
    assert _scatters(program) >= 1 and " accumulate on dma" in isa
    assert "nova_isa.matmul" not in isa
    # Other ids, more repeats: the same program.
    ids = torch.tensor([9, 9, 9, 9, 2, 2, 5, 0])
    torch.testing.assert_close(program(base, ids, values),
                               torch.index_put(base, (ids,), values, accumulate=True),
                               rtol=RTOL, atol=ATOL)


def test_index_add_rows_with_alpha() -> None:
    torch.manual_seed(1)
    base, source = torch.randn(12, 8), torch.randn(5, 8)
    ids = torch.tensor([11, 4, 4, 0, 11])
    program = _compiled(lambda b, i, s: (b.index_add(0, i, s), b.index_add(0, i, s, alpha=-0.5)),
                        base, ids, source)
    assert _scatters(program) >= 2


def test_index_add_along_dim_1() -> None:
    torch.manual_seed(2)
    base, source = torch.randn(4, 6), torch.randn(4, 3)
    program = _compiled(lambda b, i, s: b.index_add(1, i, s), base, torch.tensor([5, 0, 5]),
                        source)
    assert _scatters(program) >= 1


def test_an_id_out_of_range_faults() -> None:
    base, values = torch.zeros(10, 4), torch.ones(3, 4)
    program = nova.compile(Fn(lambda b, i, v: torch.index_put(b, (i,), v, accumulate=True)),
                           base, torch.tensor([0, 1, 2]), values, target="nova-t1")
    with pytest.raises((AssertionFailedError, EngineFaultError), match="out of range|outside"):
        program(base, torch.tensor([0, 10, 2]), values)


def test_two_index_tensors_keep_the_one_hot() -> None:
    """Positions from two index tensors are not read out of one iota: the
    one-hot matmul stays (and still adds repeated positions up)."""
    torch.manual_seed(3)
    base, values = torch.randn(4, 5), torch.randn(6)
    rows, cols = torch.tensor([0, 3, 0, 1, 3, 0]), torch.tensor([4, 4, 4, 0, 4, 2])
    program = _compiled(lambda b, r, c, v: torch.index_put(b, (r, c), v, accumulate=True),
                        base, rows, cols, values)
    assert _scatters(program) == 0


def test_rows_in_several_blocks_add_up_across_blocks() -> None:
    """200 rows of 4096 positions (32 KiB each) exceed one block of the
    lowering (an eighth of SRAM): a loop of blocks and a tail, all adding into
    the same table rows."""
    torch.manual_seed(4)
    base, values = torch.randn(64, 4096), torch.randn(200, 4096)
    ids = torch.arange(200) % 7 * 9  # every id repeated in every block
    program = _compiled(lambda b, i, v: torch.index_put(b, (i,), v, accumulate=True),
                        base, ids, values)
    assert _scatters(program) >= 2
