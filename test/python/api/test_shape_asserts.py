"""Scalars read with .item() and the symbolic-shape asserts on them
(torch._check, torch._check_is_size, torch.sym_constrain_range): the program
computes with the scalar as eager does, and a failed check faults at run time
(nova.frontend.shape_asserts)."""

from __future__ import annotations

import inspect

import pytest
import torch

import nova


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _checked(x, n):
    k = n.item()
    torch._check(k >= 0)
    torch._check(k < 5)
    return x * k


def _constrained(x, n):
    k = n.item()
    torch.sym_constrain_range(k, min=0, max=10)
    return x + k


def _size(x, n):
    k = n.item()
    torch._check_is_size(k)
    return x[:, :1] * k


X = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("fn", [_checked, _constrained, _size], ids=lambda f: f.__name__)
def test_item_scalars_and_asserts_match_eager(fn) -> None:
    n = torch.tensor(3)
    program = nova.compile(_Fn(fn), X, n)
    torch.testing.assert_close(program(X, n), fn(X, n), rtol=1e-6, atol=0)
    torch.testing.assert_close(program(X, torch.tensor(4)), fn(X, torch.tensor(4)),
                               rtol=1e-6, atol=0)


class _Checked(torch.nn.Module):
    def forward(self, x, n):
        k = n.item()
        torch._check(k >= 0)
        torch._check(k < 5, lambda: "k must be below 5")
        return x * k


class _Constrained(torch.nn.Module):
    def forward(self, x, n):
        k = n.item()
        torch.sym_constrain_range(k, min=0, max=10)
        return x + k


class _AsyncMessage(torch.nn.Module):
    def forward(self, x):
        torch._assert_async(x.sum() > 0, "the sum must be positive")
        return x * 2


class _AsyncBare(torch.nn.Module):
    def forward(self, x):
        torch._assert_async(x.amax() < 10)
        return x + 1


def _line_of(model_class: type, text: str) -> int:
    lines, first = inspect.getsourcelines(model_class.forward)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("model_class, bad, message", [
    (_Checked, 7, "expression u0 <= 4"), (_Checked, -1, "expression u0 >= 0"),
    (_Constrained, 11, "expression u0 <= 10")],
    ids=["above", "below", "range"])
def test_a_failed_check_raises_its_message_at_the_model_line(model_class, bad: int,
                                                             message: str) -> None:
    """A failed assert is a vassert fault (a NovaRuntimeError) carrying the
    assert's message after the model's line (torch.export places the asserts
    on an ``.item()`` scalar at the ``.item()``), not a generic fault of the
    machinery that checks it."""
    from nova.sim.errors import AssertionFailedError

    model = model_class()
    program = nova.compile(model, X, torch.tensor(3))
    torch.testing.assert_close(program(X, torch.tensor(4)), model(X, torch.tensor(4)))
    with pytest.raises(AssertionFailedError, match="assertion failed") as raised:
        program(X, torch.tensor(bad))
    assert isinstance(raised.value, nova.NovaRuntimeError)
    line = _line_of(model_class, ".item()")
    assert f"test_shape_asserts.py:{line}:" in raised.value.location, raised.value.location
    assert message in raised.value.location, raised.value.location


@pytest.mark.parametrize("model_class, bad, message", [
    (_AsyncMessage, -X.abs(), "the sum must be positive"),
    (_AsyncBare, X + 20, "torch._assert_async failed")], ids=["message", "bare"])
def test_assert_async_is_checked_not_dropped(model_class, bad, message: str) -> None:
    """torch._assert_async, with and without a message (torch's
    run_decompositions drops the bare one as dead code: Nova keeps it)."""
    from nova.sim.errors import AssertionFailedError

    good, model = X.abs(), model_class()
    program = nova.compile(model, good)
    torch.testing.assert_close(program(good), model(good), rtol=0, atol=0)
    with pytest.raises(AssertionFailedError) as raised:
        program(bad)
    line = _line_of(model_class, "_assert_async")
    assert f"test_shape_asserts.py:{line}:" in raised.value.location, raised.value.location
    assert message in raised.value.location


def test_provable_asserts_leave_no_check() -> None:
    """An assert implied by an earlier one (k >= 0 after k >= 2) is folded
    away: the binary holds one vassert, the first's."""
    from nova.binary.isa import Opcode
    from nova.sim.errors import AssertionFailedError

    def fn(x, n):
        k = n.item()
        torch._check(k >= 2)
        torch._check(k >= 0)
        return x * k

    program = nova.compile(_Fn(fn), X, torch.tensor(3))
    torch.testing.assert_close(program(X, torch.tensor(2)), fn(X, torch.tensor(2)))
    opcodes = [ins.opcode for ins in program.binary.code(0)]
    assert opcodes.count(Opcode.VASSERT) == 1
    with pytest.raises(AssertionFailedError, match="u0 >= 2"):
        program(X, torch.tensor(1))
