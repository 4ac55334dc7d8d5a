"""The sequencer's stream (nova.sim.stream): the scalar code is interpreted once, without
time, and every run replays the steps. A stream walked in parts (a run longer than
MAX_STEPS), replayed on the compiled or the Python loop, traced or not, gives the same
results: times, counts, bytes, outputs, registers and errors; the errors are the ones
the step-by-step interpreter it replaced raised (pinned below); the timing-only
prechecks and the chunked transposing DMA copy change nothing observable."""

import numpy as np
import pytest

from asm import Asm, target
from nova.sim import Simulator
from nova.sim import engines, machine, stream
from nova.sim.engines_dma import copy_tile, transpose_axis
from nova.sim.errors import BudgetExceededError, DeadlockError, MemoryFaultError, ScalarFaultError
from nova.sim.memory import TileAccess
from nova.sim.program import TileDesc
from nova.sim.watchdog import Budget
from test_collectives import coll_program, data
from test_matmul import tiled_matmul_bias
from test_timing_only import same_times

#: Stream parts (stream.MAX_STEPS) the runs are compared at: one whole stream, and
#: parts of 50, 7 and 1 dynamic instructions.
PARTS = (None, 50, 7, 1)


def run(prog, inputs=None, *, parts=None, fast=True, functional=True, per_chip=None, **kw):
    """(outputs, report, machine) or the exception, with a stream walked afresh in parts
    of ``parts`` dynamic instructions (None: whole), on the compiled loop or not."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engines, "cached_stream", lambda *a: None)  # walked with these parts
        if parts is not None:
            mp.setattr(stream, "MAX_STEPS", parts)
        mp.setenv("NOVA_SIM_FAST", "1" if fast else "0")
        try:
            sim = Simulator(prog, functional=functional, **kw)
            out, rep = sim.run(inputs or {}, per_chip)
            return out, rep, sim.machine
        except Exception as e:  # noqa: BLE001 - compared below
            return e


def same_runs(prog, inputs=None, **kw):
    """The run on one whole stream, checked equal to runs on streams in parts and on
    the Python loop."""
    a = run(prog, inputs, **kw)
    assert not isinstance(a, AssertionError), a
    for parts, fast in [(p, True) for p in PARTS[1:]] + [(None, False), (7, False)]:
        b = run(prog, inputs, parts=parts, fast=fast, **kw)
        if isinstance(a, Exception):
            assert type(a) is type(b) and str(a) == str(b)
            continue
        assert not isinstance(b, Exception), b
        same_times(a[1], b[1])
        assert a[1].memory_bytes == b[1].memory_bytes and a[1].link_utilisation == b[1].link_utilisation
        assert a[2].events == b[2].events
        for ca, cb in zip(a[2].chips, b[2].chips):
            assert (ca.regs, ca.pc, ca.executed, ca.scalar_count) == (cb.regs, cb.pc, cb.executed, cb.scalar_count)
        assert a[0].keys() == b[0].keys()
        for k in a[0]:
            if k == "chips":
                for oa, ob in zip(a[0][k], b[0][k]):
                    assert all(np.array_equal(oa[j], ob[j]) for j in oa)
            else:
                assert np.array_equal(a[0][k], b[0][k])
    return a


def dispatched(prog, cid, parts):
    """The dispatches, semaphore operations and halt of chip ``cid``'s stream walked in
    parts of ``parts`` dynamic instructions (each CUT step walked on from its state)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stream, "MAX_STEPS", parts)
        code = prog.chips[cid]
        part = stream.walk_stream(code, machine._decoded(code, prog.target.dma_engines), cid, Budget())
        steps, scalars = [], 0
        while True:
            steps += [st[1:7] for st in part.steps if st[1] != stream.CUT]
            scalars += sum(st[0] for st in part.steps)
            if part.steps[-1][1] != stream.CUT:
                return steps, scalars, part.final
            part = stream.continue_stream(part.steps[-1][2], Budget())


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


@pytest.mark.parametrize("parts", [1, 7, 50])
def test_a_stream_walked_in_parts_is_the_whole_stream(parts):
    """Each part ends in a CUT holding the scalar state; the next part walks on from it:
    the same dispatches, register operands and semaphore operations, the same scalar
    instructions between them and the same registers at halt."""
    prog = uneven_loop().program(target("tiny", chips=1))
    whole, scalars, final = dispatched(prog, 0, stream.MAX_STEPS)
    steps, scalars_parts, final_parts = dispatched(prog, 0, parts)
    assert steps == whole and scalars_parts == scalars
    assert (final_parts.pc, final_parts.regs, final_parts.loops) == (final.pc, final.regs, final.loops)


