"""Donated inputs (``nova.aliasing_output``): the program writes the result
into the input's buffer, the binary lists the output in place over it, and a
resident program keeps it between runs (``RESIDENT``)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import torch

from nova.compiler.compile import compile_linalg
from nova.compiler.options import TargetOptions
from nova.runtime import BinaryFormatError, load_binary
from nova.binary.format import SectionType
from nova.runtime.program import RESIDENT, CompiledProgram, ProgramInputError

from test_binary_reject import rejects, seal, section

# p <- p - lr * g, p donated to the result: one SGD step per run.
SGD = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#s = affine_map<(d0, d1) -> ()>
func.func @forward(%p: tensor<64x96xf32> {nova.aliasing_output = 0 : i64},
                   %g: tensor<64x96xf32>, %lr: tensor<f32>) -> (tensor<64x96xf32>, tensor<f32>) {
  %e = tensor.empty() : tensor<64x96xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #s, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %g, %lr : tensor<64x96xf32>, tensor<64x96xf32>, tensor<f32>) outs(%e : tensor<64x96xf32>) {
  ^bb0(%a: f32, %b: f32, %l: f32, %o: f32):
    %m = arith.mulf %l, %b : f32
    %d = arith.subf %a, %m : f32
    linalg.yield %d : f32
  } -> tensor<64x96xf32>
  return %r, %lr : tensor<64x96xf32>, tensor<f32>
}
"""


@pytest.fixture(scope="module")
def sgd() -> bytes:
    return compile_linalg(SGD, TargetOptions(name="nova-t1", chips=1)).binary


def _arrays(seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((64, 96)).astype(np.float32),
            rng.standard_normal((64, 96)).astype(np.float32), np.array(0.5, np.float32))


def test_binary_lists_the_result_in_place_over_its_input(sgd: bytes) -> None:
    binary = load_binary(sgd)
    p = next(e for e in binary.inputs if e.index == 0)
    out = sorted(binary.outputs, key=lambda e: e.index)
    assert out[0].aliases == 0 and out[0].address == p.address
    assert out[1].aliases is None  # lr is returned as a copy: not donated


def test_update_runs_in_place_and_stays_resident(sgd: bytes) -> None:
    p, g, lr = _arrays()
    program = CompiledProgram(sgd)
    first, _ = program.run(p, g, lr)
    np.testing.assert_array_equal(first.numpy(), p - lr * g)
    # The parameter is not written again: the run updates what HBM holds.
    second, _ = program.run(RESIDENT, g, lr)
    expected = (p - lr * g) - lr * g
    np.testing.assert_array_equal(second.numpy(), expected)
    np.testing.assert_array_equal(program.read_input(0).numpy(), expected)
    # Only the loss-like second output read back: the first stays in HBM.
    skipped, scalar = program.run(RESIDENT, g, lr, read=[1])
    assert skipped is None and float(scalar) == 0.5
    np.testing.assert_array_equal(program.read_output(0).numpy(), expected - lr * g)
    # A host value passed again replaces the resident one.
    again, _ = program.run(p, g, lr)
    np.testing.assert_array_equal(again.numpy(), p - lr * g)


def test_resident_needs_an_earlier_run(sgd: bytes) -> None:
    _, g, lr = _arrays()
    with pytest.raises(ProgramInputError, match="RESIDENT inputs need an earlier untraced run"):
        CompiledProgram(sgd).run(RESIDENT, g, lr)


def test_timing_only_accepts_resident_inputs(sgd: bytes) -> None:
    p, g, lr = _arrays()
    program = CompiledProgram(sgd)
    program.run(p, g, lr)
    functional = program.report.time_ns
    program.run(RESIDENT, g, lr, timing_only=True)
    assert program.report.time_ns == functional


def _io_entry_offset(data: bytearray, name: str) -> int:
    io = section(data, SectionType.IO)
    count = struct.unpack_from("<I", data, io.offset)[0]
    for k in range(count):
        at = io.offset + 8 + 96 * k
        noff, nsize = struct.unpack_from("<II", data, at + 8)
        if bytes(data[io.offset + noff:io.offset + noff + nsize]).decode() == name:
            return at
    raise KeyError(name)


def test_reader_rejects_bad_in_place_entries(sgd: bytes) -> None:
    binary = load_binary(sgd)
    out = sorted(binary.outputs, key=lambda e: e.index)
    data = bytearray(sgd)
    data[_io_entry_offset(data, out[0].name) + 7] = 2
    rejects(seal(data), "unknown flags 0x2")
    data = bytearray(sgd)
    inp = next(e for e in binary.inputs if e.index == 0)
    data[_io_entry_offset(data, inp.name) + 7] = 1
    rejects(seal(data), "only an output can be written in place")
    # An in-place output moved off its input.
    data = bytearray(sgd)
    struct.pack_into("<Q", data, _io_entry_offset(data, out[0].name) + 16, out[1].address + 4096)
    with pytest.raises(BinaryFormatError):
        load_binary(seal(data))


def test_non_donated_inputs_are_never_written() -> None:
    """Bufferization may not write into an input that is not donated (a
    resident program relies on it): the scatter below gets a copy."""
    program_text = """
func.func @forward(%x: tensor<8xf32>, %v: tensor<2xf32>) -> tensor<8xf32> {
  %r = tensor.insert_slice %v into %x[2] [2] [1] : tensor<2xf32> into tensor<8xf32>
  return %r : tensor<8xf32>
}
"""
    program = CompiledProgram(compile_linalg(program_text, TargetOptions(name="nova-t1", chips=1)).binary)
    x = np.arange(8, dtype=np.float32)
    v = np.array([-1, -2], np.float32)
    out = program.run(x, v)[0].numpy()
    np.testing.assert_array_equal(out, [0, 1, -1, -2, 4, 5, 6, 7])
    np.testing.assert_array_equal(program.read_input(0).numpy(), x)
    np.testing.assert_array_equal(program.run(RESIDENT, v)[0].numpy(), out)
