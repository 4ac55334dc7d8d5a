"""The activation engine (docs/isa.md 2.7): vunary / vscalar / vcopy on their own queue,
the vector engine's numbers, the target's activation costs, semaphores as on every other
engine, and the compiled timing loop alike."""

import numpy as np
import pytest

from asm import Asm, target
from nova.binary import opcodes as oc
from nova.sim import ProgramError, Simulator, TargetError, fast_timing

ACT = {"lanes": 8, "overhead_cycles": 10, "elementwise_factor": 1, "transcendental_factor": 2}
SHAPE = (4, 64)  # 256 elements: 32 lane-rows of tiny's 8 lanes
X, Y1, Y2 = 0, 4096, 8192


def program(act_engine: int, chain: bool = False):
    """x -> exp(x) on one engine and x * 3 on ``act_engine``, independent (or, with
    ``chain``, the second reading the first's result behind a semaphore)."""
    s = Asm()
    s.input(0, "x", "f32", SHAPE, X)
    s.output(1, "y1", "f32", SHAPE, Y1)
    s.output(2, "y2", "f32", SHAPE, Y2)
    h, sx, sy1, sy2 = s.tile("hbm", "f32", SHAPE), s.tile("sram", "f32", SHAPE), \
        s.tile("sram", "f32", SHAPE), s.tile("sram", "f32", SHAPE)
    for r, v in ((1, X), (2, Y1), (3, Y2), (11, 0), (12, 4096), (13, 8192)):
        s.li(r, v)
    s.dma(1, h, 11, sx, queue=0, signal=[0])
    s.sem_wait([0])
    s.vunary("exp", 11, sx, 12, sy1, signal=[1, 3] if chain else [1])
    if chain:
        s.vscalar("mul", 12, sy1, 3.0, 13, sy2, engine=act_engine, wait=[3], signal=[2])
    else:
        s.vscalar("mul", 11, sx, 3.0, 13, sy2, engine=act_engine, signal=[2])
    s.sem_wait([1, 2])
    s.dma(12, sy1, 2, h, queue=0, signal=[4])
    s.dma(13, sy2, 3, h, queue=1, signal=[5])
    s.sem_wait([4, 5])
    return s.program(target("tiny", chips=1, activation=ACT))


x = (np.random.default_rng(0).standard_normal(SHAPE) * 0.5).astype(np.float32)


def engines(report) -> dict[str, tuple[int, float]]:
    return {e.engine: (e.instructions, e.busy_ns) for e in report.engines}


def test_same_numbers_on_either_engine_and_concurrent_queues():
    out_v, rep_v = Simulator(program(oc.VECTOR)).run({"x": x})
    out_a, rep_a = Simulator(program(oc.ACTIVATION)).run({"x": x})
    for k in ("y1", "y2"):
        np.testing.assert_array_equal(out_a[k], out_v[k])
    np.testing.assert_allclose(out_a["y2"], x * 3, rtol=1e-6)
    np.testing.assert_allclose(out_a["y1"], np.exp(x), rtol=1e-6)
    ev, ea = engines(rep_v), engines(rep_a)
    # tiny: 1 GHz; vector 16 + 32 * c cycles, activation 10 + 32 * 1 (mul is plain)
    assert ea["activation"] == (1, pytest.approx(10 + 32 * 1))
    assert ev["activation"] == (0, 0.0)
    assert ev["vector"][0] == 2 and ea["vector"][0] == 1
    # The two ran at once on the activation target: the step is shorter by about
    # the shorter instruction's time.
    assert rep_a.time_ns < rep_v.time_ns - 30
    # The bound from the work prices each instruction on its engine: exp on vector
    # (256 * 4 / 8 cycles), mul on activation (256 * 1 / 8).
    assert (rep_a.bounds[0].vector_ns, rep_a.bounds[0].activation_ns) == (128, 32)
    assert (rep_v.bounds[0].vector_ns, rep_v.bounds[0].activation_ns) == (160, 0)


def test_transcendental_factor_and_semaphores_between_vector_and_activation():
    s = Asm()
    s.input(0, "x", "f32", SHAPE, X)
    s.output(1, "y", "f32", SHAPE, Y1)
    h, a, b = s.tile("hbm", "f32", SHAPE), s.tile("sram", "f32", SHAPE), s.tile("sram", "f32", SHAPE)
    for r, v in ((1, X), (2, Y1), (11, 0), (12, 4096)):
        s.li(r, v)
    s.dma(1, h, 11, a, queue=0, signal=[0])
    s.sem_wait([0])
    # vector -> activation -> vector, each waiting for the one before
    s.vscalar("add", 11, a, 1.0, 12, b, signal=[1])
    s.vunary("tanh", 12, b, 11, a, engine=oc.ACTIVATION, wait=[1], signal=[2])
    s.vscalar("mul", 11, a, 2.0, 12, b, wait=[2], signal=[3])
    s.sem_wait([3])
    s.dma(12, b, 2, h, queue=0, signal=[4])
    s.sem_wait([4])
    out, rep = Simulator(s.program(target("tiny", chips=1, activation=ACT))).run({"x": x})
    np.testing.assert_allclose(out["y"], np.tanh(x + 1) * 2, rtol=1e-6)
    assert engines(rep)["activation"] == (1, pytest.approx(10 + 32 * 2))


def test_a_target_without_an_activation_engine_rejects_the_program():
    prog = program(oc.ACTIVATION)
    with pytest.raises(ProgramError, match="activation engine but the target has none"):
        Simulator(prog.__class__(target("tiny", chips=1), prog.chips, prog.io, prog.constants)).run({"x": x})


def test_compiled_timing_loop_times_the_activation_engine_alike(monkeypatch):
    prog = program(oc.ACTIVATION, chain=True)
    _, full = Simulator(prog).run({"x": x})
    took = []
    real = fast_timing.run
    monkeypatch.setattr("nova.sim.engines.fast_timing.run", lambda m: took.append(real(m)) or took[-1])
    _, fast = Simulator(prog, functional=False).run()
    assert took == [fast_timing.available()]
    monkeypatch.setenv("NOVA_SIM_FAST", "0")
    _, slow = Simulator(prog, functional=False).run()
    assert fast.time_ns == slow.time_ns == full.time_ns
    assert engines(fast) == engines(slow) == engines(full)
    assert engines(fast)["activation"][0] == 1


@pytest.mark.parametrize("block,msg", [
    ({"lanes": 8, "overhead_cycles": 10, "elementwise_factor": 1}, "missing key.*'transcendental_factor'"),
    ({**ACT, "latency": 3}, "unknown key.*'latency'"),
    ({**ACT, "lanes": 0}, "'lanes' must be in \\[1, 65536\\]"),
    ([8], "key 'activation' must be an object"),
])
def test_the_activation_block_is_checked_key_by_key(block, msg):
    with pytest.raises(TargetError, match=msg):
        target("tiny", activation=block)
