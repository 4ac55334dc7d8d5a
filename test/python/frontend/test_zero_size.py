"""Programs with tensors without elements (nova.frontend.zero_size) compile and
return eager's results: shapes, dtypes and values."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn
from torch.utils import _pytree as pytree

import nova
from nova.frontend.errors import NovaZeroSizeError
from nova.runtime.binding import CallBinding, ProgramInputError


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _same(fn, *args):
    want = fn(*args)
    program = nova.compile(fn, *args)
    got = program(*args)
    want, want_spec = pytree.tree_flatten(want)
    got, got_spec = pytree.tree_flatten(got)
    assert got_spec == want_spec
    for g, w in zip(got, want):
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5, equal_nan=True)
    return program


def _ints(*shape):
    return torch.zeros(*shape, dtype=torch.int64)


CASES = {
    # Empty results: known on the host, computed by nobody.
    "acos_of_1x0x3": (torch.acos, (torch.rand(1, 0, 3),)),
    "bitwise_not_int": (torch.bitwise_not, (_ints(1, 0),)),
    "mm_m0": (torch.mm, (torch.randn(0, 4), torch.randn(4, 3))),
    "tile_by_0": (lambda x: x.tile((0, 2)), (torch.randn(2, 3),)),
    "roll_empty": (lambda x: torch.roll(x, 1), (torch.randn(0, 3),)),
    "eye_0": (lambda x: (x * 2, torch.eye(0)), (torch.randn(2),)),
    "arange_empty": (lambda x: (torch.arange(0), x + torch.arange(0).sum()), (torch.randn(2),)),
    "cummax_and_sort_empty": (lambda x: (torch.cummax(x, 1), torch.sort(x, 1)),
                              (torch.randn(2, 0),)),
    # Reductions over nothing: their identity (NaN for mean/var/std, as eager).
    "sum_mean_over_empty_dim": (lambda x: (x.sum(1), x.mean(1)), (torch.randn(2, 0, 3),)),
    "var_std_var_mean": (lambda x: (x.var(1), x.std(1), torch.var_mean(x, 1)),
                         (torch.randn(2, 0),)),
    "prod_any_all_norm": (lambda x: (x.prod(1), (x > 0).any(1), (x > 0).all(1),
                                     torch.linalg.vector_norm(x, dim=1)),
                          (torch.randn(3, 0),)),
    "mse_loss_of_nothing": (nn.functional.mse_loss, (torch.randn(0, 3), torch.randn(0, 3))),
    # Products without terms: zeros (+ bias).
    "mm_k0": (torch.mm, (torch.randn(2, 0), torch.randn(0, 3))),
    "bmm_k0": (torch.bmm, (torch.randn(2, 3, 0), torch.randn(2, 0, 4))),
    "linear_k0": (nn.functional.linear, (torch.randn(2, 0), torch.randn(3, 0), torch.randn(3))),
    "addmm_k0_beta": (lambda b, x, w: torch.addmm(b, x, w, beta=2.0),
                      (torch.randn(3), torch.randn(2, 0), torch.randn(0, 3))),
    "int_mm_k0": (torch.mm, (_ints(2, 0), _ints(0, 3))),
    # Mixed operands.
    "cat_with_an_empty_piece": (lambda x, y: torch.cat([x, y], 0),
                                (torch.randn(0, 3), torch.randn(2, 3))),
    "cat_keeps_eagers_dtype": (lambda x, y: torch.cat([x, y], 0),
                               (torch.randn(0, 3), torch.ones(2, 3, dtype=torch.int64))),
    "split_with_an_empty_piece": (lambda x: torch.split_with_sizes(x, [0, 3, 2]),
                                  (torch.randn(5, 2),)),
    "index_put_nothing": (lambda x, i, v: x.index_put((i,), v),
                          (torch.randn(3, 2), _ints(0), torch.randn(0, 2))),
    "scatter_add_nothing": (lambda x, i, s: x.scatter_add(0, i, s),
                            (torch.randn(3, 2), _ints(0, 2), torch.randn(0, 2))),
    "pad_of_empty": (lambda x: nn.functional.pad(x, (1, 1), value=3.0), (torch.randn(2, 0),)),
    "new_full_of_empty": (lambda x: x.new_full((2, 3), 2.0), (torch.randn(0, 3),)),
    "f64_boundary": (lambda x, y: (x * 2, y.sum(0)),
                     (torch.randn(0, 2, dtype=torch.float64),
                      torch.randn(0, 3, dtype=torch.float64))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_eager(name):
    fn, args = CASES[name]
    _same(fn, *args)


class _TwoPaths(nn.Module):
    """A real path next to an empty one (an empty batch of extra tokens)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 3)
        self.register_buffer("nothing", torch.zeros(0, 3))

    def forward(self, x, extra):
        real = torch.relu(self.proj(x))
        more = self.proj(extra)  # [0, 3]
        rows = torch.cat([self.nothing, real, more], 0)
        return rows.sum(0), more, extra.mean(0)


