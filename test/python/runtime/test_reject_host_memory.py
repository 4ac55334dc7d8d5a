"""The simulator refuses, before allocating anything, a functional run whose memory
image exceeds the host limit (issue 17, finding 7: a 4 GiB output that fits in HBM
used to die in numpy's MemoryError), and it allocates HBM sparsely."""

from __future__ import annotations

import numpy as np
import pytest
from novabin import build, target, tile, word

from nova.knobs import KnobError, knobs
from nova.runtime import load_binary
from nova.binary.isa import Engine, Opcode
from nova.sim import HostMemoryError, Simulator
from nova.sim.memory import Memory, host_memory_limit, physical_memory

HALT = word(opcode=Opcode.HALT, engine=Engine.SCALAR)
FOUR_GIB = 4 << 30


def four_gib_output():
    """One chip of nova-t1 (32 GiB HBM) whose program writes a 4 GiB f32 output."""
    return load_binary(build([HALT], [tile(0, 0, [16])], tg=target("nova-t1", chips=1),
                             io=[(0, 1, "big", 0, [FOUR_GIB // 4], 0)]))


def test_a_4gib_output_is_refused_before_allocating(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_SIM_HOST_MEMORY", str(8 << 30))
    with pytest.raises(HostMemoryError) as info:
        Simulator(four_gib_output())
    text = str(info.value)
    # how many bytes, why, and how to raise the limit
    tg = target("nova-t1")
    need = FOUR_GIB + 2 * FOUR_GIB + tg["sram_bytes"] + tg["acc_bytes"]  # HBM image, 2 copies
    assert f"needs about {need} bytes (12.0 GiB)" in text
    assert "host limit of 8589934592 bytes" in text
    assert f"two host copies of the {FOUR_GIB} bytes of outputs" in text
    assert "NOVA_SIM_HOST_MEMORY=<bytes>" in text and "functional=False" in text


def test_a_raised_limit_lets_it_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_SIM_HOST_MEMORY", str(64 << 30))
    Simulator(four_gib_output())  # constructing allocates nothing; not run here


def test_timing_only_runs_allocate_nothing_and_are_not_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_SIM_HOST_MEMORY", str(1 << 20))
    _, report = Simulator(four_gib_output(), functional=False).run()
    assert report is not None


def test_default_limit_is_half_the_physical_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOVA_SIM_HOST_MEMORY", raising=False)
    assert host_memory_limit() == int(physical_memory() * 0.5)
    monkeypatch.setenv("NOVA_SIM_HOST_MEMORY", "16e9")
    assert host_memory_limit() == 16 * 10**9
    with pytest.raises(KnobError, match="NOVA_SIM_HOST_MEMORY='lots'"):
        knobs({"NOVA_SIM_HOST_MEMORY": "lots"})


def test_a_buffer_growing_past_the_limit_is_refused() -> None:
    hbm = Memory("hbm", 1 << 40, 3, limit=1 << 20)
    hbm.write_bytes(0, b"ok")
    with pytest.raises(HostMemoryError, match="chip 3: simulating hbm bytes \\[0, 2097152\\) "
                                              "needs 2097152 bytes"):
        hbm.ensure(0, 2 << 20)


def test_sparse_chunks_merge_and_keep_their_bytes() -> None:
    hbm = Memory("hbm", 1 << 34, 0, limit=1 << 30)
    hbm.write_bytes(16, b"low")
    hbm.write_bytes(8 << 30, b"far")  # its own small chunk, no 8 GiB buffer
    hbm.write_bytes(4 << 20, b"mid")
    assert len(hbm.bufs) == 3 and hbm.allocated < 1 << 20
    buf, off = hbm.ensure(0, (4 << 20) + 3)  # spans the low and middle chunks: merged
    assert len(hbm.bufs) == 2
    assert bytes(buf[off + 16:off + 19]) == b"low"
    assert bytes(buf[off + (4 << 20):off + (4 << 20) + 3]) == b"mid"
    assert bytes(hbm.read_bytes(8 << 30, 3)) == b"far"
    np.testing.assert_array_equal(hbm.read_bytes(100, 4), np.zeros(4, np.uint8))
