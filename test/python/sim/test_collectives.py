"""Collectives on 2/4/8 chips on every topology vs numpy; send/recv; mismatches raise."""

import numpy as np
import pytest

from asm import Asm, target
from nova.sim import CollectiveMismatchError, DeadlockError, Simulator

TOPOLOGIES = ["switch", "ring", "torus2d", "pcie"]
CHIPS = [2, 4, 8]


def coll_program(emit, in_shape, out_shape, chips, topology, space="hbm"):
    s = Asm()
    s.input(0, "x", "f32", in_shape, 0)
    s.output(1, "y", "f32", out_shape, 8192)
    s.li(1, 0); s.li(2, 8192)
    emit(s, s.tile(space, "f32", in_shape), s.tile(space, "f32", out_shape))
    s.sem_wait([0])
    return s.program(target("tiny", chips=chips, topology=topology, hbm_bytes=1 << 20))


def run(prog, xs):
    out, rep = Simulator(prog).run(per_chip={c: {"x": x} for c, x in enumerate(xs)})
    return [o["y"] for o in out["chips"]], rep


def data(chips, shape, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(chips)]


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("chips", CHIPS)
@pytest.mark.parametrize("kind", ["sum", "max", "avg", "min"])
def test_all_reduce(topology, chips, kind):
    g = [list(range(chips))]
    prog = coll_program(lambda s, ti, to: s.all_reduce(kind, 1, ti, 2, to, g, signal=[0]), (8, 4), (8, 4), chips, topology)
    xs = data(chips, (8, 4))
    ys, rep = run(prog, xs)
    ref = {"sum": np.sum, "max": np.max, "min": np.min, "avg": np.mean}[kind](np.stack(xs), axis=0)
    for y in ys:
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    assert rep.link_bytes and rep.time_ns > 0


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("chips", CHIPS)
def test_all_gather_reduce_scatter_all_to_all(topology, chips):
    g = [list(range(chips))]
    xs = data(chips, (chips, 4))
    ys, _ = run(coll_program(lambda s, ti, to: s.all_gather(1, ti, 2, to, 0, g, signal=[0]),
                             (chips, 4), (chips * chips, 4), chips, topology), xs)
    for y in ys:
        np.testing.assert_array_equal(y, np.concatenate(xs, 0))
    ys, _ = run(coll_program(lambda s, ti, to: s.reduce_scatter("sum", 1, ti, 2, to, 0, g, signal=[0]),
                             (chips, 4), (1, 4), chips, topology), xs)
    total = np.sum(np.stack(xs), 0)
    for r, y in enumerate(ys):
        np.testing.assert_allclose(y, total[r:r + 1], rtol=1e-5, atol=1e-6)
    ys, _ = run(coll_program(lambda s, ti, to: s.all_to_all(1, ti, 2, to, 0, 1, g, signal=[0]),
                             (chips, 4), (1, 4 * chips), chips, topology), xs)
    for r, y in enumerate(ys):
        np.testing.assert_array_equal(y, np.concatenate([x[r:r + 1] for x in xs], 1))


def test_subgroups_reduce_independently():
    groups = [[0, 2], [1, 3]]
    prog = coll_program(lambda s, ti, to: s.all_reduce("sum", 1, ti, 2, to, groups, signal=[0]), (4,), (4,), 4, "ring")
    xs = data(4, (4,))
    ys, _ = run(prog, xs)
    np.testing.assert_allclose(ys[0], xs[0] + xs[2], rtol=1e-6)
    np.testing.assert_allclose(ys[3], xs[1] + xs[3], rtol=1e-6)


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_send_recv_ring_shift(topology):
    chips = 4
    def emit(s, ti, to):
        s.chip_id(3); s.li(4, 1); s.li(5, chips)
        s.salu("add", 6, 3, 4); s.salu("rem", 6, 6, 5)          # next = (id+1) % n
        s.salu("add", 7, 3, 5); s.salu("sub", 7, 7, 4); s.salu("rem", 7, 7, 5)  # prev
        s.send(1, ti, 6, channel=3)
        s.recv(2, to, 7, channel=3, signal=[0])
    xs = data(chips, (16,))
    ys, _ = run(coll_program(emit, (16,), (16,), chips, topology), xs)
    for r in range(chips):
        np.testing.assert_array_equal(ys[r], xs[(r - 1) % chips])


