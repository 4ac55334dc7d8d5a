"""Targets load and validate; the simulator checks its inputs."""

from pathlib import Path

import numpy as np
import pytest

from asm import ROOT, Asm, target
from nova.sim import InputError, ProgramError, Simulator, TargetError, load_target, target_from_dict


@pytest.mark.parametrize("path", sorted((ROOT / "targets").glob("*.json")), ids=lambda p: p.stem)
def test_every_target_loads(path):
    t = load_target(path)
    assert t.macs_per_cycle == t.matrix_rows * t.matrix_cols
    assert t.peak_flops == 2 * t.macs_per_cycle * t.clock_mhz * 1e6
    assert t.hbm_bytes_per_cycle == pytest.approx(t.hbm_gbps * 1e3 / t.clock_mhz)


def test_target_errors():
    d = load_target(ROOT / "targets" / "tiny.json").as_dict()
    with pytest.raises(TargetError, match="missing key.*hbm_gbps"):
        target_from_dict({k: v for k, v in d.items() if k != "hbm_gbps"})
    with pytest.raises(TargetError, match="'topology' must be one of"):
        target_from_dict({**d, "topology": "mesh"})
    with pytest.raises(TargetError, match=r"'chips' must be in \[1, 65536\], got 0"):
        target_from_dict({**d, "chips": 0})


def io_program():
    s = Asm()
    s.input(0, "x", "f32", [4, 4], 0)
    s.input(1, "w", "bf16", [4], 64)
    s.output(2, "y", "f32", [4, 4], 128)
    s.li(1, 0); s.li(2, 128)
    t = s.tile("hbm", "f32", [4, 4])
    s.dma(1, t, 2, t, signal=[0])
    s.sem_wait([0])
    return s.program(target("tiny", chips=1))


def test_inputs_by_index_or_name_and_outputs():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    out, rep = Simulator(io_program()).run({"x": x, 1: np.ones(4, np.float32)})
    np.testing.assert_array_equal(out[2], x)
    np.testing.assert_array_equal(out["y"], x)


@pytest.mark.parametrize("inputs,msg", [
    ({"x": np.zeros((4, 5), np.float32), "w": np.ones(4, np.float32)}, r"input 0 \('x'\) must have shape \[4, 4\], got \[4, 5\]"),
    ({"x": np.zeros((4, 4), np.float64), "w": np.ones(4, np.float32)}, r"input 0 \('x'\) must be f32, got float64"),
    ({"x": np.zeros((4, 4), np.float32)}, r"input 1 \('w'\) was not given"),
    ({"nope": 1}, r"no input 'nope'"),
])
def test_bad_inputs_raise(inputs, msg):
    with pytest.raises(InputError, match=msg):
        Simulator(io_program()).run(inputs)


def test_program_validation():
    s = Asm()
    s.dma(0, 0, 0, 0, queue=5)
    s.tile("hbm", "f32", [4])
    with pytest.raises(ProgramError, match="dma queue 5 but the target has 2"):
        Simulator(s.program(target("tiny", chips=1)))
        Simulator(s.program(target("tiny", chips=1))).run()