def test_a_model_mixing_empty_and_real_paths():
    model = _TwoPaths().eval()
    x, extra = torch.randn(5, 4), torch.randn(0, 4)
    program = _same(model, x, extra)
    # Only x reaches the accelerator (the buffer, extra and `more` do not).
    assert len(program.input_entries) == 1
    assert [leaf.kind for leaf in program.binding.outputs] == ["tensor", "empty", "tensor"]


def test_a_program_whose_results_are_all_empty_runs_no_accelerator_io():
    program = _same(lambda x: (x * 2, x.t()), torch.randn(0, 5))
    assert program.input_entries == [] and program.output_entries == []


def test_an_empty_input_is_still_checked():
    program = nova.compile(lambda x, y: (x + 1, y * 2), torch.randn(3), torch.randn(0, 2))
    with pytest.raises(ProgramInputError, match=r"float32 tensor of shape \[0, 2\]"):
        program(torch.randn(3), torch.randn(0, 3))
    with pytest.raises(ProgramInputError, match="float32"):
        program(torch.randn(3), torch.zeros(0, 2, dtype=torch.int64))


def test_empty_leaves_survive_saving_the_binding():
    binding = nova.compile(lambda x, y: (x + 1, y * 2), torch.randn(3),
                           torch.randn(0, 2)).binding
    again = CallBinding.from_json(binding.to_json())
    assert again == binding
    assert again.outputs[1].shape == (0, 2) and again.outputs[1].dtype == "float32"


class _BucketSums(nn.Module):
    def forward(self, values, offsets, table):
        return nn.functional.embedding_bag(values, table, offsets, mode="sum")


def test_an_op_nova_cannot_fill_is_a_clear_error_at_the_models_line():
    # Bags over no indices: embedding_bag has no zero-size rule.
    with pytest.raises(NovaZeroSizeError, match=r"_embedding_bag.* reads a zero-size "
                                                r"tensor of shape \[0\]") as info:
        nova.compile(_BucketSums(), _ints(0), torch.tensor([0, 0]), torch.randn(5, 2))
    assert info.value.frame.line == inspect.getsourcelines(_BucketSums.forward)[1] + 1


@pytest.mark.parametrize("shifts,dims", [(0, 0), (5, 1), ((1, 2), (0, 2)), (-7, 2), (3, ())],
                         ids=str)
def test_roll_by_a_whole_turn_makes_no_empty_slice(shifts, dims):
    # torch-mlir's roll would slice off a 0x5x5 piece for a shift of 0 or 5.
    _same(lambda x: torch.roll(x, shifts, dims), torch.randn(5, 5, 5))


def test_an_uninitialized_tensor_like_an_empty_one_is_filled_not_refused():
    # new_empty of an empty x, and empty_like of a sum over nothing: no defined contents.
    fn = lambda x: x.new_empty((2, 3)).fill_(4.0) + 1  # noqa: E731
    _same(fn, torch.randn(0, 3))
    _same(lambda x: torch.empty_like(x.sum(0, keepdim=True)).fill_(4.0), torch.randn(0, 3))
