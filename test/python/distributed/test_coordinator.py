"""The coordinator of simulated time across process groups, in one process: each rank
is a thread with its own Coordinator on one shared store (torchrun's tests run the
real ranks). Ends must equal the machine's flow model run on the same collectives from
the same starts, on every rank, whatever order the ranks' threads ran in."""
from __future__ import annotations

import threading
import time
import warnings
from datetime import timedelta

import pytest
import torch.distributed as dist

from nova.distributed import PeerFailure
from nova.distributed.coordinator import Coordinator
from nova.sim.collective_time import collective_time_ns, simulate_collectives

TARGET = "nova-t1-ring8"
MIB = 1 << 20


def ranks(world: int, timeout: float = 60.0) -> list[Coordinator]:
    store = dist.HashStore()
    return [Coordinator(store, r, world, timedelta(seconds=timeout), TARGET) for r in range(world)]


def run(c: list[Coordinator], *jobs) -> list:  # noqa: ANN002 - one callable per rank
    """Runs every rank's job on its own thread, then its exit (as a rank's process
    exits); their results (or raises the first error)."""
    out: list = [None] * len(jobs)
    errors: list[BaseException] = []

    def go(i: int) -> None:
        try:
            out[i] = jobs[i]()
            c[i].exit()
        except BaseException as e:  # noqa: BLE001 - re-raised on the test's thread
            errors.append(e)
    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    if errors:
        raise errors[0]
    return out


def fs(ns: float) -> int:
    return round(ns * 1e6)


def test_a_collective_alone_ends_at_its_price_alone() -> None:
    c = ranks(2)
    key = ("g", 1)

    def rank(r: int, clock: int):  # noqa: ANN202
        return lambda: (c[r].arrive(key, "all_reduce", (0, 1), MIB, 4, clock), c[r].end(key))[1]
    ends = run(c, rank(0, 1000), rank(1, 5000))
    assert ends == [5000 + fs(collective_time_ns(TARGET, "all_reduce", (0, 1), MIB))] * 2


def test_a_groups_collectives_run_in_order() -> None:
    c = ranks(2)
    alone = fs(collective_time_ns(TARGET, "all_reduce", (0, 1), MIB))

    def rank(r: int):  # noqa: ANN202
        def job() -> list[int]:
            c[r].arrive(("g", 1), "all_reduce", (0, 1), MIB, 4, 0)
            c[r].arrive(("g", 2), "all_reduce", (0, 1), MIB, 4, 10)
            return [c[r].end(("g", 1)), c[r].end(("g", 2))]
        return job
    assert run(c, rank(0), rank(1)) == [[alone, 2 * alone]] * 2


@pytest.mark.parametrize("late", [None, 0, 3])
def test_concurrent_groups_share_links_as_the_machine_does(late: int | None) -> None:
    """{0, 2} and {1, 3} on a ring share links; a rank that logs late (``late``) changes
    nothing: the simulation waits for it."""
    c = ranks(4)
    starts = {0: 2_000_000, 1: 3_000_000}  # fs: group a starts at 2 ns, b at 3 ns
    groups = {0: ("a", (0, 2)), 2: ("a", (0, 2)), 1: ("b", (1, 3)), 3: ("b", (1, 3))}

    def rank(r: int):  # noqa: ANN202
        def job() -> int:
            if r == late:
                time.sleep(0.5)
            name, chips = groups[r]
            c[r].arrive((name, 1), "all_reduce", chips, MIB, 4, starts[r % 2])
            return c[r].end((name, 1))
        return job
    ends = run(c, *(rank(r) for r in range(4)))
    want = simulate_collectives(TARGET, [("all_reduce", (0, 2), MIB, 2.0), ("all_reduce", (1, 3), MIB, 3.0)])
    assert ends[0] == ends[2] == fs(want[0]) and ends[1] == ends[3] == fs(want[1])
    alone = collective_time_ns(TARGET, "all_reduce", (0, 2), MIB)
    assert want[0] > 2.0 + alone * 1.2  # the links are shared: slower than alone


