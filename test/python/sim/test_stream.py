"""The precomputed sequencer stream (nova.sim.stream) gives exactly the interpreter's
results: times, counts, bytes, outputs, registers and the same errors; the timing-only
prechecks and the chunked transposing DMA copy change nothing observable."""

import numpy as np
import pytest

from asm import Asm, target
from nova.sim import Simulator
from nova.sim import engines, machine, stream
from nova.sim.engines_dma import copy_tile, transpose_axis
from nova.sim.memory import TileAccess
from nova.sim.program import TileDesc
from test_collectives import coll_program, data
from test_matmul import tiled_matmul_bias
from test_timing_only import same_times


def run(prog, inputs=None, *, mode, functional=True, per_chip=None, **kw):
    """(outputs, report, machine) or the exception. mode "interp": the interpreter
    (it records the stream); "walk": replaying the stream stream.walk_stream computes;
    "recorded": replaying the stream an interpreted run of ``prog`` recorded."""
    saved = engines.cached_stream
    if mode == "interp":
        engines.cached_stream = lambda *a: None
    elif mode == "walk":
        engines.cached_stream = lambda code, cid, dma, budget: stream.walk_stream(
            code, machine._decoded(code, dma), cid, budget)
    try:
        if mode == "recorded":
            run(prog, inputs, mode="interp", functional=functional, per_chip=per_chip, **kw)
        sim = Simulator(prog, functional=functional, **kw)
        out, rep = sim.run(inputs or {}, per_chip)
        return out, rep, sim.machine
    except Exception as e:  # noqa: BLE001 - compared below
        return e
    finally:
        engines.cached_stream = saved


def same_runs(prog, inputs=None, **kw):
    a = run(prog, inputs, mode="interp", **kw)
    assert not isinstance(a, AssertionError), a
    for mode in ("walk", "recorded"):
        b = run(prog, inputs, mode=mode, **kw)
        if isinstance(a, Exception):
            assert type(a) is type(b) and str(a) == str(b)
            continue
        assert not isinstance(b, Exception), b
        same_times(a[1], b[1])
        assert a[1].memory_bytes == b[1].memory_bytes and a[1].link_utilisation == b[1].link_utilisation
        assert a[2].events == b[2].events
        for ca, cb in zip(a[2].chips, b[2].chips):
            assert (ca.regs, ca.pc, ca.executed, ca.scalar_count) == (cb.regs, cb.pc, cb.executed, cb.scalar_count)
            assert cb.stream is not None  # it replayed a stream
        assert a[0].keys() == b[0].keys()
        for k in a[0]:
            if k == "chips":
                for oa, ob in zip(a[0][k], b[0][k]):
                    assert all(np.array_equal(oa[j], ob[j]) for j in oa)
            else:
                assert np.array_equal(a[0][k], b[0][k])
    if not isinstance(a, Exception):  # what a run records is what the walk computes
        for ch in b[2].chips:
            walked = stream.walk_stream(prog.chips[0] if len(prog.chips) == 1 else prog.chips[ch.id],
                                        ch.code, ch.id, b[2].budget)
            if stream.CUT not in (ch.stream.steps[-1][1], walked.steps[-1][1]):  # (cuts differ)
                assert ch.stream.steps == walked.steps
    return a if isinstance(a, Exception) else b


def uneven_loop(trips: int = 12) -> Asm:
    """Iterations that differ: odd trips copy 8 elements and add, even ones 32 and
    multiply; a DMA queue and the vector queue hand over through semaphores, and more
    than a queue's depth of fills runs without a wait (the sequencer stalls)."""
    s = Asm()
    s.input(0, "x", "f32", [64], 0)
    s.output(1, "y", "f32", [64], 4096)
    small, big = s.tile("hbm", "f32", [8]), s.tile("hbm", "f32", [32])
    ss, sb = s.tile("sram", "f32", [8]), s.tile("sram", "f32", [32])
    s.li(2, 0); s.li(3, 4096); s.li(4, 1024); s.li(6, 2)
    with s.loop(1, 0, trips):
        s.salu("rem", 5, 1, 6)
        s.if_(5, lambda: (s.dma(2, small, 4, ss, signal=[0]),
                          s.vbinary("add", 4, ss, 4, ss, 4, ss, wait=[0], signal=[1]),
                          s.dma(4, ss, 3, small, queue=1, wait=[1], signal=[2])),
              lambda: (s.dma(2, big, 4, sb, signal=[0]),
                       s.vbinary("mul", 4, sb, 4, sb, 4, sb, wait=[0], signal=[1]),
                       s.dma(4, sb, 3, big, queue=1, wait=[1], signal=[2])))
        s.sem_wait([2])
    t = s.tile("sram", "f32", [8])
    s.li(7, 2048)
    with s.loop(8, 0, 40):
        s.vfill(1.0, 7, t)
    s.sem_signal([3])
    s.nop(engine=0, wait=[3], signal=[4])
    s.sem_wait([4])
    return s


