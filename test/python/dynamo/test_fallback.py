"""Per-op fallback of torch.compile(backend="nova"): a graph holding an op
Nova cannot lower is split with torch.fx's capability-based partitioner; that
op, and only that op, runs in eager, everything else on Nova, and the
results are eager's. Inference, graph breaks and training."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

import nova.dynamo
import nova.frontend
from nova.compiler.errors import NovaUnsupportedOpError
from nova.dynamo import NovaFallbackWarning, backend, cache_info
from nova.dynamo.partition import eager_nodes, op_name

RTOL, ATOL = 1e-4, 1e-5


class Erfinv(torch.nn.Module):
    """torch.special.erfinv: torch-mlir has no lowering of aten.erfinv to linalg."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.fc1(x)) * 0.5
        h = torch.special.erfinv(h)
        return self.fc2(torch.relu(h) + 1.0)


class BreaksAndAtan(torch.nn.Module):
    """A print (a graph break), then erfinv (no Nova lowering: torch-mlir does not lower it) between linears."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        print("nova dynamo test: graph break")
        h = torch.erfinv(torch.tanh(h) * 0.5)
        return self.fc2(h)


class AtanMLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        return self.fc2(torch.erfinv(torch.tanh(h) * 0.5))


class Sigmoid(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 16)
        self.fc2 = torch.nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        h = torch.sigmoid(h)
        return self.fc2(h)


def _spy(graphs: list):
    """The nova backend, keeping each graph it returns (to look at its split)."""
    def spy(gm, example_inputs, **kwargs):
        graph = backend(gm, example_inputs, **kwargs)
        graphs.append(graph)
        return graph
    return spy


def test_an_op_torch_mlir_cannot_lower_runs_alone_in_eager() -> None:
    torch.manual_seed(0)
    model = Erfinv().eval()
    graphs: list = []
    compiled = torch.compile(model, backend=_spy(graphs))
    x = torch.randn(4, 16)
    with torch.no_grad(), pytest.warns(NovaFallbackWarning, match="1 op runs in eager"):
        torch.testing.assert_close(compiled(x), model(x), rtol=RTOL, atol=ATOL)
    with torch.no_grad():
        torch.testing.assert_close(compiled(-x), model(-x), rtol=RTOL, atol=ATOL)
    (graph,) = graphs
    # The only call the split graph makes itself is erfinv; the rest are the
    # two Nova partitions around it (linear, tanh, mul / relu, add, linear).
    assert [op_name(n) for n in eager_nodes(graph.split)] == ["torch.special.erfinv"]
    (row,) = nova.dynamo.report()
    assert row.partitions == 2 and row.eager_reason is None
    assert [op for op, _ in row.eager_ops] == ["torch.special.erfinv"]
    assert "aten.erfinv" in row.eager_ops[0][1]  # why: torch-mlir's missing lowering
    assert row.calls == 2 and row.compiles == 2 and row.memory_hits == 2 and row.sim_ns > 0
    assert cache_info().compiles == 2 and cache_info().fallbacks == 0


def test_graph_breaks_with_an_op_in_eager() -> None:
    torch.manual_seed(1)
    model = BreaksAndAtan().eval()
    compiled = torch.compile(model, backend=backend)
    x = torch.randn(4, 16)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.testing.assert_close(compiled(x), model(x), rtol=RTOL, atol=ATOL)
    fallbacks = [str(w.message) for w in caught if w.category is NovaFallbackWarning]
    assert len(fallbacks) == 1 and "torch.erfinv" in fallbacks[0]
    assert "h = torch.erfinv(torch.tanh(h) * 0.5)" in fallbacks[0]
    explained = torch._dynamo.explain(model)(x)
    rows = list(nova.dynamo.report())
    assert len(rows) == explained.graph_count == 2
    first, second = rows
    assert first.partitions == 1 and first.eager_ops == []
    assert second.partitions == 2 and [op for op, _ in second.eager_ops] == ["torch.erfinv"]
    assert cache_info().compiles == 3


def test_training_runs_only_the_op_in_eager(train_beside_eager) -> None:
    """aot_autograd's forward graph holds aten.erfinv: it runs in eager between
    two Nova partitions; the backward graph (erfinv's derivative is
    sqrt(pi)/2 * exp(erfinv(x)²), from the saved output) runs whole on Nova; 5 AdamW steps give eager's losses."""
    torch.manual_seed(2)
    model = AtanMLP()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend=backend)
    losses, expected = train_beside_eager(compiled, model, reference, 5, "ignore")
    torch.testing.assert_close(losses, expected, rtol=RTOL, atol=ATOL)
    forward, backward = nova.dynamo.report()
    assert (forward.kind, backward.kind) == ("forward", "backward")
    assert [op for op, _ in forward.eager_ops] == ["aten.erfinv"] and forward.partitions == 2
    assert backward.eager_ops == [] and backward.partitions == 1 and backward.on_nova
    assert forward.calls == backward.calls == 5


def _failing_import(when):
    """nova.frontend.import_model, failing without a source line for graphs
    where ``when(targets)`` holds (an op Nova cannot compile and cannot place)."""
    original = nova.frontend.import_model

    def import_model(model, *args, **kwargs):
        targets = {n.target for n in model.graph.nodes if n.op == "call_function"}
        if when(targets):
            raise NovaUnsupportedOpError("a fake op", None)
        return original(model, *args, **kwargs)
    return import_model


def test_an_error_without_a_line_is_found_by_bisection(monkeypatch) -> None:
    monkeypatch.setattr(nova.frontend, "import_model",
                        _failing_import(lambda targets: torch.sigmoid in targets))
    torch.manual_seed(3)
    model = Sigmoid().eval()
    compiled = torch.compile(model, backend=backend)
    x = torch.randn(4, 16)
    with torch.no_grad(), pytest.warns(NovaFallbackWarning, match="torch.sigmoid"):
        torch.testing.assert_close(compiled(x), model(x), rtol=RTOL, atol=ATOL)
    (row,) = nova.dynamo.report()
    assert [op for op, _ in row.eager_ops] == ["torch.sigmoid"] and row.partitions == 2
    assert cache_info().probes >= 2


def test_ops_that_fail_only_together_run_the_graph_in_eager(monkeypatch) -> None:
    """No single op is to blame (each half compiles): the graph runs in eager
    as a whole, with the warning, rather than being split wrongly."""
    monkeypatch.setattr(nova.frontend, "import_model", _failing_import(
        lambda targets: {torch.relu, torch.sigmoid} <= targets))
    torch.manual_seed(4)
    model = Sigmoid().eval()
    compiled = torch.compile(model, backend=backend)
    x = torch.randn(4, 16)
    with torch.no_grad(), pytest.warns(NovaFallbackWarning, match="runs in eager"):
        torch.testing.assert_close(compiled(x), model(x), rtol=RTOL, atol=ATOL)
    (row,) = nova.dynamo.report()
    assert row.eager_reason is not None and not row.on_nova
    assert cache_info().fallbacks == 1