def test_a_run_goes_on_in_parts(monkeypatch):
    """A run longer than MAX_STEPS goes on from each CUT into the next walked part."""
    monkeypatch.setattr(engines, "cached_stream", lambda *a: None)
    monkeypatch.setattr(stream, "MAX_STEPS", 7)
    walked = []
    real = stream.continue_stream
    monkeypatch.setattr(stream, "continue_stream", lambda *a: walked.append(a) or real(*a))
    sim = Simulator(uneven_loop().program(target("tiny", chips=1)))
    out, _ = sim.run({"x": np.arange(64, dtype=np.float32)})
    assert len(walked) > 10 and sim.machine.chips[0].stream.steps[-1][1] == stream.HALT


def test_stream_is_reused_across_runs(monkeypatch):
    monkeypatch.setenv("NOVA_SIM_FAST", "0")  # the Python loop
    prog = uneven_loop().program(target("tiny", chips=1))
    sim = Simulator(prog, functional=False)
    sim.run()
    first = sim.machine.chips[0].stream
    assert first is not None and sim.machine.chips[0].prechecked  # the first run walks it
    sim.run()
    assert sim.machine.chips[0].stream is first
    sim.run()
    assert sim.machine.chips[0].stream is first


def test_a_first_timing_only_run_walks_the_stream(monkeypatch):
    """A timing-only run's first run walks the stream (walk_stream) and replays it on the
    compiled loop, with the Python loop's times."""
    prog = uneven_loop().program(target("tiny", chips=1))
    sim = Simulator(prog, functional=False)
    _, walked = sim.run()
    assert sim.machine.chips[0].stream is not None and sim.machine.chips[0].prechecked
    monkeypatch.setenv("NOVA_SIM_FAST", "0")
    _, interpreted = Simulator(uneven_loop().program(target("tiny", chips=1)), functional=False).run()
    assert walked.time_ns == interpreted.time_ns
    assert [e.busy_ns for e in walked.engines] == [e.busy_ns for e in interpreted.engines]


@pytest.mark.parametrize("functional", [True, False], ids=["functional", "timing-only"])
def test_a_traced_run_replays_the_stream(functional):
    """A traced run replays the stream too, with the untraced run's times, and the
    semaphore FIFOs give each instruction the signals it waited on: the sequencer's
    own sem_signal (-1) or the instance of the engine instruction that signalled."""
    prog = uneven_loop().program(target("tiny", chips=1))
    x = {"x": np.arange(64, dtype=np.float32)}
    _, plain = Simulator(prog, functional=functional).run(x)
    sim = Simulator(prog, functional=functional, trace=True)
    _, traced = sim.run(x)
    assert sim.machine.chips[0].stream is not None
    same_times(plain, traced)
    inst = sim.trace.instances
    nop = next(i for i in inst if i[2] == "nop")
    assert nop[8] == (-1,)  # it waited on the sequencer's sem_signal([3])
    adds = [i for i in inst if i[2] == "vbinary"]
    assert len(adds) == 12 and all(len(a[8]) == 1 and inst[a[8][0]][2] == "dma_copy" for a in adds)