@pytest.mark.parametrize("functional", [True, False], ids=["functional", "timing-only"])
def test_loop_with_differing_iterations(functional):
    prog = uneven_loop().program(target("tiny", chips=1))
    x = np.arange(64, dtype=np.float32)
    r = same_runs(prog, {"x": x}, functional=functional)
    assert r[2].chips[0].steps is not None  # it ran on the stream
    if functional:  # the last trip (odd) added the first 8 elements, an even one squared the rest
        assert np.array_equal(r[0]["y"][8:32], x[8:32] * x[8:32])


@pytest.mark.parametrize("functional", [True, False], ids=["functional", "timing-only"])
def test_tiled_matmul(functional):
    prog = tiled_matmul_bias(16, 24, 16, 8).program(target("tiny", chips=1))
    rng = np.random.default_rng(0)
    host = {"a": rng.standard_normal((16, 24)).astype(np.float32),
            "b": rng.standard_normal((24, 16)).astype(np.float32),
            "bias": rng.standard_normal(16).astype(np.float32)}
    same_runs(prog, host, functional=functional)


@pytest.mark.parametrize("functional", [True, False], ids=["functional", "timing-only"])
def test_multi_chip_collective(functional):
    chips = 4
    g = [list(range(chips))]
    prog = coll_program(lambda s, ti, to: s.all_reduce("sum", 1, ti, 2, to, g, signal=[0]),
                        (8, 8), (8, 8), chips, "ring")
    xs = data(chips, (8, 8))
    r = same_runs(prog, functional=functional, per_chip={c: {"x": xs[c]} for c in range(chips)})
    assert all(ch.steps is not None for ch in r[2].chips)
    if functional:
        assert np.allclose(r[0]["y"], sum(xs), atol=1e-5)


@pytest.mark.parametrize("functional", [True, False], ids=["functional", "timing-only"])
@pytest.mark.parametrize("limit", [1, 7, 50])
def test_a_cut_stream_hands_over_to_the_interpreter(limit, functional, monkeypatch):
    """A stream longer than its limit ends in a cut; the interpreter runs the rest."""
    monkeypatch.setattr(stream, "MAX_STEPS", limit)
    prog = uneven_loop().program(target("tiny", chips=1))
    r = same_runs(prog, {"x": np.arange(64, dtype=np.float32)}, functional=functional)
    assert r[2].chips[0].stream.steps[-1][1] == stream.CUT
    assert r[2].chips[0].steps is None  # handed over


def test_stream_is_reused_across_runs(monkeypatch):
    monkeypatch.setenv("NOVA_SIM_FAST", "0")  # the Python loop (else the first run walks)
    prog = uneven_loop().program(target("tiny", chips=1))
    sim = Simulator(prog, functional=False)
    sim.run()
    assert sim.machine.chips[0].stream is None  # the first run interprets and records
    sim.run()
    first = sim.machine.chips[0].stream
    assert first is not None and sim.machine.chips[0].prechecked
    sim.run()
    assert sim.machine.chips[0].stream is first


def test_a_first_timing_only_run_walks_the_stream(monkeypatch):
    """With the compiled loop, a timing-only run's first run walks the stream
    (walk_stream) and replays it, with the interpreted run's times."""
    prog = uneven_loop().program(target("tiny", chips=1))
    sim = Simulator(prog, functional=False)
    _, walked = sim.run()
    assert sim.machine.chips[0].stream is not None and sim.machine.chips[0].prechecked
    monkeypatch.setenv("NOVA_SIM_FAST", "0")
    _, interpreted = Simulator(uneven_loop().program(target("tiny", chips=1)), functional=False).run()
    assert walked.time_ns == interpreted.time_ns
    assert [e.busy_ns for e in walked.engines] == [e.busy_ns for e in interpreted.engines]


def scalar_loop(trips=10**12):
    s = Asm()
    s.li(2, 0); s.li(3, 1)
    with s.loop(1, 0, trips):
        s.at("model.py:7:5")
        s.salu("add", 2, 2, 3)
    return s


