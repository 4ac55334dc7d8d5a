"""nova.frontend.trace_locations.fast_stack_traces: make_fx's stack traces
(``record_stack_traces=True``) made cheaply, the same text node for node."""

from __future__ import annotations

import torch
import torch.fx.traceback as fx_traceback
from torch.fx.experimental.proxy_tensor import make_fx

from nova.frontend.trace_locations import fast_stack_traces, located_loss


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.nn.functional.gelu(self.fc(x)) + x


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.blocks = torch.nn.ModuleList([_Block(), _Block()])
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.norm(x).softmax(-1)


def my_loss(y, target):
    return ((y - target) ** 2).mean()


def _traces(fast: bool) -> list[tuple[str, str | None]]:
    model = _Net()
    loss_fn = located_loss(my_loss)
    params = dict(model.named_parameters())

    def step(x, target, *values):
        state = {name: v.requires_grad_(True) for name, v in zip(params, values)}
        loss = loss_fn(torch.func.functional_call(model, state, (x,)), target)
        return (loss, *torch.autograd.grad(loss, list(state.values())))

    args = [torch.randn(4, 8), torch.randn(4, 8)] + [p.detach() for p in params.values()]
    with fx_traceback.preserve_node_meta():
        if fast:
            with fast_stack_traces():
                gm = make_fx(step, tracing_mode="fake", record_stack_traces=True)(*args)
        else:
            gm = make_fx(step, tracing_mode="fake", record_stack_traces=True)(*args)
    return [(node.name, node.stack_trace) for node in gm.graph.nodes]


def test_same_stack_traces_as_make_fx():
    fast, torch_own = _traces(True), _traces(False)
    assert fast == torch_own
    traced = [trace for _, trace in fast if trace]
    # The model's lines, the loss function's (an anchor) and torch's forward frames.
    assert any("in forward" in t and "test_fast_stack_traces.py" in t for t in traced)
    assert any("in my_loss" in t for t in traced)
    assert any("torch/nn/modules/linear.py" in t for t in traced)


def test_tracer_restored():
    from torch.fx.experimental import proxy_tensor

    before = proxy_tensor.PythonKeyTracer
    with fast_stack_traces():
        assert proxy_tensor.PythonKeyTracer is not before
    assert proxy_tensor.PythonKeyTracer is before