def test_a_traced_sem_wait_consumes_its_signal():
    """The sequencer's sem_wait takes the first signal of s0 (the first fill's), so the
    nop that waits on s0 next is released by the second fill."""
    s = Asm()
    t = s.tile("sram", "f32", [8])
    s.li(1, 0); s.li(2, 64)
    s.vfill(1.0, 1, t, signal=[0])
    s.sem_wait([0])
    s.vfill(2.0, 2, t, signal=[0])
    s.nop(engine=0, wait=[0], signal=[1])
    s.sem_wait([1])
    sim = Simulator(s.program(target("tiny", chips=1)), trace=True)
    sim.run()
    inst = sim.trace.instances
    fills = [j for j, i in enumerate(inst) if i[2] == "vfill"]
    nop = next(i for i in inst if i[2] == "nop")
    assert nop[8] == (fills[1],)


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
    a back-edge of straight scalar code, before any event does (inside one step's scalar
    prefix: the walk finds the back-edge, stream.back_edge_in_prefix)."""
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


#: What the step-by-step interpreter (Sequencer._run_seq, replaced by the walked stream)
#: raised, functional and timing-only alike.
BUDGET_ERRORS = {
    "scalar-instr": 'chip 0: the run exceeded its budget of 5000 instructions per chip (5001 executed) in the loop at instruction 2 (model.py:7:5) (r1 = 2499, bound 1000000000000, step 1); raise it with Simulator(..., max_instructions=N) or NOVA_SIM_MAX_INSTRUCTIONS=N',
    "engine-instr": 'chip 0: the run exceeded its budget of 5000 instructions per chip (5002 executed) in the loop at instruction 0 (model.py:9:5) (r1 = 1667, bound 1000000000000, step 1); raise it with Simulator(..., max_instructions=N) or NOVA_SIM_MAX_INSTRUCTIONS=N',
    "scalar-time": 'chip 0: the run exceeded its budget of 2e-06 simulated seconds (at 2.002e-06 s) in the loop at instruction 2 (model.py:7:5) (r1 = 1000, bound 1000000000000, step 1); raise it with Simulator(..., max_time_s=S) or NOVA_SIM_MAX_TIME_S=S',
    "engine-time": 'chip 0: the run exceeded its budget of 2e-06 simulated seconds (at 2.013e-06 s) in the loop at instruction 0 (model.py:9:5) (r1 = 105, bound 1000000000000, step 1); raise it with Simulator(..., max_time_s=S) or NOVA_SIM_MAX_TIME_S=S',
    "short-time": 'chip 0: the run exceeded its budget of 5e-07 simulated seconds (at 5.12e-07 s) in the loop at instruction 0 (model.py:9:5) (r1 = 26, bound 50, step 1); raise it with Simulator(..., max_time_s=S) or NOVA_SIM_MAX_TIME_S=S',
    "straight": 'chip 0: the run exceeded its budget of 20 instructions per chip (51 executed) in instruction 50 (halt); raise it with Simulator(..., max_instructions=N) or NOVA_SIM_MAX_INSTRUCTIONS=N',
    "spin-time": 'chip 0: the run exceeded its budget of 5e-07 simulated seconds (at 5.01e-07 s) in the loop at instruction 4 (model.py:11:5) (r1 = 49, bound 100, step 1); raise it with Simulator(..., max_time_s=S) or NOVA_SIM_MAX_TIME_S=S',
}
FAULTS = {
    "div": (ScalarFaultError, 'chip 0: instruction 3 (salu): division by zero in salu div'),
    "deadlock": (DeadlockError, 'deadlock: every unfinished engine is blocked forever:\n  chip 0: sequencer at instruction 3 (sem_wait) waits for s7=0\n  chip 0: vector queue head instruction 1 (vfill) waits for semaphores s5=0'),
    "bounds": (MemoryFaultError, 'chip 0: instruction 1 (vfill): access to sram bytes [16368, 16400) is outside its capacity of 16384 bytes'),
}


@pytest.mark.parametrize("functional", [True, False], ids=["functional", "timing-only"])
@pytest.mark.parametrize("case,build,budget", [
    ("scalar-instr", scalar_loop, {"max_instructions": 5000}),
    ("engine-instr", engine_loop, {"max_instructions": 5000}),
    ("scalar-time", scalar_loop, {"max_time_s": 2e-6}), ("engine-time", engine_loop, {"max_time_s": 2e-6}),
    ("short-time", lambda: engine_loop(50), {"max_time_s": 5e-7}),
    ("straight", straight_line, {"max_instructions": 20}), ("spin-time", wait_then_spin, {"max_time_s": 5e-7}),
], ids=lambda v: v if isinstance(v, str) else "")
def test_budget_errors_are_the_interpreters(case, build, budget, functional, monkeypatch):
    monkeypatch.setattr(stream, "MAX_STEPS", 20_000)  # walks of endless loops stop there
    found = []
    real = stream.back_edge_in_prefix
    monkeypatch.setattr(stream, "back_edge_in_prefix", lambda *a: found.append(real(*a)) or found[-1])
    e = same_runs(build().program(target("tiny", chips=1)), functional=functional, **budget)
    assert isinstance(e, BudgetExceededError)
    assert str(e) == BUDGET_ERRORS[case]
    # The check at a back-edge inside a step's scalar prefix is exercised.
    assert any(found) or build is not wait_then_spin


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
    assert (type(e), str(e)) == FAULTS[kind]


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