def engine_loop(trips=10**12):
    s = Asm()
    t = s.tile("sram", "f32", (1, 8))
    with s.loop(1, 0, trips):
        s.at("model.py:9:5")
        s.vfill(1.0, 0, t, signal=[0])
        s.sem_wait([0])
    return s


def wait_then_spin():
    """A long fill waited on, then scalar trips: the sequencer passes the time budget at
    a back-edge of straight scalar code, before any event does (the stream hands over
    to the interpreter, which raises)."""
    s = Asm()
    s.vfill(1.0, 0, s.tile("sram", "f32", [3072]), signal=[0])
    s.sem_wait([0])
    s.li(2, 0); s.li(3, 1)
    with s.loop(1, 0, 100):
        s.at("model.py:11:5")
        s.salu("add", 2, 2, 3)
    return s


def straight_line(n=50):
    s = Asm()
    for i in range(n):
        s.li(1, i)
    return s


@pytest.mark.parametrize("functional", [True, False], ids=["functional", "timing-only"])
@pytest.mark.parametrize("build,budget", [
    (scalar_loop, {"max_instructions": 5000}), (engine_loop, {"max_instructions": 5000}),
    (scalar_loop, {"max_time_s": 2e-6}), (engine_loop, {"max_time_s": 2e-6}),
    (lambda: engine_loop(50), {"max_time_s": 5e-7}), (straight_line, {"max_instructions": 20}),
    (wait_then_spin, {"max_time_s": 5e-7}),
], ids=["scalar-instr", "engine-instr", "scalar-time", "engine-time", "short-time", "straight", "spin-time"])
def test_budget_errors_are_the_interpreters(build, budget, functional, monkeypatch):
    monkeypatch.setattr(stream, "MAX_STEPS", 20_000)  # walks of endless loops stop there
    handed = []
    real = engines.Machine._to_interpreter
    monkeypatch.setattr(engines.Machine, "_to_interpreter", lambda m, *a: (handed.append(a), real(m, *a)))
    e = same_runs(build().program(target("tiny", chips=1)), functional=functional, **budget)
    assert isinstance(e, Exception)
    assert handed or build is not wait_then_spin  # the hand-over at a back-edge is exercised


def faulting(kind):
    s = Asm()
    if kind == "div":
        s.li(1, 3); s.li(2, 0)
        with s.loop(4, 0, 3):
            s.salu("div", 3, 1, 2)
    elif kind == "deadlock":
        t = s.tile("sram", "f32", [8])
        with s.loop(4, 0, 3):
            s.vfill(1.0, 0, t, wait=[5])
        s.sem_wait([7])
    elif kind == "bounds":
        s.li(1, 16384 - 16)
        s.vfill(0.0, 1, s.tile("sram", "f32", [8]))
    return s


@pytest.mark.parametrize("functional", [True, False], ids=["functional", "timing-only"])
@pytest.mark.parametrize("kind", ["div", "deadlock", "bounds"])
def test_faults_are_the_interpreters(kind, functional):
    e = same_runs(faulting(kind).program(target("tiny", chips=1)), functional=functional)
    assert isinstance(e, Exception)


def test_halted_chip_keeps_its_registers():
    s = scalar_loop(1000)
    r = same_runs(s.program(target("tiny", chips=1)))
    assert r[2].chips[0].regs[2] == 1000


@pytest.mark.parametrize("shape,src_strides,dst_strides", [
    ((96, 80), (1, 96), (80, 1)),          # a k-major weight strip
    ((3, 70, 9), (630, 1, 70), (630, 9, 1)),
    ((64, 64), (64, 1), (64, 1)),          # not transposing: one assignment
])
def test_chunked_transposing_copy_is_an_assignment(shape, src_strides, dst_strides):
    buf = np.zeros(1 << 16, np.uint8)
    n = int(np.prod(shape))
    src_t = TileAccess(TileDesc(0, 0, shape, src_strides))
    dst_t = TileAccess(TileDesc(1, 0, shape, dst_strides))
    src = np.ndarray(shape, "<f4", buf, 0, src_t.bstrides)
    dst = np.ndarray(shape, "<f4", buf, 4 * n + 64, dst_t.bstrides)
    src[...] = np.arange(n, dtype=np.float32).reshape(shape)
    axis = transpose_axis(src_t, dst_t)
    assert (axis >= 0) == (src_strides != dst_strides)
    copy_tile(dst, src, axis)
    assert np.array_equal(dst, src)
