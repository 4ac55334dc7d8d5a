"""Targets of several nodes (docs/isa.md 5.2): the schema's keys and rules, routes
through the NICs, node-contiguous rings, the hierarchical all-reduce, and the machine
paying the NICs' bandwidth and latency."""

import pytest

from asm import Asm, target
from nova.sim import Simulator, TargetError, target_from_dict
from nova.sim.collectives import CollectivePlanner
from nova.binary import opcodes as oc
from nova.sim.interconnect import Interconnect

NET = {"chips_per_node": 4, "nic_gbps": 50, "nic_latency_ns": 5000}


def two_node(**changes) -> dict:
    """nova-t1 as 2 nodes of 4 chips (a dict, so that a test can break it)."""
    d = target("nova-t1").as_dict()
    d.update(NET)
    d.update(changes)
    return {k: v for k, v in d.items() if v is not None}


@pytest.mark.parametrize("change,msg", [
    ({"chips_per_node": None, "nic_gbps": 50, "nic_latency_ns": None},
     r"key 'nic_gbps' needs chips_per_node \(the network joins nodes\)"),
    ({"chips_per_node": None, "nic_gbps": None, "nic_latency_ns": None, "nics_per_node": 2},
     r"key 'nics_per_node' needs chips_per_node"),
    ({"nic_gbps": None}, r"key 'nic_gbps' must be given when chips_per_node is set"),
    ({"nic_latency_ns": None}, r"key 'nic_latency_ns' must be given when chips_per_node is set"),
    ({"nics_per_node": 3}, r"key 'nics_per_node' must divide chips_per_node \(4\), got 3"),
    ({"chips": 6}, r"key 'chips' must be a multiple of chips_per_node \(4\) or at most it, got 6"),
    ({"chips_per_node": 1, "topology": "ring"}, r"key 'chips_per_node' must be >= 2 on a ring, got 1"),
    ({"chips_per_node": 0}, r"key 'chips_per_node' must be in \[1, 65536\], got 0"),
    ({"nic_gbps": 0}, r"key 'nic_gbps' must be in \[1, 1000000000\], got 0"),
    ({"nic_latency_ns": -1}, r"key 'nic_latency_ns' must be in \[0, 1000000000\], got -1"),
    ({"nic_gbps": 12.5}, r"key 'nic_gbps' must be an integer, got 12.5"),
])
def test_bad_node_keys_are_errors_naming_them(change, msg):
    with pytest.raises(TargetError, match=msg):
        target_from_dict(two_node(**change))


def test_nodes_of_a_target_and_its_one_node_forms():
    tg = target_from_dict(two_node())
    assert (tg.nodes, tg.node_chips, tg.node_nics, tg.node_of(5)) == (2, 4, 4, 1)
    # At most chips_per_node chips (a compile for fewer chips): one node of them.
    small = tg.with_changes(chips=2)
    assert (small.nodes, small.node_chips) == (1, 2)
    # None removes an optional key: back to nova-t1 exactly.
    plain = tg.with_changes(chips_per_node=None, nics_per_node=None, nic_gbps=None, nic_latency_ns=None)
    assert plain == target("nova-t1") and plain.nodes == 1
    assert "chips_per_node" not in target("nova-t1").as_dict()
    shipped = target("nova-t1-2node")
    assert (shipped.chips, shipped.nodes, shipped.nic_gbps) == (4, 2, 50)
    assert (target("nova-t1-64").nodes, target("nova-t1-64").node_chips) == (8, 8)


def test_a_system_of_thousands_of_chips_is_a_handful_of_numbers():
    tg = target_from_dict(two_node(chips=4096, chips_per_node=8, nics_per_node=4))
    net = Interconnect.from_target(tg)
    assert (tg.nodes, net.nic(4093)) == (512, (2, 4092))
    r = net.route(1, 4093)  # chip 1 -> NIC 0 on chip 0, network, NIC 2 of node 511 on chip 4092 -> 4093
    assert r.links == ("c1->sw", "sw->c0", "n0.nic0->net", "net->n511.nic2", "c4092->sw", "sw->c4093")
    assert r.latency_ns == 1000 + 5000 + 1000
    assert net.link_bandwidth("n0.nic0->net") == 50 and net.link_bandwidth("c1->sw") == 450


def test_routes_inside_a_node_stay_in_it():
    ring = Interconnect.from_target(target_from_dict(two_node(topology="ring")))
    assert ring.route(4, 7).links == ("c4->c7",)  # node 1's own ring wraps round
    assert ring.route(5, 7).links == ("c5->c6", "c6->c7")
    assert ring.route(3, 4).links == ("n0.nic3->net", "net->n1.nic0")  # one NIC per chip: no hops
    torus = Interconnect.from_target(target_from_dict(two_node(chips=16, chips_per_node=8, topology="torus2d")))
    assert torus.shape == (2, 4) and torus.route(8, 15).links == ("c8->c11", "c11->c15")


