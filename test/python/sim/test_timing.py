"""Timing model sanity: DMA cost, overlap and bandwidth sharing, collective bandwidth."""

import json

import numpy as np
import pytest

from asm import Asm, target
from nova.sim import Simulator
from nova.sim.collectives import CollectivePlanner
from nova.sim.interconnect import Interconnect, torus_shape
from nova.binary import opcodes as oc


def dma_program(nbytes, queues, tg):
    s = Asm()
    n = nbytes // 4
    h, t = s.tile("hbm", "f32", [n]), s.tile("sram", "f32", [n])
    for i, q in enumerate(queues):
        s.li(10 + i, i * nbytes); s.li(20 + i, 0)
        s.dma(10 + i, h, 20 + i, t, queue=q, signal=[i])
    for i in range(len(queues)):
        s.sem_wait([i])
    return s.program(tg)


def test_dma_takes_setup_plus_bytes_over_bandwidth():
    tg = target("tiny", chips=1)
    nb = 4096
    _, rep = Simulator(dma_program(nb, [0], tg)).run()
    expect = 64 * tg.cycle_ns + nb / tg.hbm_gbps
    assert rep.busy("dma0") == pytest.approx(expect)
    assert rep.time_ns == pytest.approx(expect + 3 * tg.cycle_ns, rel=0.01)


def test_two_dmas_on_different_queues_overlap_and_share_hbm():
    tg = target("tiny", chips=1)
    nb = 4096
    sim = Simulator(dma_program(nb, [0, 1], tg), trace=True)
    _, rep = sim.run()
    (s0, d0), (s1, d1) = [(s, d) for *_, s, d in sim.trace.ops]
    assert s1 < s0 + d0          # they overlap in time
    one = 64 * tg.cycle_ns + nb / tg.hbm_gbps
    assert rep.time_ns < 2 * one  # faster than serial
    # both move their bytes at half the bandwidth while they overlap
    assert max(d0, d1) == pytest.approx(64 * tg.cycle_ns + 2 * nb / tg.hbm_gbps, rel=0.01)


def test_dma_and_matmul_overlap():
    tg = target("tiny", chips=1)
    s = Asm()
    h, t = s.tile("hbm", "f32", [1024]), s.tile("sram", "f32", [1024])
    a, c = s.tile("sram", "f32", [8, 8]), s.tile("acc", "f32", [8, 8])
    s.li(1, 8192)
    s.dma(0, h, 1, t, queue=0, signal=[0])
    s.matmul(0, a, 0, a, 0, c, signal=[1])
    s.sem_wait([0, 1])
    sim = Simulator(s.program(tg), trace=True)
    _, rep = sim.run()
    assert rep.time_ns < rep.busy("dma") + rep.busy("matrix")


def test_peer_dma_uses_the_link():
    tg = target("tiny", chips=2)
    s = Asm()
    h = s.tile("hbm", "f32", [1024])
    s.chip_id(1); s.li(2, 1); s.salu("sub", 3, 2, 1); s.li(4, 8192)
    s.dma(0, h, 4, h, peer=3, signal=[0])
    s.sem_wait([0])
    _, rep = Simulator(s.program(tg), functional=False).run()
    # Each chip's HBM carries its own read and the other chip's incoming write: two
    # flows share it (tiny: hbm_gbps == link_gbps), so the HBM, not the link, limits.
    assert rep.busy("dma0", chip=0) == pytest.approx(64 * tg.cycle_ns + tg.link_latency_ns + 4096 / (tg.hbm_gbps / 2))
    assert rep.link_bytes["c0->sw"] == 4096 and rep.link_bytes["sw->c0"] == 4096


def test_routes_per_topology():
    assert Interconnect("switch", 8, 1, 10).route(0, 5).links == ("c0->sw", "sw->c5")
    assert Interconnect("pcie", 4, 1, 10).route(1, 2).links == ("c1->host", "host->c2")
    assert Interconnect("ring", 8, 1, 10).route(0, 6).links == ("c0->c7", "c7->c6")
    assert torus_shape(16) == (4, 4) and torus_shape(8) == (2, 4) and torus_shape(6) == (2, 3)
    r = Interconnect("torus2d", 16, 1, 10).route(0, 15)
    assert r.links == ("c0->c3", "c3->c15") and r.latency_ns == 20


