"""One simulated time for the collectives of every group: concurrent groups share links.

Every rank appends to one log in the job's c10d store what it does that touches the
interconnect: its arrival at a collective or at either end of a point-to-point transfer
and its clock there ("A"), a wait for one's end ("B"), its exit ("X"), and its
host-side collectives (on CPU tensors: an "A" of kind "host", a synchronisation at no
simulated cost). Every rank reads the same log and runs the same conservative discrete-event
simulation of the system's collectives in the machine's flow model
(:class:`nova.sim.collective_time.CollectiveSim`): a collective starts when its last
member arrives, after its group's previous one (a communicator runs its collectives in
order; a transfer, when both its send and its receive are posted, after the previous
one between the same two ranks), and its flows share links and memory ports with every
other one in flight.

The simulation passes a time only when no rank can still arrive before it. Each rank
has a floor: a collective it joins is never placed before the start of one it joined
earlier, or the end of one it waited for (its arrival is raised to its floor). A rank that needs a collective's end waits, in wall
time, until the simulation has reached it. What is computed depends only on the log,
never on when a rank read it, so every rank gets the same ends. A collective that ran
with no other in flight ends exactly at its price alone
(:func:`nova.sim.collective_time.collective_time_ns`).

A rank blocked where the log cannot see it (a collective of another backend, such as
``cpu:gloo``'s barrier) would hold every waiting rank back. When a rank has waited
``NOVA_DIST_STALL_S`` seconds (default 5) and the ranks holding it back have logged
nothing, it logs for each of them that it waits for the same collective ("T"), as a
host-side barrier behind it would; the log, read in one order by every rank, keeps
the ranks in agreement, and a warning names the ranks. docs/distributed.md.
"""
from __future__ import annotations

import atexit
import json
import os
import threading
import time
import warnings
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable

import torch.distributed as dist

from nova.distributed.work import PeerFailure
from nova.sim.collective_time import CollectiveSim, collective_time_ns

INF = 1 << 62
Key = tuple[str, int]  # (process group, its collective number)


@dataclass(eq=False)
class _Collective:
    key: Key
    kind: str
    chips: tuple[int, ...]  # the root first
    nbytes: int
    elt: int
    arrivals: dict[int, int] = field(default_factory=dict)
    start: int | None = None
    end: int | None = None
    overlapped: bool = False
    on_end: list[Callable[[int, int], None]] = field(default_factory=list)


@dataclass
class _Rank:
    events: list[list] = field(default_factory=list)
    cursor: int = 0
    floor: int = 0
    wait: tuple | None = None  # ("start" | "end", Key)
    exited: bool = False


def _base(store: dist.Store) -> dist.Store:
    """The job's own store under the groups' prefixes (one log for every group)."""
    while isinstance(store, dist.PrefixStore):
        store = store.underlying_store
    return store


