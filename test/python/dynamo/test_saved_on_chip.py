"""Training: the tensors aot_autograd's forward saves for the backward stay
on the simulated chip. The forward program keeps them in HBM (DeviceTensor
handles, not read back), the backward program takes them by device-to-device
copies (not written by the host); the report counts it, gradients and
losses are eager's."""

from __future__ import annotations

import copy
import gc

import pytest
import torch

import nova.dynamo
from nova.dynamo import backend
from nova.dynamo.cache import program_cache
from nova.runtime.device import DeviceTensor, DeviceTensorError, live

RTOL, ATOL = 1e-4, 1e-5


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class Hidden(torch.nn.Module):
    """Returns its hidden activation too: a value the backward saves is also
    a user output."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(self.fc1(x))
        return h, self.fc2(h)


def _programs():
    """The forward and the backward program (one each in the cache)."""
    forward, backward = program_cache().programs.values()
    return forward, backward


def test_saved_tensors_are_neither_read_back_nor_written_again(train_beside_eager) -> None:
    gc.collect()
    before = live()
    torch.manual_seed(8)
    model = MLP()
    reference = copy.deepcopy(model)
    losses, expected = train_beside_eager(torch.compile(model, backend=backend), model,
                                          reference, 10, "error")
    torch.testing.assert_close(losses, expected, rtol=RTOL, atol=ATOL)
    forward_program, backward_program = _programs()
    # The forward's results: the (4, 8) f32 output, then the tensors saved for the backward.
    outputs = forward_program.output_entries
    saved = len(outputs) - 1
    saved_bytes = sum(e.byte_size for e in outputs[1:])
    user_bytes = 4 * 8 * 4
    assert saved >= 2 and saved_bytes > user_bytes
    forward, backward = nova.dynamo.report()
    assert backward.on_nova and backward.calls == 10 and backward.eager_ops == []
    # Only the user output came back to the host; the saved tensors stayed on the chip.
    assert forward.traffic.host_read == 10 * user_bytes
    assert (forward.traffic.kept, forward.traffic.kept_bytes) == (10 * saved, 10 * saved_bytes)
    # The backward's inputs: the saved tensors (device copies) and the output's
    # gradient, the only input the host wrote.
    backward_inputs = sum(e.byte_size for e in backward_program.input_entries)
    assert backward_inputs == saved_bytes + user_bytes
    assert backward.traffic.host_written == 10 * user_bytes
    assert backward.traffic.device_in == 10 * saved_bytes
    assert backward_program.traffic.device_in == 10 * saved_bytes
    # The device copies are simulated time of the backward.
    assert 0 < backward.traffic.device_ns < backward.sim_ns
    # Every saved tensor was freed when autograd dropped it after the backward.
    assert live() == before
    table = str(nova.dynamo.report())
    assert "host in/out" in table and f"{10 * saved} kept" in table and "copied in" in table


def test_a_saved_tensor_that_is_an_output_is_read_back() -> None:
    torch.manual_seed(4)
    model = Hidden()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend=backend)
    x, y = torch.randn(4, 16), torch.randn(4, 8)
    for _ in range(3):
        results = []
        for net in (compiled, reference):
            net.zero_grad()
            h, out = net(x)
            if net is compiled:
                saved = out.grad_fn.saved_tensors
            loss = torch.nn.functional.mse_loss(out, y) + h.square().mean()
            loss.backward()
            results.append((h, out, loss, [p.grad.clone() for p in net.parameters()]))
        (h, out, loss, grads), (h_ref, out_ref, loss_ref, grads_ref) = results
        assert not isinstance(h, DeviceTensor) and not isinstance(out, DeviceTensor)
        torch.testing.assert_close(h, h_ref, rtol=RTOL, atol=ATOL)
        torch.testing.assert_close(out, out_ref, rtol=RTOL, atol=ATOL)
        torch.testing.assert_close(loss, loss_ref, rtol=RTOL, atol=ATOL)
        for got, want in zip(grads, grads_ref):
            torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)
        with torch.no_grad():
            for p in list(model.parameters()) + list(reference.parameters()):
                p -= 0.1 * p.grad
    # The hidden activation is saved (fc2's weight gradient needs it) and kept on the chip.
    assert saved and all(isinstance(t, DeviceTensor) for t in saved)
    assert any(t.shape == h.shape and torch.equal(t.to_host(), h.detach()) for t in saved)
    forward, backward = nova.dynamo.report()
    assert forward.traffic.kept > 0 and backward.traffic.device_in == forward.traffic.kept_bytes


def test_a_saved_tensor_used_for_its_data_is_a_clear_error() -> None:
    torch.manual_seed(5)
    model = MLP()
    reference = copy.deepcopy(model)
    x = torch.randn(4, 16)
    out = torch.compile(model, backend=backend)(x)
    saved = out.grad_fn.saved_tensors
    inputs = [t for t in saved if t.shape == x.shape]
    with pytest.raises(DeviceTensorError, match="kept in simulated device memory"):
        inputs[0] + 1
    with pytest.raises(DeviceTensorError, match=r"\.numpy\(\)"):
        inputs[0].numpy()
    assert torch.equal(inputs[0].to_host(), x)  # x is saved for fc1's weight gradient
    del saved, inputs
    out.sum().backward()
    reference(x).sum().backward()
    for got, want in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(got.grad, want.grad, rtol=RTOL, atol=ATOL)


def test_a_backward_in_eager_reads_the_saved_tensors_back(monkeypatch,
                                                          train_beside_eager) -> None:
    from nova.dynamo.training import AotGraph, NovaTrainingGraphError

    compile_graph = AotGraph._compile

    def forward_only(self, args, cache):
        if self.kind == "backward":
            raise NovaTrainingGraphError("test: this backward runs in eager")
        return compile_graph(self, args, cache)

    monkeypatch.setattr(AotGraph, "_compile", forward_only)
    torch.manual_seed(6)
    model = MLP()
    reference = copy.deepcopy(model)
    losses, expected = train_beside_eager(torch.compile(model, backend=backend), model,
                                          reference, 3, "ignore")
    torch.testing.assert_close(losses, expected, rtol=RTOL, atol=ATOL)
    forward, backward = nova.dynamo.report()
    assert forward.on_nova and forward.traffic.kept > 0
    assert backward.eager_reason == "test: this backward runs in eager"
    assert backward.traffic.host_read == forward.traffic.kept_bytes and backward.traffic.device_in == 0


def test_two_forwards_before_one_backward() -> None:
    """Gradient accumulation: the second forward run would overwrite the first's
    saved tensors in its output buffers; they move to buffers of their own
    first (device-to-device), and both backwards get their own values."""
    torch.manual_seed(7)
    model = MLP()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend=backend)
    x1, x2, y = torch.randn(4, 16), torch.randn(4, 16), torch.randn(4, 8)
    for net in (compiled, reference):
        loss = (torch.nn.functional.mse_loss(net(x1), y)
                + torch.nn.functional.mse_loss(net(x2), y))
        loss.backward()
    for got, want in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(got.grad, want.grad, rtol=RTOL, atol=ATOL)
    forward, backward = nova.dynamo.report()
    assert forward.calls == backward.calls == 2
    assert forward.traffic.moved_bytes == forward.traffic.kept_bytes // 2  # the first call's, once
    assert backward.traffic.device_in == forward.traffic.kept_bytes
    assert "moved" in str(nova.dynamo.report())


def test_retain_graph_runs_the_backward_twice_on_the_kept_tensors() -> None:
    torch.manual_seed(9)
    model = MLP()
    reference = copy.deepcopy(model)
    x = torch.randn(4, 16)
    for net in (torch.compile(model, backend=backend), reference):
        out = net(x)
        out.sum().backward(retain_graph=True)
        out.sum().backward()
    for got, want in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(got.grad, want.grad, rtol=RTOL, atol=ATOL)
    forward, backward = nova.dynamo.report()
    assert backward.calls == 2 and backward.traffic.device_in == 2 * forward.traffic.kept_bytes
