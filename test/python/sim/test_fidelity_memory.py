"""Memory costs of DMAs (docs/isa.md 2.2): bursts for strided tiles, both ends' ports
for copies (a peer copy reads the source's HBM and writes the destination's)."""

import pytest

from asm import Asm, target
from nova.sim import Simulator
from nova.sim.timing import CostModel


def one_dma(tg, src_shape, src_strides, dtype="bf16", src_space="hbm", dst_space="sram"):
    s = Asm()
    s.li(1, 0)
    s.dma(1, s.tile(src_space, dtype, src_shape, src_strides), 1, s.tile(dst_space, dtype, src_shape), signal=[0])
    s.sem_wait([0])
    _, rep = Simulator(s.program(tg), functional=False).run()
    return rep.busy("dma0")


def test_burst_factor_of_runs():
    cm = CostModel(target("nova-t1", chips=1))
    assert cm.burst_factor(0, (256, 256), (256, 1), 2) == 1.0          # contiguous
    assert cm.burst_factor(0, (64, 128), (4096, 1), 2) == 1.0          # 256-byte rows
    assert cm.burst_factor(0, (64, 12), (4096, 1), 2) == pytest.approx(64 / 24)  # 24-byte rows
    assert cm.burst_factor(0, (256, 256), (1, 256), 2) == 32.0         # transposed bf16
    assert cm.burst_factor(1, (256, 256), (1, 256), 2) == 2.0          # SRAM: 4-byte granule
    assert cm.burst_factor(0, (4, 1, 8), (64, 7, 1), 4) == 2.0         # size-1 dims do not break a run


def test_a_transposed_dma_costs_its_bursts():
    tg = target("nova-t1", chips=1)
    B = 256 * 256 * 2
    setup = tg.dma_setup_ns
    contiguous = one_dma(tg, [256, 256], None)
    transposed = one_dma(tg, [256, 256], [1, 256])
    assert contiguous == pytest.approx(setup + B / tg.hbm_gbps)
    # Every 2-byte element is its own run: one 64-byte HBM burst each.
    assert transposed == pytest.approx(setup + 32 * B / tg.hbm_gbps)
    # Narrow rows: 12 bf16 = 24 bytes per run, 64 bytes of HBM bandwidth each.
    narrow = one_dma(tg, [512, 12], [4096, 1])
    assert narrow == pytest.approx(setup + 512 * 64 / tg.hbm_gbps)


def test_a_copy_within_one_memory_moves_its_bytes_twice_through_the_port():
    tg = target("nova-t1", chips=1)
    B = 256 * 256 * 2
    assert one_dma(tg, [256, 256], None, dst_space="hbm") == pytest.approx(tg.dma_setup_ns + 2 * B / tg.hbm_gbps)


def peer_and_local(peer=True, local_on: int | None = None):
    """Chip 0 copies 8 MiB into chip 1's HBM over fast links; chip ``local_on`` also
    copies 8 MiB from its HBM to its SRAM on another queue."""
    tg = target("nova-t1", chips=2, link_gbps=4000)
    n = (8 << 20) // 2
    s = Asm()
    s.chip_id(1); s.li(2, 1); s.li(4, 0)
    h, sr = s.tile("hbm", "bf16", [n]), s.tile("sram", "bf16", [n])

    def chip(c):
        def body():
            if c == 0 and peer:
                s.dma(4, h, 4, h, peer=2, signal=[0], queue=0)
            if local_on == c:
                s.dma(4, h, 4, sr, queue=1, signal=[1])
            if c == 0 and peer:
                s.sem_wait([0])
            if local_on == c:
                s.sem_wait([1])
        return body

    s.salu("eq", 3, 1, 4)  # r3 = chip_id == 0
    s.if_(3, chip(0), chip(1))
    _, rep = Simulator(s.program(tg), functional=False).run()
    return tg, rep


def test_a_peer_copy_uses_hbm_bandwidth_at_both_ends():
    tg, alone = peer_and_local()
    B = 8 << 20
    t_alone = alone.busy("dma0", chip=0)
    # Links at 4000 GB/s: the 820 GB/s HBM ports (chip 0 reads, chip 1 writes) bind.
    assert t_alone == pytest.approx(tg.dma_setup_ns + tg.link_latency_ns + B / tg.hbm_gbps)
    for chip in (0, 1):
        _, both = peer_and_local(local_on=chip)
        # The local copy on either end shares that chip's HBM port with the peer copy:
        # both run at half the port while they overlap, nearly all the time.
        assert both.busy("dma0", chip=0) > 1.9 * (t_alone - tg.dma_setup_ns - tg.link_latency_ns)
        assert both.busy("dma1", chip=chip) > 1.9 * B / tg.hbm_gbps
        assert both.memory_bytes["hbm_read"] == pytest.approx(2 * B)
