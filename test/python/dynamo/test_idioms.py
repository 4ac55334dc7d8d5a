"""Real-code idioms through torch.compile(backend="nova") in inference: uint8 /
int16 with torch's wrap-around (nova.frontend.narrow_ints), masked fills and
runtime asserts (nova.frontend.shape_asserts) run on Nova, with no op left in
eager. Masked writes: by default Dynamo breaks the graph at the data-dependent
``x[mask]`` (its ``nonzero``), runs the reads in eager between graphs, and the
write reaches Nova as ``index_put`` with values of the count the mask had
(nova.frontend.decompose_indexing, with a runtime assert on that count);
with ``capture_dynamic_output_shape_ops`` the whole write is one graph
(nova.frontend.masked_lanes)."""

from __future__ import annotations

import pytest
import torch

import nova
import nova.dynamo

_G = torch.Generator().manual_seed(0)
LONGS = torch.randint(0, 1000, (8,), generator=_G)
U8 = torch.randint(0, 256, (4, 8), dtype=torch.uint8, generator=_G)
U8B = torch.randint(0, 256, (4, 8), dtype=torch.uint8, generator=_G)
I8 = torch.randint(-128, 128, (4, 8), dtype=torch.int8, generator=_G)
I16 = torch.randint(-32768, 32767, (16,), dtype=torch.int16, generator=_G)
X = torch.randn(4, 8, generator=_G)


CASES = {
    "int64_to_uint8_wraps": (lambda t: (t * 100).to(torch.uint8), (LONGS,)),
    "uint8_arithmetic": (lambda a, b: (a + b, a - b, a * b, ~a, a > b), (U8, U8B)),
    "uint8_plus_int8_is_int16": (lambda a, b: (a + b) * 200, (U8, I8)),
    "int16_arithmetic": (lambda a: (a * a, a - 30000, a % 7), (I16,)),
    "float_to_uint8": (lambda x: (x.abs() * 50).to(torch.uint8), (X,)),
    "masked_fill": (lambda x, y: x.masked_fill(y > 1, float("-inf")).where(y > -1, 0.0),
                    (X, torch.randn(4, 8, generator=_G) * 2)),
}


def _assert_no_eager() -> None:
    rows = nova.dynamo.report()
    assert rows and all(r.eager_ops == [] and r.eager_reason is None for r in rows), \
        [(r.eager_ops, r.eager_reason) for r in rows]


@pytest.mark.parametrize("name", list(CASES))
def test_idioms_run_on_nova_like_eager(name: str) -> None:
    fn, args = CASES[name]
    out = torch.compile(fn, backend="nova")(*args)
    expected = fn(*args)
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=0)
    for got, want in zip(out if isinstance(out, tuple) else (out,),
                         expected if isinstance(expected, tuple) else (expected,)):
        assert got.dtype == want.dtype
    _assert_no_eager()


def test_assert_async_fails_with_its_message() -> None:
    from nova.sim.errors import AssertionFailedError

    def fn(x):
        torch._assert_async(x.sum() > 0, "the sum must be positive")
        return x * 2

    compiled = torch.compile(fn, backend="nova")
    torch.testing.assert_close(compiled(X.abs()), X.abs() * 2)
    _assert_no_eager()
    with pytest.raises(AssertionFailedError, match="the sum must be positive"):
        compiled(-X.abs())


def _zero_where_positive(x):
    x = x.clone()
    x[x > 0.5] = 0
    return x


def _add_masked(x, y):
    x = x.clone()
    x[x > 0] += y[x > 0]
    return x


def _fill_logits(logits, mask):
    logits = logits.clone()
    logits.masked_fill_(mask, float("-inf"))
    return logits


MASKED = {
    "x[mask]=0": (_zero_where_positive, (X,)),
    "x[mask]+=y[mask]": (_add_masked, (X, torch.randn(4, 8, generator=_G))),
    "masked_fill_(mask,-inf)": (_fill_logits, (X, torch.rand(4, 8, generator=_G) > 0.5)),
}


