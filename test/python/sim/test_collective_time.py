"""nova.sim.collective_time against the in-process machine: one collective alone and
overlapping groups sharing links give the machine's times (docs/isa.md 5.3)."""

import math

import pytest
import torch
from torch import nn

from asm import Asm, target
from nova.binary import opcodes as oc
from nova.binary.isa import MemorySpace
from nova.parallel import Mesh, compile_parallel, megatron_mlp_plan
from nova.sim import Simulator
from nova.sim.collective_time import (collective_plan, collective_time_ns, resolve_target,
                                      simulate_collectives)
from nova.sim.errors import CollectiveRequestError, TargetError

MiB = 1 << 20


def machine_collective(tg, op: str, groups, nbytes: int, space: str = "hbm", delay_odd: int = 0, trace=False):
    """Every chip issues ``op`` on its group of ``groups`` (f32 tiles in ``space``);
    with ``delay_odd`` the odd chips first copy that many bytes HBM -> HBM."""
    s = Asm()
    n = nbytes // 4
    p = len(groups[0])
    ti = s.tile(space, "f32", [n])
    s.li(1, 0); s.li(2, 8 * MiB if space == "sram" else 1 << 30)
    if delay_odd:
        big = s.tile("hbm", "f32", [delay_odd // 4])
        s.chip_id(3); s.li(4, 2); s.salu("rem", 3, 3, 4); s.li(5, 2 << 30)
        s.if_(3, lambda: (s.dma(5, big, 5, big, signal=[1]), s.sem_wait([1])))
    if op == "all_reduce":
        s.all_reduce("sum", 1, ti, 2, ti, groups, signal=[0])
    elif op == "all_gather":
        s.all_gather(1, ti, 2, s.tile(space, "f32", [n * p]), 0, groups, signal=[0])
    elif op == "reduce_scatter":
        s.reduce_scatter("sum", 1, ti, 2, s.tile(space, "f32", [n // p]), 0, groups, signal=[0])
    elif op == "all_to_all":
        s.all_to_all(1, ti, 2, s.tile(space, "f32", [n]), 0, 0, groups, signal=[0])
    else:
        s.barrier(groups, signal=[0])
    s.sem_wait([0])
    sim = Simulator(s.program(tg), functional=False, trace=trace)
    _, rep = sim.run()
    return sim, rep


@pytest.mark.parametrize("name,chips", [("nova-t1-ring8", 8), ("nova-t1-2node", 4)])
@pytest.mark.parametrize("nbytes", [1 * MiB, 16 * MiB], ids=["1MiB", "16MiB"])
def test_all_reduce_time_is_the_machines(name, chips, nbytes):
    tg = target(name)
    _, rep = machine_collective(tg, "all_reduce", [list(range(chips))], nbytes)
    _, algo, t = rep.collectives[0]
    priced = collective_time_ns(name, "all_reduce", tuple(range(chips)), nbytes)
    assert priced == pytest.approx(t, rel=1e-9)  # one model: the same to rounding
    assert collective_plan(name, "all_reduce", range(chips), nbytes).algorithm == algo
    assert collective_time_ns(tg, "all_reduce", tuple(range(chips)), nbytes) == priced  # a Target as well


class RowParallelMLP(nn.Module):
    """Megatron's MLP: its row-parallel fc2 ends in one all-reduce of the [512, 512]
    f32 output (1 MiB)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 512)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


@pytest.mark.parametrize("name,chips", [("nova-t1-ring8", 8), ("nova-t1-2node", 4)])
def test_a_compiled_programs_all_reduce_is_priced_as_it_ran(name, chips):
    torch.manual_seed(0)
    model, x = RowParallelMLP().eval(), torch.randn(512, 64)
    program = compile_parallel(model, x, mesh=Mesh((chips,), ("tp",)), target=name,
                               plan=megatron_mlp_plan("fc1", "fc2", axis="tp"))
    got = program.run(x)
    with torch.no_grad():
        torch.testing.assert_close(got[0], model(x), rtol=1e-4, atol=1e-5)
    code = program.binary.program_for(0)
    (ins,) = [i for i in code.instructions if i.opcode == oc.ALL_REDUCE]
    tile = code.tiles[ins.tiles[0]]
    nbytes = math.prod(tile.shape) * tile.element_bytes
    space = "hbm" if tile.space == MemorySpace.HBM else "sram"
    (members,) = [g for g in code.groups[ins.group] if 0 in g]
    assert nbytes == 1 * MiB
    ((_, algo, t),) = program.report.collectives
    priced = collective_time_ns(name, "all_reduce", members, nbytes, space=space, elt=tile.element_bytes)
    assert priced == pytest.approx(t, rel=1e-9)
    assert algo == ("hierarchical" if name == "nova-t1-2node" else "direct")
    # The binary carries the node keys (a one-node target's carries none).
    assert program.binary.target.get("chips_per_node") == (2 if name == "nova-t1-2node" else None)


@pytest.mark.parametrize("op", ["all_gather", "reduce_scatter", "all_to_all", "barrier"])
@pytest.mark.parametrize("space", ["hbm", "sram"])
def test_other_collectives_and_sram_tiles_are_the_machines(op, space):
    _, rep = machine_collective(target("nova-t1-2node"), op, [[0, 1, 2, 3]], MiB, space)
    t = rep.collectives[0][2]
    assert collective_time_ns("nova-t1-2node", op, (0, 1, 2, 3), MiB, space=space) == pytest.approx(t, rel=1e-9)


def test_send_is_the_machines_send_recv_pair():
    tg = target("nova-t1-2node")
    n = MiB
    s = Asm()
    t = s.tile("hbm", "f32", [n // 4])
    s.chip_id(1); s.li(2, 0); s.li(3, 2); s.li(4, 0)
    s.salu("eq", 5, 1, 2)  # chip 0 sends to chip 2 (on the other node), which receives
    s.if_(5, lambda: (s.send(4, t, 3, signal=[0]), s.sem_wait([0])))
    s.salu("eq", 5, 1, 3)
    s.if_(5, lambda: (s.recv(4, t, 2, signal=[0]), s.sem_wait([0])))
    _, rep = Simulator(s.program(tg), functional=False).run()
    priced = collective_time_ns("nova-t1-2node", "send", (0, 2), n)
    # The recv, issued before the data arrives, completes recv_cycles after it.
    assert priced == pytest.approx(rep.busy("collective", chip=0) + tg.cycle_ns * tg.timing["recv_cycles"],
                                   rel=1e-9)


def starts_and_ends(sim, groups):
    """Per group: (start, end) of its collective on the machine (from the trace)."""
    ops = [o for o in sim.trace.ops if o[1] == "collective"]
    out = []
    for g in groups:
        mine = [o for o in ops if o[0] in g]
        out.append((max(o[4] for o in mine), max(o[4] + o[5] for o in mine)))
    return out


@pytest.mark.parametrize("delay", [0, 2 * MiB], ids=["together", "staggered"])
def test_overlapping_groups_sharing_ring_links_get_the_machines_times(delay):
    """{0,2,4,6} and {1,3,5,7} on a ring of 8: every transfer of either group crosses
    links the other uses; with ``delay`` the odd group starts later, partly overlapping."""
    groups = [[0, 2, 4, 6], [1, 3, 5, 7]]
    tg = target("nova-t1-ring8", timing={"collective_algorithm": "ring"})
    nb = 4 * MiB
    sim, _ = machine_collective(tg, "all_gather", groups, nb, delay_odd=delay, trace=True)
    (s0, e0), (s1, e1) = starts_and_ends(sim, groups)
    ends = simulate_collectives(tg, [("all_gather", tuple(groups[0]), nb, s0), ("all_gather", tuple(groups[1]), nb, s1)])
    assert ends == pytest.approx([e0, e1], rel=1e-9)
    alone = collective_time_ns(tg, "all_gather", tuple(groups[0]), nb)
    assert e0 - s0 > 1.2 * alone  # they did contend
    if delay:
        assert s0 < s1 < e0


def test_broadcast_and_reduce_priced_with_the_fastest_candidate():
    m = tuple(range(8))
    for kind in ("broadcast", "reduce"):
        plans = {a: collective_plan(target("nova-t1-ring8", timing={"collective_algorithm": a}), kind, m, 16 * MiB)
                 for a in ("direct", "ring")}
        assert {a: p.algorithm for a, p in plans.items()} == {"direct": "direct", "ring": "ring"}
        auto = collective_plan("nova-t1-ring8", kind, m, 16 * MiB)
        assert auto.duration_ns <= min(p.duration_ns for p in plans.values())
        # Large messages: the bandwidth-optimal ring beats the root's one port.
        assert plans["ring"].duration_ns < plans["direct"].duration_ns
        # On a switch with links alone binding, the root's one port carries p-1 copies.
        tg = target("nova-t1", hbm_gbps=10 ** 6, timing={"collective_algorithm": "direct",
                                                         "collective_reduce_on_vector": False})
        assert collective_time_ns(tg, kind, m, MiB) == pytest.approx(1000 + 7 * MiB / 450, rel=1e-9)


def test_bad_requests_are_clear_errors():
    with pytest.raises(CollectiveRequestError, match=r"unknown collective kind 'allreduce'"):
        collective_time_ns("nova-t1-2node", "allreduce", (0, 1), 4)
    with pytest.raises(CollectiveRequestError, match=r"member chip 4 is outside 0..3 \(target 'nova-t1-2node'\)"):
        collective_time_ns("nova-t1-2node", "all_reduce", (0, 4), 4)
    with pytest.raises(CollectiveRequestError, match=r"members \[1, 1\] name a chip twice"):
        collective_time_ns("nova-t1-2node", "all_gather", (1, 1), 4)
    with pytest.raises(CollectiveRequestError, match=r"send members must be \(src, dst\)"):
        collective_time_ns("nova-t1-2node", "send", (0, 1, 2), 4)
    with pytest.raises(CollectiveRequestError, match=r"bytes must be a number >= 0, got -1"):
        collective_time_ns("nova-t1-2node", "all_reduce", (0, 1), -1)
    with pytest.raises(CollectiveRequestError, match=r"start must be a time >= 0 ns"):
        simulate_collectives("nova-t1-2node", [("all_reduce", (0, 1), 4, -5.0)])
    with pytest.raises(TargetError, match=r"cannot find target 'no-such-target'"):
        collective_time_ns("no-such-target", "all_reduce", (0, 1), 4)
    assert resolve_target(target("tiny").as_dict()) == target("tiny")