def test_a_rank_never_arrives_before_the_start_of_its_previous_collective() -> None:
    c = ranks(4)
    a = fs(collective_time_ns(TARGET, "all_reduce", (0, 1), MIB))

    def job0() -> list[int]:
        c[0].arrive(("a", 1), "all_reduce", (0, 1), MIB, 4, 0)
        c[0].arrive(("b", 1), "all_reduce", (0, 2), MIB, 4, 0)  # its clock says 0: counts from a's start
        return [c[0].end(("a", 1)), c[0].end(("b", 1))]

    def job1() -> list[int]:
        c[1].arrive(("a", 1), "all_reduce", (0, 1), MIB, 4, 7_000_000)
        return [c[1].end(("a", 1))]

    def job2() -> list[int]:
        c[2].arrive(("b", 1), "all_reduce", (0, 2), MIB, 4, 0)
        return [c[2].end(("b", 1))]
    ends = run(c, job0, job1, job2, lambda: None)  # rank 3 takes no part
    want = simulate_collectives(TARGET, [("all_reduce", (0, 1), MIB, 7.0), ("all_reduce", (0, 2), MIB, 7.0)])
    assert ends[0] == [fs(want[0]), fs(want[1])] and ends[1] == [fs(want[0])] and ends[2] == [fs(want[1])]
    assert fs(want[0]) > 7_000_000 + a  # b, starting beside it, slowed it down


def test_host_collectives_synchronise_the_ranks_floors() -> None:
    c = ranks(2)

    def job0() -> int:
        c[0].host("g", 1, (0, 1))
        c[0].arrive(("g", 1), "all_reduce", (0, 1), MIB, 4, 100)
        return c[0].end(("g", 1))

    def job1() -> int:
        c[1].host("g", 1, (0, 1))
        c[1].arrive(("g", 1), "all_reduce", (0, 1), MIB, 4, 900)
        return c[1].end(("g", 1))
    alone = fs(collective_time_ns(TARGET, "all_reduce", (0, 1), MIB))
    assert run(c, job0, job1) == [900 + alone] * 2


def test_a_rank_that_logs_nothing_is_taken_to_wait_after_the_stall_time(monkeypatch) -> None:  # noqa: ANN001
    """Rank 1 sits in a barrier of another backend (invisible): after NOVA_DIST_STALL_S
    the waiting ranks log it as waiting for their collective, and say so."""
    monkeypatch.setenv("NOVA_DIST_STALL_S", "0.3")
    c = ranks(3)
    gate = threading.Event()

    def member(r: int):  # noqa: ANN202
        def job() -> int:
            c[r].arrive(("g", 1), "all_reduce", (0, 2), MIB, 4, 0)
            end = c[r].end(("g", 1))
            gate.set()
            return end
        return job

    def idle() -> int:
        gate.wait(30)  # "the barrier": released only after the others are done
        c[1].arrive(("h", 1), "all_reduce", (1,), MIB, 4, 0)
        return c[1].end(("h", 1))
    with warnings.catch_warnings(record=True) as seen:  # (the others must not stall)
        warnings.simplefilter("always")
        ends = run(c, member(0), idle, member(2))
    alone = fs(collective_time_ns(TARGET, "all_reduce", (0, 2), MIB))
    assert ends[0] == ends[2] == alone
    assert ends[1] == alone  # rank 1 counted as waiting for the collective: it arrives at its end
    assert any("global rank(s) [1] logged nothing" in str(w.message) for w in seen)


def test_a_wait_that_cannot_end_raises_naming_the_ranks() -> None:
    c = ranks(2, timeout=0.5)
    c[0].arrive(("g", 1), "all_reduce", (0, 1), MIB, 4, 0)
    with pytest.raises(PeerFailure, match=r"collective #1 of process group 'g'.*global rank 1 at 0.000 ns"):
        c[0].end(("g", 1))


def test_a_transfer_starts_when_both_ends_are_posted_and_shares_links() -> None:
    """send 0 -> 2 (posted at 1 ns, received from 4 ns) beside an all-reduce of {1, 3}
    from 5 ns: both end as the machine's flow model runs them together."""
    c = ranks(4)
    msg, ar = ("p#0>2", 1), ("b", 1)

    def sender() -> int:
        c[0].arrive(msg, "send", (0, 2), MIB, 4, 1_000_000)
        return c[0].end(msg)

    def receiver() -> int:
        c[2].arrive(msg, "send", (0, 2), MIB, 4, 4_000_000)
        c[2].will_wait(msg)
        return c[2].end(msg)

    def member(r: int):  # noqa: ANN202
        return lambda: (c[r].arrive(ar, "all_reduce", (1, 3), MIB, 4, 5_000_000), c[r].end(ar))[1]
    ends = run(c, sender, member(1), receiver, member(3))
    want = simulate_collectives(TARGET, [("send", (0, 2), MIB, 4.0), ("all_reduce", (1, 3), MIB, 5.0)])
    assert ends == [fs(want[0]), fs(want[1]), fs(want[0]), fs(want[1])]
    assert want[0] > 4.0 + collective_time_ns(TARGET, "send", (0, 2), MIB)  # slowed by the all-reduce