@pytest.mark.parametrize("capture", [False, True], ids=["graph_break", "one_graph"])
@pytest.mark.parametrize("name", list(MASKED))
def test_masked_writes_run_on_nova_like_eager(name: str, capture: bool) -> None:
    fn, args = MASKED[name]
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=capture):
        out = torch.compile(fn, backend="nova")(*args)
    torch.testing.assert_close(out, fn(*args), rtol=0, atol=0)
    _assert_no_eager()
    assert any(r.compiles for r in nova.dynamo.report())


class _NarrowModel(torch.nn.Module):
    """uint8 / int16 inputs, a wrapping conversion, and a uint8 tensor the
    backward reads (the gradient of ``y * codes``)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, image, codes):
        x = image.float() / 255 + (codes.to(torch.int16) * 300).float() / 1000
        wrapped = (x * 100).to(torch.uint8)
        return (self.fc(x + wrapped.float() / 100).relu() * codes[:, :4]).sum()


def _assert_trains_like_eager(model: torch.nn.Module, *inputs: torch.Tensor) -> None:
    """torch.compile(model, backend="nova"): the loss and every gradient as eager's."""
    import copy

    reference = copy.deepcopy(model)
    loss = torch.compile(model, backend="nova")(*inputs)
    loss.backward()
    expected = reference(*inputs)
    expected.backward()
    torch.testing.assert_close(loss, expected, rtol=1e-4, atol=1e-5)
    for (name, got), (_, want) in zip(model.named_parameters(), reference.named_parameters()):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-4, atol=1e-5, msg=name)


def test_narrow_ints_train_on_nova_like_eager() -> None:
    """Training graphs carry uint8 / int16 in int32 on Nova (the call converts
    at the boundary): no op in eager, the loss and every gradient as eager's."""
    torch.manual_seed(0)
    image = torch.randint(0, 256, (4, 8), dtype=torch.uint8, generator=_G)
    codes = torch.randint(0, 256, (4, 8), dtype=torch.uint8, generator=_G)
    _assert_trains_like_eager(_NarrowModel(), image, codes)
    _assert_no_eager()
    assert {r.kind for r in nova.dynamo.report()} == {"forward", "backward"}


class _MaskedModel(torch.nn.Module):
    """Masked writes and reads between two linears, as training code has them."""

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode
        self.fc, self.fc2 = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x, y):
        h = self.fc(x)
        if self.mode == "x[mask]=0":
            h[h > 0.5] = 0
        elif self.mode == "x[mask]+=y[mask]":
            h[h > 0] += y[h > 0]
        elif self.mode == "x[mask]=y[mask]*2":
            h[y > 0] = y[y > 0] * 2
        elif self.mode == "int8":  # int8 arithmetic torch-mlir's int8 lowering crashed on
            q = (y * 20).to(torch.int8)
            h = h + ((q * 3 - 1) // 2).float() / 100
        return self.fc2(h).square().sum()


@pytest.mark.parametrize("capture", [False, True], ids=["graph_break", "one_graph"])
@pytest.mark.parametrize("mode", ["x[mask]=0", "x[mask]+=y[mask]", "x[mask]=y[mask]*2", "int8"])
def test_masked_writes_and_int8_train_like_eager(mode: str, capture: bool) -> None:
    """Training through torch.compile: the loss and every gradient as eager's.
    With ``capture_dynamic_output_shape_ops`` a packed ``y[mask]`` read used to
    reach torch-mlir (no end to its pipeline); every path now applies the same
    idiom rewrites (nova.frontend.idioms), and a read whose size depends on the
    data runs in eager with the reason named."""
    torch.manual_seed(0)
    x, y = torch.randn(4, 8, generator=_G), torch.randn(4, 8, generator=_G)
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=capture):
        _assert_trains_like_eager(_MaskedModel(mode), x, y)
    rows = nova.dynamo.report()
    assert {"forward", "backward"} <= {r.kind for r in rows}
    if mode in ("x[mask]=0", "int8"):
        _assert_no_eager()
    for r in rows:  # what runs in eager says why, at the model's line
        assert all("test_idioms.py" in why for _, why in r.eager_ops), r.eager_ops
