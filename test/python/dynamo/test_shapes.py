"""Shapes: three input shapes in a row give eager's results each time, with
Dynamo's default automatic-dynamic (a graph with SymInts from the second new
shape on), with torch._dynamo.mark_dynamic (symbolic from the first call)
and with dynamic=False. A symbolic graph is specialised per concrete shape
at call time and cached, never run at the wrong shape."""

from __future__ import annotations

import warnings

import torch

import nova.dynamo
from nova.dynamo import NovaFallbackWarning, backend, cache_info

RTOL, ATOL = 1e-4, 1e-5
SHAPES = [(2, 16), (3, 16), (5, 16)]


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.fc1(x))
        return self.fc2(h - h.mean(dim=0, keepdim=True))  # depends on the batch size


def _symbolic(gm: torch.fx.GraphModule) -> bool:
    """Whether Dynamo handed over a graph with symbolic sizes."""
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        if node.op == "placeholder" and (
                isinstance(value, torch.SymInt) or isinstance(value, torch.Tensor)
                and not all(isinstance(d, int) for d in value.shape)):
            return True
    return False


def _run(dynamic, mark: bool, train: bool = False) -> list[bool]:
    torch.manual_seed(0)
    model = MLP() if train else MLP().eval()
    symbolic: list[bool] = []

    def spy(gm, example_inputs, **kwargs):
        symbolic.append(_symbolic(gm))
        return backend(gm, example_inputs, **kwargs)

    compiled = torch.compile(model, backend=spy, dynamic=dynamic)
    warnings.simplefilter("error", NovaFallbackWarning)  # (undone by pytest after the test)
    for shape in SHAPES:
        x = torch.randn(*shape)
        if mark:
            torch._dynamo.mark_dynamic(x, 0)
        if train:
            got, expected = compiled(x), model(x)
            got.sum().backward()
            grad = model.fc1.weight.grad.clone()
            model.zero_grad()
            expected.sum().backward()
            torch.testing.assert_close(grad, model.fc1.weight.grad, rtol=RTOL, atol=ATOL)
            model.zero_grad()
        else:
            with torch.no_grad():
                got, expected = compiled(x), model(x)
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    return symbolic


def test_automatic_dynamic_graph_is_specialised_per_shape() -> None:
    # The first shape compiles a static graph; the second makes Dynamo hand
    # over a graph with a symbolic batch, used for the second and third shapes.
    assert _run(None, mark=False) == [False, True]
    first, dynamic = nova.dynamo.report()
    assert (first.calls, dynamic.calls) == (1, 2)
    assert dynamic.compiles == 2 and cache_info().compiles == 3


def test_mark_dynamic_graph_is_specialised_per_shape() -> None:
    assert _run(None, mark=True) == [True]
    (graph,) = nova.dynamo.report()
    assert graph.calls == 3 and graph.compiles == 3


def test_dynamic_false_compiles_a_graph_per_shape() -> None:
    assert _run(False, mark=False) == [False, False, False]
    assert [g.compiles for g in nova.dynamo.report()] == [1, 1, 1]


def test_training_with_three_shapes() -> None:
    """aot_autograd's forward and backward graphs at each shape give eager's
    outputs and gradients; the symbolic pair (from the second shape on) is
    retraced at each concrete shape and compiled, on Nova."""
    assert _run(None, mark=False, train=True) == [False, True]
    rows = list(nova.dynamo.report())
    assert [(g.kind, g.calls, g.compiles) for g in rows] == [
        ("forward", 1, 1), ("backward", 1, 1), ("forward", 2, 2), ("backward", 2, 2)]
    assert all(g.on_nova and not g.eager_ops for g in rows)
