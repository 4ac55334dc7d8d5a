"""Outputs kept in simulated device memory (``run(keep=...)``): a DeviceTensor
handle, consumed by another program by a device-to-device copy, moved out of
the way when its program runs again, freed with its last handle; never read
or written by the host (``traffic``)."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

from nova.compiler.compile import compile_linalg
from nova.compiler.options import TargetOptions
from nova.runtime.device import DeviceTensor, DeviceTensorError, live
from nova.runtime.program import CompiledProgram, ProgramInputError
from nova.sim.simulator import device_copy_ns

_ELEMENTWISE = """
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%x: tensor<32x48xf32>) -> (tensor<32x48xf32>, tensor<32x48xf32>) {{
  %e = tensor.empty() : tensor<32x48xf32>
  %c = arith.constant {c} : f32
  %r = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%x : tensor<32x48xf32>) outs(%e : tensor<32x48xf32>) {{
  ^bb0(%a: f32, %o: f32):
    %m = arith.{op} %a, %c : f32
    linalg.yield %m : f32
  }} -> tensor<32x48xf32>
  %s = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%x : tensor<32x48xf32>) outs(%e : tensor<32x48xf32>) {{
  ^bb0(%a: f32, %o: f32):
    %m = arith.subf %a, %c : f32
    linalg.yield %m : f32
  }} -> tensor<32x48xf32>
  return %r, %s : tensor<32x48xf32>, tensor<32x48xf32>
}}
"""
NBYTES = 32 * 48 * 4


def _program(op: str, c: str) -> CompiledProgram:
    mlir = _ELEMENTWISE.format(op=op, c=c)
    return CompiledProgram(compile_linalg(mlir, TargetOptions(name="nova-t1", chips=1)).binary)


@pytest.fixture(scope="module")
def programs() -> tuple[bytes, bytes]:
    """A: (2x, x - 2); B: (y + 1, y - 1)."""
    return _program("mulf", "2.0").binary_bytes, _program("addf", "1.0").binary_bytes


def test_kept_output_feeds_another_program_without_the_host(programs) -> None:
    a, b = CompiledProgram(programs[0]), CompiledProgram(programs[1])
    x = torch.randn(32, 48)
    doubled, minus = a.run(x, keep=[0])
    assert isinstance(doubled, DeviceTensor) and doubled.shape == (32, 48)
    assert doubled.dtype == torch.float32
    torch.testing.assert_close(minus, x - 2)
    assert (a.last_traffic.host_read, a.last_traffic.kept, a.last_traffic.kept_bytes) == (
        NBYTES, 1, NBYTES)
    plus, _ = b.run(doubled)
    torch.testing.assert_close(plus, x * 2 + 1)
    # B's input came device-to-device: no host write, one DMA's time charged.
    traffic = b.last_traffic
    assert (traffic.host_written, traffic.device_in) == (0, NBYTES)
    target = b.resident_simulator().target
    assert traffic.device_ns == device_copy_ns(target, NBYTES)
    assert traffic.device_ns == pytest.approx(target.dma_setup_ns + 2 * NBYTES / target.hbm_gbps)


def test_kept_value_survives_its_program_running_again(programs) -> None:
    a, b = CompiledProgram(programs[0]), CompiledProgram(programs[1])
    x1, x2 = torch.randn(32, 48), torch.randn(32, 48)
    first, _ = a.run(x1, keep=[0])
    second, _ = a.run(x2, keep=[0])  # overwrites the output buffer: the first moves out
    assert a.last_traffic.moved_bytes == NBYTES and a.last_traffic.device_ns > 0
    assert not first.device_value.in_place and second.device_value.in_place
    torch.testing.assert_close(b.run(first)[0], x1 * 2 + 1)
    torch.testing.assert_close(b.run(second)[0], x2 * 2 + 1)
    torch.testing.assert_close(first.to_host(), x1 * 2)


def test_values_are_freed_with_their_last_handle(programs) -> None:
    gc.collect()
    before = live()
    a = CompiledProgram(programs[0])
    kept, _ = a.run(torch.randn(32, 48), keep=[0])
    alias = kept.detach()
    assert isinstance(alias, DeviceTensor) and alias.device_value is kept.device_value
    assert live() == (before[0] + 1, before[1] + NBYTES)
    del kept
    assert live()[0] == before[0] + 1  # the detached alias still holds it
    del alias
    assert live() == before


def test_a_handle_used_for_its_data_is_a_clear_error(programs) -> None:
    a = CompiledProgram(programs[0])
    kept, _ = a.run(torch.randn(32, 48), keep=[0])
    for use in (lambda: kept + 1, lambda: kept.sum(), lambda: kept.numpy(),
                lambda: kept.item(), lambda: np.asarray(kept), lambda: kept.clone()):
        with pytest.raises(DeviceTensorError, match="kept in simulated device memory"):
            use()
    assert "DeviceTensor(shape=[32, 48]" in repr(kept)


def test_a_handle_of_the_wrong_shape_is_refused(programs) -> None:
    a = CompiledProgram(programs[0])
    kept, _ = a.run(torch.randn(32, 48), keep=[0])
    other = CompiledProgram(compile_linalg(
        _ELEMENTWISE.format(op="addf", c="1.0").replace("32x48", "48x32"),
        TargetOptions(name="nova-t1", chips=1)).binary)
    with pytest.raises(ProgramInputError, match=r"takes f32\[48, 32\].*holds f32\[32, 48\]"):
        other.run(kept)
    with pytest.raises(ProgramInputError, match="keep= takes positions"):
        a.run(torch.randn(32, 48), keep=[5])
