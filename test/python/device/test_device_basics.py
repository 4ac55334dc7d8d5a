"""The nova PyTorch device: registration, memory, views, copies, printing, save/load,
autocast, events and the CPU fallback (against torch eager on the CPU)."""
from __future__ import annotations

import io
import warnings

import pytest
import torch

import nova.device  # noqa: F401  (registers the device; `import torch` does it once installed)
from nova.device.host import NovaFallbackError


@pytest.fixture(autouse=True)
def _warn_mode():
    torch.nova.set_fallback("warn")
    yield
    torch.nova.set_fallback("warn")


def test_device_is_registered():
    assert torch.device("nova").type == "nova"
    x = torch.randn(3).nova()
    assert x.is_nova and x.device == torch.device("nova", 0)
    assert torch.nova.is_available() and torch.nova.is_initialized()
    assert torch.nova.device_count() == 8  # nova-t1's chips
    assert torch.nova.current_device() == 0
    assert torch._C._get_privateuse1_backend_name() == "nova"
    assert torch.nova.target() == "nova-t1"


def test_tensor_on_second_chip():
    x = torch.arange(6.0).to("nova:1")
    assert x.device == torch.device("nova", 1)
    assert torch.equal((x * 2).cpu(), torch.arange(6.0) * 2)
    with pytest.raises(RuntimeError, match="out of range"):
        torch.nova.set_device(99)


def test_memory_statistics_and_oom():
    torch.nova.empty_cache()
    base = torch.nova.memory_allocated()
    x = torch.empty(1000, device="nova")  # 4000 B -> 4096 (512-byte blocks)
    assert torch.nova.memory_allocated() - base == 4096
    assert torch.nova.max_memory_allocated() >= torch.nova.memory_allocated()
    del x
    assert torch.nova.memory_allocated() == base
    assert torch.nova.memory_reserved() >= 4096  # cached for reuse
    torch.nova.empty_cache()
    stats = torch.nova.memory_stats()
    assert stats["allocated_bytes.all.current"] == base
    total = torch.nova.mem_get_info()[1]
    assert total == 32 * 2**30  # nova-t1's hbm_bytes
    with pytest.raises(torch.OutOfMemoryError, match=r"Tried to allocate 64\.00 GiB.*total capacity of 32\.00 GiB"):
        torch.empty(16 * 2**30, device="nova")
    assert torch.nova.memory_stats()["num_ooms"] >= 1
    summary = torch.nova.memory_summary()
    assert "Allocated memory" in summary and "Peak Usage" in summary


def test_views_share_memory_and_in_place_ops_reach_the_base():
    base = torch.arange(12.0).reshape(3, 4)
    d = base.to("nova")
    before = torch.nova.transfer_bytes()
    t = d.t()
    row = d[1]
    flat = d.view(12)
    assert t.untyped_storage().data_ptr() == d.untyped_storage().data_ptr()
    assert row.storage_offset() == 4 and flat.shape == (12,)
    row.add_(100)
    d[:, 0].mul_(-1)
    assert torch.nova.transfer_bytes() == before  # nothing went to the host
    expected = base.clone()
    expected[1] += 100
    expected[:, 0] *= -1
    assert torch.equal(d.cpu(), expected)
    assert torch.equal(t.cpu(), expected.t())


def test_host_traffic_is_counted():
    h2d, d2h = torch.nova.transfer_bytes()
    x = torch.randn(256).to("nova")
    y = (x * 3).sum()
    value = y.item()
    assert abs(value - (x.cpu() * 3).sum().item()) < 1e-3
    h2d2, d2h2 = torch.nova.transfer_bytes()
    assert h2d2 - h2d == 1024
    assert d2h2 - d2h == 4 + 1024  # item() and the .cpu() in the check


def test_print_reads_back():
    x = torch.tensor([1.5, -2.0, 3.25]).to("nova")
    assert repr(x) == "tensor([ 1.5000, -2.0000,  3.2500], device='nova:0')"


def test_save_and_load_map_location():
    model = torch.nn.Linear(4, 3).to("nova")
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer)
    assert all(v.device.type == "nova" for v in state.values())
    buffer.seek(0)
    on_cpu = torch.load(buffer, map_location="cpu")
    assert torch.equal(on_cpu["weight"], model.weight.detach().cpu())
    buffer = io.BytesIO()
    torch.save({k: v.cpu() for k, v in on_cpu.items()}, buffer)
    buffer.seek(0)
    back = torch.load(buffer, map_location="nova")
    assert back["bias"].device.type == "nova"
    assert torch.equal(back["bias"].cpu(), on_cpu["bias"])


def test_autocast_bfloat16_matches_cpu_autocast():
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 8)
    x = torch.randn(4, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = model(x)
    device_model = model.to("nova")
    with torch.autocast("nova", dtype=torch.bfloat16):
        y = device_model(x.to("nova"))
        probabilities = y.softmax(-1)
    assert y.dtype == torch.bfloat16 and probabilities.dtype == torch.float32
    assert torch.equal(y.cpu(), expected)


def test_events_measure_simulated_time():
    x = torch.randn(64, 64).to("nova")
    start, end = torch.nova.Event(enable_timing=True), torch.nova.Event(enable_timing=True)
    start.record()
    y = x @ x
    end.record()
    torch.nova.synchronize()
    elapsed = start.elapsed_time(end)
    assert elapsed > 0
    # The launch cost alone (5600 cycles at 1.4 GHz) is 4 us.
    assert elapsed >= 0.004
    with pytest.raises(RuntimeError, match="enable_timing"):
        torch.nova.Event().elapsed_time(end)
    side = torch.nova.Stream()
    with torch.nova.stream(side):
        before = side.clock_ns
        y = y + 1
        assert side.clock_ns > before
    assert torch.nova.current_stream() is torch.nova.default_stream()


def test_fallback_warns_and_strict_mode_raises():
    x = torch.randn(4, 16)
    expected = torch.fft.rfft(x).abs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = torch.fft.rfft(x.to("nova")).abs()
    assert y.device.type == "nova"
    torch.testing.assert_close(y.cpu(), expected, rtol=1e-5, atol=1e-5)
    messages = [str(w.message) for w in caught if "nova:" in str(w.message)]
    assert any("aten._fft_r2c.default ran on the CPU" in m for m in messages), messages
    assert torch.nova.fallback_report()["aten._fft_r2c.default"] >= 1
    torch.nova.set_fallback("error")
    with pytest.raises(NovaFallbackError, match=r"aten\._fft_r2c\.default.*strict mode[\s\S]*test_device_basics\.py"):
        torch.fft.rfft(x.to("nova"))
    with pytest.raises(nova.NovaError, match="fallback mode must be one of"):
        torch.nova.set_fallback("sometimes")


def test_mixed_devices_are_an_error():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.randn(3).to("nova") + torch.randn(3)


def test_profile_and_chrome_trace(tmp_path):
    import json

    torch.nova.reset_profile()
    x = torch.randn(8, 8).to("nova")
    (x @ x).relu()
    rows = torch.nova.profile_rows()
    assert rows["aten.mm.out"]["calls"] == 1 and rows["aten.mm.out"]["time_ns"] > 0
    assert "aten.mm.out" in torch.nova.profile_table()
    torch.nova.write_trace(tmp_path / "trace.json")
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert [e["name"] for e in events] == ["aten.mm.out", "aten.relu.default"]
    assert events[1]["ts"] >= events[0]["ts"] + events[0]["dur"]
