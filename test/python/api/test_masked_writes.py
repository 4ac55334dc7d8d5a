"""Boolean-mask and mixed index writes without data-dependent shapes
(nova.frontend.masked_lanes, nova.frontend.mask_reads and the index_put
decompositions), against eager: ``x[mask] = v``, ``x[mask] += y[mask]``, masks
with integer indices of any length in any position, sums and means of masked
reads; a packed ``x[mask]`` that leaves the program is still refused at the
model's line."""

from __future__ import annotations

import pytest
import torch

import nova


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*[x.clone() for x in xs])


def _randn(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


X, Y = _randn(4, 8), _randn(4, 8, seed=1)
MASK = X > 0
ROWS = torch.tensor([True, False, True, True])


def _zero(x, m):
    x[m] = 0
    return x


def _add_masked(x, y, m):
    x[m] += y[m]
    return x


def _assign_expression(x, y, m):
    x[m] = y[m] * 2 + 1
    return x


def _rows(x, y, m):
    x[m] += y[m] * 0.5
    return x


def _mixed_scalar(x, m):
    x[m, 1] = 5.0
    return x


def _mixed_accumulate(x, m):
    x[m, torch.tensor(-2)] += 1.0
    return x


def _mixed_move(x, m):
    x[m, 2] = x[m, 1] * 3
    return x


def _masked_fill(x, m):
    return x.masked_fill_(m, float("-inf"))


CASES = {
    "x[mask]=0": (_zero, (X, MASK)),
    "x[mask]+=y[mask]": (_add_masked, (X, Y, MASK)),
    "x[mask]=y[mask]*2+1": (_assign_expression, (X, Y, MASK)),
    "rows": (_rows, (X, Y, ROWS)),
    "x[mask,1]=5": (_mixed_scalar, (X, ROWS)),
    "x[mask,t]+=1": (_mixed_accumulate, (X, ROWS)),
    "x[mask,2]=x[mask,1]*3": (_mixed_move, (X, ROWS)),
    "masked_fill_": (_masked_fill, (X, MASK)),
    "sum_mean": (lambda x, m: (x[m].sum(), (x[m] * 2).mean()), (X, MASK)),
}

COLUMNS = torch.tensor([True, False, True, False, False, True, True, False])
T = _randn(3, 4, 8, seed=2)


def _set(x, index, value):
    x[index] = value
    return x


def _add(x, index, value):
    x[index] += value
    return x


# Mixed layouts: the mask after an integer index or a whole dim, integer
# indices on either side, reads and writes of the same layout.
CASES.update({
    "x[i,mask]=7": (lambda x, m, i: _set(x, (i, m), 7.0), (X, COLUMNS, torch.tensor([2]))),
    "x[mask,j]=7": (lambda x, m, j: _set(x, (m, j), 7.0), (X, ROWS, torch.tensor([-3]))),
    "x[mask,j]+=y[mask,j]": (lambda x, y, m, j: _add(x, (m, j), y[m, j]),
                             (X, Y, ROWS, torch.tensor([5]))),
    "x[:,mask]=0": (lambda x, m: _set(x, (slice(None), m), 0.0), (X, COLUMNS)),
    "x[:,mask]+=y[:,mask]*2": (lambda x, y, m: _add(x, (slice(None), m), y[:, m] * 2),
                               (X, Y, COLUMNS)),
    "t[i,:,mask]-=t[i,:,mask]": (lambda t, m, i: _set(t, (i, slice(None), m[0]),
                                                       t[i, :, m[0]] * -1.0),
                                 (T, COLUMNS.view(1, 8), torch.tensor([1]))),
    "t[:,mask2d]+=1": (lambda t, m: _add(t, (slice(None), m), 1.0), (T, T[0] > 0)),
    "mean_of_x[:,mask]": (lambda x, m: x[:, m].mean(), (X, COLUMNS)),
    "index_put_one_value_accumulate": (
        lambda x, m, i: x.index_put((m, i), torch.tensor(2.5), accumulate=True),
        (X, ROWS, torch.tensor([0]))),
})


@pytest.mark.parametrize("name", list(CASES))
def test_masked_writes_match_eager(name: str) -> None:
    fn, args = CASES[name]
    out = nova.compile(_Fn(fn), *args)(*args)
    torch.testing.assert_close(out, _Fn(fn)(*args), rtol=1e-4, atol=1e-5)


def test_packed_mask_read_leaving_the_program_is_refused() -> None:
    with pytest.raises(nova.NovaError, match="depends on"):
        nova.compile(_Fn(lambda x, m: x[m] * 2), X, MASK)


# General mixed index writes (nova.frontend.decompose_indexing._mixed_put):
# a mask paired element by element with an integer index or with values of
# several elements (their count is asserted at run time), masks of several
# dims among whole dims, and a mask of one set position broadcast.
MIXED = {
    "x[i4,mask]=1": (lambda x, m, i: _set(x, (i, m), 1.0),
                     (X, COLUMNS, torch.tensor([1, 3, 0, 2]))),
    "index_put(mask,i3)": (lambda x, m, i: x.index_put((m, i), torch.tensor(1.0)),
                           (X, ROWS, torch.tensor([1, 2, 3]))),
    "x[mask]=v": (lambda x, m, v: _set(x, m, v), (X, MASK, torch.arange(float(MASK.sum())))),
    "x[mask]+=v": (lambda x, m, v: _add(x, m, v), (X, MASK, torch.arange(float(MASK.sum())))),
    "x[mask,i3]=v3": (lambda x, m, i, v: _set(x, (m, i), v),
                      (X, ROWS, torch.tensor([7, 0, 7]), torch.tensor([1.0, 2.0, 3.0]))),
    "index_put(mask,i2,v2,accumulate) duplicates": (
        lambda x, m, i, v: x.index_put((m, i), v, accumulate=True),
        (X, torch.tensor([True, False, False, True]), torch.tensor([7, 7]),
         torch.tensor([1.0, 2.0]))),
    "t[i4,:,mask]=v": (lambda t, m, i, v: _set(t, (i, slice(None), m), v),
                       (T, COLUMNS, torch.tensor([2, 0, 1, 1]), _randn(4, 4, seed=3))),
    "t[:,mask2d]=v": (lambda t, m, v: _set(t, (slice(None), m), v),
                      (T, T[0] > 0.5, _randn(3, int((T[0] > 0.5).sum()), seed=4))),
    "t[mask,:,i21]+=1": (lambda t, m, i: x_put(t, (m, None, i), 1.0),
                         (T, torch.tensor([True, False, True]), torch.tensor([[1], [5]]))),
    "one set position broadcast": (lambda x, m, i: _set(x, (m, i), 9.0),
                                   (X, torch.tensor([False, False, True, False]),
                                    torch.tensor([1, 2, 3]))),
    "int64 x[mask,i3]+=v3": (lambda x, m, i, v: x.index_put((m, i), v, accumulate=True),
                             (torch.arange(32).reshape(4, 8), ROWS, torch.tensor([1, 1, 6]),
                              torch.tensor([5, 6, 7]))),
}


def x_put(t, index, value):
    """``index_put`` with whole dims (``None``), which only the ATen op takes."""
    return torch.ops.aten.index_put(t, list(index), torch.tensor(value), True)


@pytest.mark.parametrize("name", list(MIXED))
def test_mixed_index_writes_match_eager(name: str) -> None:
    fn, args = MIXED[name]
    out = nova.compile(_Fn(fn), *args)(*args)
    torch.testing.assert_close(out, _Fn(fn)(*args), rtol=1e-4, atol=1e-5)


def test_mask_count_other_than_compiled_is_an_assert() -> None:
    """The values' length fixes the mask's count at compile time; another
    count at run time fails the program's assert (torch: shape mismatch)."""
    from nova.sim.errors import AssertionFailedError

    x, values = X[0], torch.arange(4.0)
    program = nova.compile(_Fn(lambda x, m, v: _set(x, m, v)), x, COLUMNS, values)
    torch.testing.assert_close(program(x, COLUMNS, values), _set(x.clone(), COLUMNS, values))
    with pytest.raises(AssertionFailedError, match="set elements other than the 4"):
        program(x, ~COLUMNS & (torch.arange(8) < 2), values)


def test_read_modify_write_pairing_a_mask_with_several_indices_is_refused() -> None:
    """``t[mask, :, i] += 1`` reads a packed ``t[mask, :, i]`` of a count known
    only at run time and pairs it with ``i``'s elements: refused, never guessed."""
    with pytest.raises(nova.NovaError, match="pairing a boolean mask"):
        nova.compile(_Fn(lambda t, m, i: _add(t, (m, slice(None), i), 1.0)),
                     T, torch.tensor([True, False, True]), torch.tensor([[1], [5]]))