def busbw_fraction(chips, topology, nbytes, **changes):
    tg = target("nova-t1", chips=chips, topology=topology, **changes)
    s = Asm()
    n = nbytes // 4
    t = s.tile("hbm", "f32", [n])
    s.li(1, nbytes)
    s.all_reduce("sum", 0, t, 1, t, [list(range(chips))], signal=[0])
    s.sem_wait([0])
    _, rep = Simulator(s.program(tg), functional=False).run()
    t_coll = rep.busy("collective", chip=0)
    algbw = nbytes / t_coll
    return algbw * 2 * (chips - 1) / chips / tg.link_gbps, rep


@pytest.mark.parametrize("topology", ["switch", "ring", "pcie", "torus2d"])
def test_all_reduce_busbw_approaches_link_bandwidth(topology):
    # The links alone: memory ports that do not bind and no reduction charge (the
    # transfers also cross each chip's HBM port and the receivers reduce, see below).
    links_only = dict(hbm_gbps=10 ** 6, timing={"collective_reduce_on_vector": False})
    frac, rep = busbw_fraction(8, topology, 256 << 20, **links_only)
    assert frac > 0.95
    small, _ = busbw_fraction(8, topology, 1024, **links_only)
    assert small < 0.05            # latency bound


def test_all_reduce_in_hbm_is_bound_by_the_hbm_port_on_nova_t1():
    """nova-t1's HBM (820 GB/s) carries every step's send read, receive write and the
    reduction's 3 passes: it, not the 450 GB/s link, bounds an HBM all-reduce."""
    frac, rep = busbw_fraction(8, "switch", 256 << 20)
    assert rep.collectives[0][1] == "direct"  # one reduction pass over all chunks is cheapest
    B, p, hbm = 256 << 20, 8, 820.0
    b = B / p
    # direct: two steps moving 7 chunks out and 7 in per chip (14 b through the HBM
    # port), one reduction of 7 chunks ((7 + 2) b through it); latency 2 x 1000 ns.
    expect = 2 * 1000.0 + 2 * 14 * b / hbm + 9 * b / hbm
    assert rep.busy("collective", chip=0) == pytest.approx(expect, rel=1e-3)
    assert frac < 0.75


def test_ring_all_reduce_on_a_switch_matches_the_spec_formula():
    net = Interconnect("switch", 4, 100.0, 1000.0)
    p, B = 4, 1 << 20
    plan = CollectivePlanner(net).plan(oc.ALL_REDUCE, (0, 1, 2, 3), float(B))
    spec = 2 * (p - 1) * 1000.0 + 2 * (p - 1) / p * B / 100.0
    assert plan.duration_ns <= spec + 1e-6


def test_bidirectional_ring_uses_both_directions():
    net = Interconnect("ring", 8, 100.0, 10.0)
    plan = CollectivePlanner(net).plan(oc.ALL_REDUCE, tuple(range(8)), float(64 << 20))
    assert plan.algorithm == "biring"
    assert "c1->c0" in plan.link_bytes and "c0->c1" in plan.link_bytes


def test_trace_is_chrome_json_with_chip_processes_and_link_tracks(tmp_path):
    tg = target("tiny", chips=2)
    s = Asm()
    t = s.tile("hbm", "f32", [64])
    s.li(1, 1024)
    s.dma(0, t, 1, s.tile("sram", "f32", [64]), signal=[1])
    s.all_reduce("sum", 0, t, 1, t, [[0, 1]], wait=[1], signal=[0])
    s.sem_wait([0])
    sim = Simulator(s.program(tg), trace=True)
    _, rep = sim.run()
    path = tmp_path / "t.json"
    sim.write_trace(path)
    ev = json.loads(path.read_text())["traceEvents"]
    xs = [e for e in ev if e["ph"] == "X"]
    assert {e["pid"] for e in xs if e["cat"] != "link"} == {0, 1}
    assert any(e["cat"] == "link" for e in xs)
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"dma0", "collective", "c0->sw"} <= names
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in xs)
    text = rep.summary()
    assert "simulated time" in text and "roofline" in text