def test_peer_dma_writes_other_chips_hbm():
    def emit(s, ti, to):
        s.chip_id(3); s.li(4, 1); s.salu("sub", 5, 4, 3)      # peer = 1 - id
        s.dma(1, ti, 2, to, queue=0, peer=5, signal=[1])
        s.barrier([[0, 1]], wait=[1], signal=[0])              # both DMAs done before anyone reads
    xs = data(2, (32,))
    ys, _ = run(coll_program(emit, (32,), (32,), 2, "switch"), xs)
    np.testing.assert_array_equal(ys[0], xs[1])
    np.testing.assert_array_equal(ys[1], xs[0])


def test_mismatched_collectives_raise_naming_chips():
    def emit(s, ti, to):
        s.chip_id(3)
        g = [[0, 1]]
        s.if_(3, lambda: s.all_gather(1, ti, 2, s.tile("hbm", "f32", [16]), 0, g, signal=[0]),
              lambda: s.all_reduce("sum", 1, ti, 2, to, g, signal=[0]))
    with pytest.raises(CollectiveMismatchError) as e:
        run(coll_program(emit, (8,), (8,), 2, "switch"), data(2, (8,)))
    msg = str(e.value)
    assert "chip 0" in msg and "chip 1" in msg and "all_reduce" in msg and "all_gather" in msg


def test_mismatched_shapes_raise():
    def emit(s, ti, to):
        s.chip_id(3)
        g = [[0, 1]]
        small = s.tile("hbm", "f32", [4])
        s.if_(3, lambda: s.all_reduce("sum", 1, small, 2, small, g, signal=[0]),
              lambda: s.all_reduce("sum", 1, ti, 2, to, g, signal=[0]))
    with pytest.raises(CollectiveMismatchError, match=r"f32\[4\].*f32\[8\]|f32\[8\].*f32\[4\]"):
        run(coll_program(emit, (8,), (8,), 2, "switch"), data(2, (8,)))


def test_missing_collective_is_diagnosed_not_a_hang():
    def emit(s, ti, to):
        s.chip_id(3)
        s.if_(3, lambda: s.all_reduce("sum", 1, ti, 2, to, [[0, 1]], signal=[0]), lambda: s.sem_signal([0]))
    with pytest.raises(CollectiveMismatchError, match="chip 0 finished without issuing it"):
        run(coll_program(emit, (8,), (8,), 2, "switch"), data(2, (8,)))


def test_recv_without_send_deadlocks_with_message():
    def emit(s, ti, to):
        s.li(6, 1)
        s.chip_id(3)
        s.if_(3, lambda: s.recv(2, to, 3, channel=9, signal=[0]), lambda: s.sem_signal([0]))
    with pytest.raises(DeadlockError, match="recv\\) waits for a send from chip 1 on channel 9"):
        run(coll_program(emit, (8,), (8,), 2, "switch"), data(2, (8,)))


def test_critical_path_crosses_from_a_recv_to_its_send():
    """A recv that waits for its peer: the traced critical path runs through
    the sender's work up to the send, then the recv from the delivery on (not
    the recv's whole wait on the receiving chip)."""
    from nova.sim.critical_path import WAITING

    def emit(s, ti, to):
        s.chip_id(3)
        s.li(4, 0); s.li(5, 1); s.li(6, 0)
        work = s.tile("sram", "f32", (32, 32))
        chip0 = lambda: (s.dma(1, ti, 6, work, signal=[1]),
                         s.vunary("neg", 6, work, 6, work, wait=[1], signal=[2]),
                         s.vunary("neg", 6, work, 6, work, wait=[2], signal=[3]),
                         s.vunary("neg", 6, work, 6, work, wait=[3], signal=[4]),
                         s.send(6, work, 5, channel=1, wait=[4], signal=[0]))
        chip1 = lambda: s.recv(2, to, 4, channel=1, signal=[0])
        s.if_(3, chip1, chip0)

    prog = coll_program(emit, (32, 32), (32, 32), 2, "switch")
    xs = data(2, (32, 32))
    simulator = Simulator(prog, trace=True)
    out, rep = simulator.run(per_chip={c: {"x": x} for c, x in enumerate(xs)})
    np.testing.assert_allclose(out["chips"][1]["y"], -xs[0], rtol=1e-5)
    path = simulator.critical_path()
    steps = [(seg.chip, seg.name) for seg in path if seg.engine != WAITING]
    assert steps[-2:] == [(0, "send"), (1, "recv")], steps
    assert [name for chip, name in steps if chip == 0].count("vunary") == 3, steps
    recv = path[-1]
    send = path[-2]
    assert recv.start_ns == pytest.approx(send.end_ns)
    for before, after in zip(path, path[1:]):
        assert after.start_ns == pytest.approx(before.end_ns, abs=1e-6)
    assert sum(seg.duration_ns for seg in path) <= rep.time_ns