class Coordinator:
    def __init__(self, store: dist.Store, rank: int, world: int, timeout: timedelta,
                 target: object) -> None:
        self.store = dist.PrefixStore("nova-coord/", _base(store))
        self.rank, self.world, self.timeout = rank, world, timeout
        self.target = target
        self.ranks = [_Rank() for _ in range(world)]
        self.collectives: dict[Key, _Collective] = {}
        self.unstarted: list[_Collective] = []
        self.inflight: set[_Collective] = set()
        self.read = 0
        self.lock = threading.RLock()
        self.sim = CollectiveSim(target)
        self.closed = False

    # -- what this rank tells the others -------------------------------------------
    def _post(self, *event: object) -> None:
        with self.lock:
            if self.closed:
                return
            i = self.store.add("n", 1)
            self.store.set(f"e{i}", json.dumps([self.rank, *event]))

    def arrive(self, key: Key, kind: str, chips: tuple[int, ...], nbytes: int, elt: int, clock_fs: int,
               on_end: Callable[[int, int], None] | None = None) -> None:
        """This rank issues collective ``key`` at ``clock_fs``; ``on_end(start, end)``
        once its time is known here."""
        with self.lock:
            c = self.collectives.get(key)
            if c is None:
                c = self.collectives[key] = _Collective(key, kind, chips, nbytes, elt)
                self.unstarted.append(c)
            if on_end is not None:
                c.on_end.append(on_end)
            self._post("A", key[0], key[1], kind, list(chips), nbytes, elt, clock_fs)

    def will_wait(self, key: Key) -> None:
        """This rank is about to block (wall clock) until ``key`` is done: it arrives
        nowhere before its end."""
        self._post("B", key[0], key[1])

    def host(self, group: str, seq: int, chips: tuple[int, ...]) -> None:
        """This rank joins host-side collective ``seq`` of ``group`` (CPU tensors): the
        members leave it together, at the latest of their floors."""
        self._post("A", f"{group}#host", seq, "host", list(chips), 0, 1, 0)

    def exit(self) -> None:
        try:
            self._post("X")
        except Exception:  # noqa: BLE001 - the store may be gone at interpreter exit
            pass
        self.closed = True

    def end(self, key: Key) -> int:
        """The simulated end of collective ``key``; blocks (wall clock) until every rank
        that could still change it has gone past it."""
        self._post("B", key[0], key[1])
        deadline = time.monotonic() + self.timeout.total_seconds()
        stall = float(os.environ.get("NOVA_DIST_STALL_S", "5"))
        seen, quiet_since = -1, time.monotonic()
        while True:
            with self.lock:
                self._pull()
                self._advance()
                c = self.collectives[key]
                if c.end is not None:
                    return c.end
                nxt = self.read + 1
                if self.read != seen:
                    seen, quiet_since = self.read, time.monotonic()
                elif time.monotonic() - quiet_since > stall:
                    self._unstall(c)
                    quiet_since = time.monotonic()
            left = deadline - time.monotonic()
            if left <= 0:
                raise PeerFailure(self._stuck(key))
            try:
                # at least 10 ms: a zero time-out would mean "wait forever"
                self.store.wait([f"e{nxt}"], timedelta(seconds=min(max(left, 0.01), 1.0)))
            except Exception:  # noqa: BLE001 - a wait's time-out; the deadline decides
                pass

    # -- the shared log -------------------------------------------------------------
    def _unstall(self, c: _Collective) -> None:
        """Ranks outside ``c`` that hold the simulation back and log nothing are taken
        to wait for ``c`` (see the module's text)."""
        lb, horizon = self._bounds(), self._horizon()
        idle = [r for r, rk in enumerate(self.ranks)
                if lb[r] == horizon and rk.wait is None and not rk.exited and r not in c.chips]
        for r in idle:
            self._post("T", r, c.key[0], c.key[1])
        if idle:
            warnings.warn(f"torch.distributed on nova: global rank(s) {idle} logged nothing for "
                          f"{os.environ.get('NOVA_DIST_STALL_S', '5')} s while collective #{c.key[1]} of "
                          f"process group {c.key[0]!r} waited for them; counted as waiting for it (a "
                          f"host-side synchronisation the coordinator cannot see, e.g. a gloo barrier)",
                          stacklevel=4)

    def _pull(self) -> None:
        n = self.store.add("n", 0)
        if n <= self.read:
            return
        for value in self.store.multi_get([f"e{i}" for i in range(self.read + 1, n + 1)]):
            rank, *event = json.loads(bytes(value))
            if event[0] == "T":  # on behalf of another rank: its wait, at this place in the log
                rank, event = event[1], ["B", event[2], event[3]]
            self.ranks[rank].events.append(event)
        self.read = n

    def _known(self, wait: tuple) -> int | None:
        what, key = wait
        c = self.collectives[key]
        return c.start if what == "start" else c.end

    def _consume(self, r: int) -> bool:
        """Takes rank ``r``'s events in order while each one's effect is known."""
        rk, moved = self.ranks[r], False
        while True:
            if rk.wait is not None:
                value = self._known(rk.wait)
                if value is None:
                    return moved
                rk.floor, rk.wait, moved = max(rk.floor, value), None, True
            if rk.cursor == len(rk.events):
                return moved
            event = rk.events[rk.cursor]
            rk.cursor += 1
            moved = True
            tag = event[0]
            if tag == "A":
                _, group, seq, kind, chips, nbytes, elt, t = event
                key = (group, seq)
                c = self.collectives.get(key)
                if c is None:
                    c = self.collectives[key] = _Collective(key, kind, tuple(chips), nbytes, elt)
                    self.unstarted.append(c)
                rk.floor = c.arrivals[r] = max(t, rk.floor)
                if kind != "send":  # a posted send or receive does not block its rank
                    rk.wait = ("start", key)
            elif tag == "B":
                rk.wait = ("end", (event[1], event[2]))
            elif tag == "X":
                rk.exited, rk.floor = True, INF

    def _start_ready(self) -> bool:
        moved = False
        for c in list(self.unstarted):
            if len(c.arrivals) < len(c.chips):
                continue
            prev = self.collectives.get((c.key[0], c.key[1] - 1))
            if prev is not None and prev.end is None:
                continue
            self.unstarted.remove(c)
            c.start = max([*c.arrivals.values(), prev.end if prev is not None else 0])
            moved = True
            if len(c.chips) <= 1 or c.kind == "host":
                self._finish(c, c.start)
                continue
            self.sim.begin(c.start / 1e6, c.kind, c.chips, c.nbytes, c.elt, c.key,
                           lambda end_ns, c=c: self._done(c, end_ns), lambda c=c: self._began(c))
        return moved

    def _began(self, c: _Collective) -> None:
        if self.inflight:
            c.overlapped = True
            for other in self.inflight:
                other.overlapped = True
        self.inflight.add(c)

    def _done(self, c: _Collective, end_ns: float) -> None:
        self.inflight.discard(c)
        if c.overlapped:
            self._finish(c, max(c.start, round(end_ns * 1e6)))
        else:  # exactly the price alone, as the ranks of one group have always agreed
            alone = collective_time_ns(self.target, c.kind, c.chips, c.nbytes, elt=c.elt)
            self._finish(c, c.start + round(alone * 1e6))

    def _finish(self, c: _Collective, end: int) -> None:
        c.end = end
        for fn in c.on_end:
            fn(c.start, end)
        c.on_end.clear()

    def _horizon(self) -> int:
        """No rank can arrive at a collective before this time (the least floor, with
        each blocked rank's floor raised to what it waits for)."""
        return min(self._bounds())

    def _bounds(self) -> list[int]:
        lb = [INF if rk.exited else rk.floor for rk in self.ranks]
        for _ in range(self.world + 1):
            changed = False
            for r, rk in enumerate(self.ranks):
                if rk.exited or rk.wait is None:
                    continue
                key = rk.wait[1]
                if self.collectives[key].start is not None:
                    v = INF  # running: its end comes from an event of the simulation
                else:
                    v = self._start_bound(self.collectives[key], lb)
                if v > lb[r]:
                    lb[r], changed = v, True
            if not changed:
                break
        return lb

    def _start_bound(self, c: _Collective, lb: list[int]) -> int:
        v = max([*c.arrivals.values(), *(lb[m] for m in c.chips if m not in c.arrivals)])
        prev = self.collectives.get((c.key[0], c.key[1] - 1))
        if prev is None or prev.end is not None:
            return max(v, prev.end if prev is not None else 0)
        return INF if prev.start is not None else max(v, self._start_bound(prev, lb))

    def _advance(self) -> None:
        while True:
            moved = False
            for r in range(self.world):
                moved |= self._consume(r)
            moved |= self._start_ready()
            if moved:
                continue
            nxt = self.sim.next_ns()
            if nxt is None or nxt * 1e6 >= self._horizon():
                return
            self.sim.step()

    def _stuck(self, key: Key) -> str:
        behind = []
        for r, rk in enumerate(self.ranks):
            if rk.exited:
                continue
            state = f"waiting for {rk.wait[0]} of {rk.wait[1]}" if rk.wait else "running"
            behind.append(f"global rank {r} at {rk.floor / 1e6:.3f} ns ({state}, {len(rk.events)} events)")
        return (f"collective #{key[1]} of process group {key[0]!r}: its simulated end was not known "
                f"within the process group's timeout ({self.timeout.total_seconds():.0f} s); "
                f"ranks: {'; '.join(behind)}")


_current: Coordinator | None = None
_lock = threading.Lock()


def for_store(store: dist.Store, timeout: timedelta, target: object) -> Coordinator:
    """This process's coordinator: one per job (``store`` is the job's, or prefixes it)."""
    global _current
    with _lock:
        if _current is None or _current.closed:
            _current = Coordinator(store, dist.get_rank(), dist.get_world_size(), timeout, target)
        return _current


def close_all() -> None:
    """This rank will arrive nowhere again (the world group's shutdown, or exit)."""
    global _current
    with _lock:
        if _current is not None:
            _current.exit()
        _current = None


atexit.register(close_all)