def test_rings_keep_each_node_together():
    net = Interconnect.from_target(target_from_dict(two_node()))
    assert net.ring_order((5, 0, 6, 1)) == (0, 1, 5, 6)
    assert net.by_node((5, 0, 6, 1)) == [(0, 1), (5, 6)]
    # One node: the order given, as before.
    assert Interconnect.from_target(target("nova-t1")).ring_order((5, 0, 6, 1)) == (5, 0, 6, 1)


def test_hierarchical_all_reduce_runs_one_ring_per_rail_between_nodes():
    net = Interconnect.from_target(target_from_dict(two_node(chips=16, chips_per_node=8, nics_per_node=8)))
    B = 16 << 20
    plan = CollectivePlanner(net, algorithm="hierarchical").plan(oc.ALL_REDUCE, tuple(range(16)), float(B))
    assert plan.algorithm == "hierarchical" and len(plan.steps) == 7 + 2 + 7
    assert plan.reduces == (True,) * 7 + (True, False) + (False,) * 7
    nic = {k: v for k, v in plan.link_bytes.items() if "net" in k}
    # Each chip's reduced eighth crosses its own NIC once each way (2 steps of B/16).
    assert len(nic) == 32 and set(nic.values()) == {B / 8}
    # Priced alone: 7 + 7 switch steps of B/8 and 2 NIC steps of B/16.
    lat, bw, nlat, nbw = 1000, 450, 5000, 50
    assert plan.duration_ns == pytest.approx(14 * (lat + B / 8 / bw) + 2 * (nlat + B / 16 / nbw))


def all_reduce_rep(tg, chips: int, nbytes: int):
    s = Asm()
    t = s.tile("hbm", "f32", [nbytes // 4])
    s.li(1, 0); s.li(2, nbytes)
    s.all_reduce("sum", 1, t, 2, t, [list(range(chips))], signal=[0])
    s.sem_wait([0])
    _, rep = Simulator(s.program(tg), functional=False).run()
    return rep


def test_machine_pays_the_nics_and_picks_hierarchical_across_nodes():
    B = 16 << 20
    links_only = dict(hbm_gbps=10 ** 6, timing={"collective_reduce_on_vector": False})
    tg = target("nova-t1-2node", **links_only)
    rep = all_reduce_rep(tg, 4, B)
    name, algo, t = rep.collectives[0]
    assert algo == "hierarchical"
    # 1 + 1 switch steps of B/2, 2 NIC steps of B/4 (5 us each).
    assert t == pytest.approx(2 * (1000 + B / 2 / 450) + 2 * (5000 + B / 4 / 50), rel=1e-6)
    assert rep.link_bytes["n0.nic0->net"] == pytest.approx(B / 2)
    one_node = all_reduce_rep(target("nova-t1", chips=4, **links_only), 4, B).collectives[0][2]
    assert t > 3 * one_node  # the slower network shows


def test_send_and_peer_dma_to_another_node_cross_the_nics():
    tg = target("nova-t1-2node", hbm_gbps=10 ** 6)
    n = 1 << 20
    s = Asm()
    t = s.tile("hbm", "f32", [n // 4])
    s.chip_id(1); s.li(2, 2); s.li(3, 0); s.li(4, 0)
    # chip 0 sends to chip 2; chip 2 receives; chip 1 copies into chip 3's HBM.
    s.salu("eq", 5, 1, 3)
    s.if_(5, lambda: (s.send(4, t, 2, signal=[0]), s.sem_wait([0])))
    s.salu("eq", 5, 1, 2)
    s.if_(5, lambda: (s.recv(4, t, 3, signal=[0]), s.sem_wait([0])))
    s.li(6, 1); s.salu("eq", 5, 1, 6); s.li(7, 3)
    s.if_(5, lambda: (s.dma(4, t, 4, t, peer=7, signal=[1]), s.sem_wait([1])))
    _, rep = Simulator(s.program(tg), functional=False).run()
    # The send completes on delivery; the recv (issued a few cycles later) one cycle after it.
    sent = rep.busy("collective", chip=0)
    assert sent == pytest.approx(5000 + n / 50, rel=1e-9)
    assert sent - 4 * tg.cycle_ns < rep.busy("collective", chip=2) <= sent + tg.cycle_ns
    assert rep.busy("dma0", chip=1) == pytest.approx(tg.dma_setup_ns + 5000 + n / 50, rel=1e-9)
    assert rep.link_bytes["net->n1.nic0"] == n and rep.link_bytes["n0.nic1->net"] == n
