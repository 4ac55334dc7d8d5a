"""Collectives inside the shared-bandwidth model (docs/isa.md 2.5): every algorithm
alone against its alpha-beta formula plus the charged reduction, and contention with
DMAs and other groups on the same links."""

import math

import pytest

from asm import Asm, target
from nova.sim import Simulator

P = 8
B = 1 << 20  # input bytes per chip (f32)


def tg_for(topology_target: str, algorithm: str, reduce: bool = True, **changes):
    return target(topology_target, chips=P, timing={"collective_algorithm": algorithm,
                                                    "collective_reduce_on_vector": reduce}, **changes)


def run_collective(tg, op: str, nbytes: int = B, space: str = "sram"):
    s = Asm()
    n = nbytes // 4
    g = [list(range(tg.chips))]
    ti = s.tile(space, "f32", [n])
    s.li(1, 0); s.li(2, 8 << 20)
    if op == "all_reduce":
        s.all_reduce("sum", 1, ti, 2, ti, g, signal=[0])
    elif op == "all_gather":
        s.all_gather(1, ti, 2, s.tile(space, "f32", [n * tg.chips]), 0, g, signal=[0])
    else:
        s.reduce_scatter("sum", 1, ti, 2, s.tile(space, "f32", [n // tg.chips]), 0, g, signal=[0])
    s.sem_wait([0])
    _, rep = Simulator(s.program(tg), functional=False).run()
    return rep.busy("collective", chip=0), rep.collectives[0][1]


def reduce_ns(tg, chunks: int, b: float) -> float:
    """One receiver's reduction: vector time of the element operations, or the bytes
    (chunks + 2 passes) through its SRAM port, whichever is longer."""
    tm = tg.timing
    elems = chunks * b / 4
    vec = (tm["vector_overhead_cycles"] + math.ceil(elems / tg.vector_lanes) * tm["vector_elementwise_factor"])
    return max(vec * tg.cycle_ns, (chunks + 2) * b / tg.sram_gbps)


def alpha_beta(tg, op: str, algo: str) -> tuple[float, list[tuple[int, float]]]:
    """(alpha-beta time, the reducing steps as (chunks per receiver, chunk bytes)) of
    ``algo`` on a switch (every route one hop) or a bidirectional ring (neighbours)."""
    p, a, bw = P, float(tg.link_latency_ns), float(tg.link_gbps)
    lg = int(math.log2(p))
    both = algo == "biring" and tg.topology == "ring"  # a switch port carries both halves
    if op == "all_reduce":
        b = B / p
        if algo in ("ring", "biring"):
            per = b / 2 if both else b
            return 2 * (p - 1) * (a + per / bw), [(2 if algo == "biring" else 1, b / 2 if algo == "biring" else b)] * (p - 1)
        if algo == "direct":
            return 2 * (a + (p - 1) * b / bw), [(p - 1, b)]
        return 2 * lg * a + 2 * (p - 1) / p * B / bw, [(1, B / 2 ** i) for i in range(1, lg + 1)]
    if op == "all_gather":
        if algo in ("ring", "biring"):
            return (p - 1) * (a + (B / 2 if both else B) / bw), []
        if algo == "direct":
            return a + (p - 1) * B / bw, []
        return lg * a + (p - 1) * B / bw, []
    b = B / p  # reduce_scatter
    if algo in ("ring", "biring"):
        return (p - 1) * (a + (b / 2 if both else b) / bw), [(2 if algo == "biring" else 1, b / 2 if algo == "biring" else b)] * (p - 1)
    if algo == "direct":
        return a + (p - 1) * b / bw, [(p - 1, b)]
    return lg * a + (p - 1) / p * B / bw, [(1, B / 2 ** i) for i in range(1, lg + 1)]


CASES = [(t, op, algo) for t in ("nova-t1",) for op in ("all_reduce", "all_gather", "reduce_scatter")
         for algo in ("ring", "biring", "direct", "rhd")] + \
        [("nova-t1-ring8", op, algo) for op in ("all_reduce", "all_gather", "reduce_scatter")
         for algo in ("ring", "biring")]


@pytest.mark.parametrize("name,op,algo", CASES)
@pytest.mark.parametrize("reduce", [False, True], ids=["no-reduce-charge", "reduce-charged"])
def test_each_algorithm_alone_matches_alpha_beta_plus_reduction(name, op, algo, reduce):
    tg = tg_for(name, algo, reduce)
    t, used = run_collective(tg, op)
    assert used == algo
    ab, reducing = alpha_beta(tg, op, algo)
    expect = ab + (sum(reduce_ns(tg, j, b) for j, b in reducing) if reduce else 0.0)
    assert t == pytest.approx(expect, rel=0.01)


def test_auto_picks_the_fastest_priced_algorithm():
    times = {a: run_collective(tg_for("nova-t1-ring8", a), "all_reduce", 8 << 20)[0]
             for a in ("ring", "biring", "direct", "rhd")}
    t, used = run_collective(tg_for("nova-t1-ring8", "auto"), "all_reduce", 8 << 20)
    assert used == min(times, key=times.get) == "biring"
    assert t == pytest.approx(times["biring"])


def dma_and_all_reduce(dma_bytes: int, ar_bytes: int, do_dma=True, do_ar=True):
    """Two chips on nova-t1's switch: each sends a peer DMA (SRAM -> the other's HBM)
    and both run an all-reduce of SRAM tiles; they share each chip's switch port."""
    tg = target("nova-t1", chips=2, timing={"collective_reduce_on_vector": False,
                                             "collective_algorithm": "ring"})
    s = Asm()
    s.chip_id(1); s.li(2, 1); s.salu("sub", 3, 2, 1)  # r3 = the other chip
    s.li(4, 0); s.li(5, 8 << 20)
    if do_dma:
        s.dma(4, s.tile("sram", "f32", [dma_bytes // 4]), 4, s.tile("hbm", "f32", [dma_bytes // 4]),
              peer=3, signal=[1])
    if do_ar:
        t = s.tile("sram", "f32", [ar_bytes // 4])
        s.all_reduce("sum", 5, t, 5, t, [[0, 1]], signal=[0])
        s.sem_wait([0])
    if do_dma:
        s.sem_wait([1])
    _, rep = Simulator(s.program(tg), functional=False).run()
    return tg, rep


def test_a_dma_and_an_all_reduce_on_one_link_share_its_bandwidth():
    S, A = 16 << 20, 8 << 20
    tg, alone_dma = dma_and_all_reduce(S, A, do_ar=False)
    _, alone_ar = dma_and_all_reduce(S, A, do_dma=False)
    _, both = dma_and_all_reduce(S, A)
    bw, lat, setup = float(tg.link_gbps), float(tg.link_latency_ns), tg.dma_setup_ns
    # Alone: the DMA at the link's rate; the ring all-reduce of 2 chips: 2 steps of A/2.
    assert alone_dma.busy("dma0", chip=0) == pytest.approx(setup + lat + S / bw)
    assert alone_ar.busy("collective", chip=0) == pytest.approx(2 * lat + A / bw)
    # Together each gets half the port while both flow: the all-reduce's steps take
    # twice as long, and the link, never idle, carries both before the DMA ends.
    assert both.busy("collective", chip=0) == pytest.approx(2 * lat + 2 * A / bw, rel=2e-3)
    assert both.busy("dma0", chip=0) == pytest.approx(setup + lat + (S + A) / bw, rel=2e-3)
    assert both.link_bytes["c0->sw"] == pytest.approx(S + A)


def test_two_groups_sharing_ring_links_slow_each_other():
    """Groups {0..3} and {4..7} on a ring of 8: alone each uses its own links; two
    all-gathers over the interleaved groups {0,2,4,6} and {1,3,5,7} cross the same
    links and share them."""
    def run(groups):
        tg = target("nova-t1-ring8", timing={"collective_algorithm": "ring"})
        s = Asm()
        n = (4 << 20) // 4
        ti, to = s.tile("sram", "f32", [n]), s.tile("sram", "f32", [n * 4])
        s.li(1, 0); s.li(2, 8 << 20)
        s.all_gather(1, ti, 2, to, 0, groups, signal=[0])
        s.sem_wait([0])
        _, rep = Simulator(s.program(tg), functional=False).run()
        return tg, rep.busy("collective", chip=0)

    tg, one = run([[0, 2, 4, 6], [1, 3, 5, 7]])
    # Every step of either ring sends 4 MiB two hops along the same direction, and the
    # two groups' transfers interleave on every link: each link carries 2 flows.
    bw, lat = float(tg.link_gbps), float(tg.link_latency_ns)
    assert one == pytest.approx(3 * (2 * lat + 2 * (4 << 20) / bw), rel=1e-3)
