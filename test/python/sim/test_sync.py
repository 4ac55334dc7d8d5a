"""Semaphores order engines; deadlocks and faults are diagnosed, never a hang."""

import numpy as np
import pytest

from asm import Asm, target
from nova.sim import DeadlockError, MemoryFaultError, Simulator
from nova.binary import opcodes as oc


def test_semaphores_order_dma_then_vector_then_dma():
    # The vector op is dispatched before the DMA that feeds it completes; the semaphore holds it.
    s = Asm()
    s.input(0, "x", "f32", [64], 0)
    s.output(1, "y", "f32", [64], 4096)
    h, t = s.tile("hbm", "f32", [64]), s.tile("sram", "f32", [64])
    s.li(1, 0); s.li(2, 0); s.li(3, 256); s.li(4, 4096)
    s.dma(1, h, 2, t, queue=0, signal=[0])
    s.vscalar("mul", 2, t, 2.0, 3, t, wait=[0], signal=[1])
    s.dma(3, t, 4, h, queue=1, wait=[1], signal=[2])
    s.sem_wait([2])
    x = np.arange(64, dtype=np.float32)
    sim = Simulator(s.program(target("tiny", chips=1)), trace=True)
    out, rep = sim.run({0: x})
    np.testing.assert_array_equal(out["y"], 2 * x)
    ops = {name: (s_, d) for _, _, name, _, s_, d in sim.trace.ops}
    starts = sorted((s_, name) for _, _, name, _, s_, _ in sim.trace.ops)
    assert [n for _, n in starts] == ["dma_copy", "vscalar", "dma_copy"]
    first_dma_end = starts[0][0] + [d for _, _, n, _, s_, d in sim.trace.ops if s_ == starts[0][0]][0]
    assert starts[1][0] >= first_dma_end


def test_credits_across_loop_iterations_double_buffering():
    # producer (DMA) / consumer (vector) with two buffers and "free" credits given before the loop
    s = Asm()
    n, blk = 8, 16
    s.input(0, "x", "f32", [n * blk], 0)
    s.output(1, "y", "f32", [n * blk], 8192)
    h, t = s.tile("hbm", "f32", [blk]), s.tile("sram", "f32", [blk])
    s.sem_signal([2]); s.sem_signal([2])          # both buffers free
    s.li(20, blk * 4); s.li(21, 8192); s.li(22, 2); s.li(23, 1024)
    with s.loop(1, 0, n):
        s.salu("mul", 2, 1, 20)                  # hbm offset
        s.salu("rem", 3, 1, 22); s.salu("mul", 3, 3, 20)   # buffer (i % 2)
        s.salu("add", 4, 2, 21)                  # output address
        s.salu("add", 5, 3, 23)                  # result buffer
        s.sem_wait([2])                          # a buffer is free (coarse credit)
        s.dma(2, h, 3, t, queue=0, signal=[0])
        s.vscalar("add", 3, t, 1.0, 5, t, wait=[0], signal=[1])
        s.dma(5, t, 4, h, queue=1, wait=[1], signal=[2])
    s.sem_wait([2]); s.sem_wait([2])
    x = np.arange(n * blk, dtype=np.float32)
    out, rep = Simulator(s.program(target("tiny", chips=1))).run({0: x})
    np.testing.assert_array_equal(out["y"], x + 1)


def test_deadlock_is_reported_with_the_blocked_instructions():
    s = Asm()
    t = s.tile("sram", "f32", [8])
    s.vfill(1.0, 0, t, wait=[5])      # nobody signals s5
    s.sem_wait([7])                   # nobody signals s7
    with pytest.raises(DeadlockError) as e:
        Simulator(s.program(target("tiny", chips=1))).run()
    msg = str(e.value)
    assert "instruction 0 (vfill) waits for semaphores s5=0" in msg
    assert "instruction 1 (sem_wait) waits for s7=0" in msg


def test_full_queue_stalls_the_sequencer_but_finishes():
    s = Asm()
    t = s.tile("sram", "f32", [8])
    with s.loop(1, 0, 100):
        s.vfill(1.0, 0, t)
    tg = target("tiny", chips=1)
    _, rep = Simulator(s.program(tg)).run()
    assert rep.busy("vector") == pytest.approx(100 * (16 + 1) * tg.cycle_ns)
    assert rep.time_ns >= rep.busy("vector")


def test_out_of_capacity_access_faults():
    s = Asm()
    s.li(1, 16384 - 16)               # tiny: 16 KiB SRAM
    s.vfill(0.0, 1, s.tile("sram", "f32", [8]))
    with pytest.raises(MemoryFaultError, match=r"chip 0: instruction 1 \(vfill\).*sram bytes \[16368, 16400\)"):
        Simulator(s.program(target("tiny", chips=1))).run()


def test_memory_is_allocated_lazily():
    # nova-t1 has 32 GiB HBM; touching a few bytes high up must not allocate it all.
    s = Asm()
    s.li(1, 1 << 20); s.li(2, 0)
    s.dma(1, s.tile("hbm", "f32", [4]), 2, s.tile("sram", "f32", [4]), signal=[0])
    s.sem_wait([0])
    sim = Simulator(s.program(target("nova-t1", chips=1)))
    sim.run()
    m = sim.machine.chips[0].mem
    assert m.spaces[oc.HBM].allocated <= 4 << 20
    assert m.spaces[oc.HBM].capacity == 32 << 30


def test_semaphore_signal_from_sequencer_releases_queue():
    s = Asm()
    t = s.tile("sram", "f32", [8])
    s.vfill(3.0, 0, t, wait=[4], signal=[5])
    s.sem_signal([4])
    s.sem_wait([5])
    _, rep = Simulator(s.program(target("tiny", chips=1))).run()
    assert rep.busy("vector") > 0
