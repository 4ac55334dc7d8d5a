"""The ``nova`` c10d backend: one rank, one simulated chip.

Every op of c10d's Backend arrives here from C++ (``nova.device.make_backend``). For
tensors on the nova device, the rank tells the job's coordinator when it arrives
(:mod:`nova.distributed.coordinator`: every group's collectives in one simulation of
the machine's links, so every rank gets the same start and end), and the ranks of
the group exchange one row each (:mod:`nova.distributed.calls`): their calls must
agree. The bytes move with gloo between host aliases of the tensors' memory (no
copies); the outputs are marked pending until the end (:mod:`nova.device.pending`).
CPU tensors go to gloo as they are, with no simulated time.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Callable

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import AllgatherOptions, AllreduceOptions, ReduceOp

from nova.device import as_host, current_device, pending, profile
from nova.device.clock import current_stream
from nova.device.config import settings
from nova.device.host import user_line
from nova.distributed import coordinator, timing
from nova.distributed.calls import WIDTH, Call, CollectiveMismatch, check_agree
from nova.distributed.coordinator import Coordinator
from nova.distributed.work import Coalesced, NovaWork, PeerFailure
from nova.errors import NovaError

Launch = Callable[[list, list], list]


def _op_name(op: ReduceOp) -> str:
    return str(op.op).rsplit(".", 1)[-1]


def _alias(t: torch.Tensor) -> torch.Tensor:
    if t.device.type != "nova":
        return t
    if not t.is_contiguous():
        raise NovaError("torch.distributed on nova: collectives need contiguous tensors "
                        f"(got shape {list(t.shape)} with strides {list(t.stride())})")
    return as_host(t)


def _aliases(values: list) -> list:
    return [_aliases(v) if isinstance(v, list) else _alias(v) for v in values]


def _elt(tensors: list[torch.Tensor]) -> int:
    return tensors[0].element_size() if tensors else 4


def _flat(values: list) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for v in values:
        out.extend(_flat(v) if isinstance(v, list) else [v])
    return out


class NovaBackend:
    """The Python side of one process group's backend on this rank."""

    def __init__(self, store: dist.Store, rank: int, size: int, timeout: timedelta,
                 chips: tuple[int, ...], name: str) -> None:
        self.gloo = dist.ProcessGroupGloo(dist.PrefixStore("nova-gloo/", store), rank, size, timeout)
        self.rank, self.size, self.chips, self.name = rank, size, chips, name
        self.store, self.timeout = store, timeout
        self.seq = 0
        self.host_seq = 0
        self.sent: dict[int, int] = {}  # messages sent to / received from each peer
        self.received: dict[int, int] = {}
        self.coalescing: list[NovaWork] | None = None

    # -- the common path ------------------------------------------------------------
    def _agree(self, call: Call, clock_fs: int) -> None:
        rows = torch.empty(self.size, WIDTH, dtype=torch.int64)
        work = self.gloo._allgather_base(rows.view(-1), call.encode(self.seq, clock_fs), AllgatherOptions())
        try:
            work.wait()
        except RuntimeError as e:
            raise PeerFailure(f"torch.distributed on nova: rank {self.chips[self.rank]} could not "
                              f"start {call} in process group {self.name!r}: a peer rank exited, "
                              f"hung past the process group's timeout, or its connection broke "
                              f"({str(e).splitlines()[0]})") from e
        check_agree(self.name, rows.tolist(), self.chips, user_line())

    def _collective(self, call: Call, inputs: list, outputs: list, launch: Launch,
                    nbytes: int, finish: Callable[[list], None] | None = None) -> NovaWork:
        ins, outs = _aliases(inputs), _aliases(outputs)
        flat = _flat(inputs) + _flat(outputs)
        device = next((t.device.index or 0 for t in flat if t.device.type == "nova"),
                      current_device() if call.kind == "barrier" and not flat else None)
        what = f"{call} in process group {self.name!r}"
        done = (lambda: finish(outs)) if finish else None
        if device is None:  # host tensors: gloo as it is, no simulated time
            if dist.is_initialized():  # not the ones of init_process_group itself
                self.host_seq += 1
                self._coordinator().host(self.name, self.host_seq, self.chips)
            return self._keep(NovaWork(launch(ins, outs), what, None, _flat(outputs), None, done))
        self.seq += 1
        pending.settle(flat, device)
        clock = current_stream(device).clock_fs
        key, elt = (self.name, self.seq), _elt(flat)
        chips = self._ordered(call.root)
        coord = self._coordinator()

        def trace(start: int, end: int) -> None:
            profile.record(f"c10d::{call.kind}", start / 1e6, end / 1e6, (end - start) / 1e6, nbytes,
                           lane="comm", args=self._log(call.kind, nbytes, elt, start, chips, key[1]))
        coord.arrive(key, timing.priced_kind(call.kind), chips, nbytes, elt, clock, trace)
        self._agree(call, clock)
        work = NovaWork(launch(ins, outs), what, device, _flat(outputs), lambda: coord.end(key), done)
        pending.mark(flat, work)
        return self._keep(work)

    def _coordinator(self) -> Coordinator:
        return coordinator.for_store(self.store, self.timeout, settings.description)

    def _ordered(self, root: int) -> tuple[int, ...]:
        """The group's chips, a rooted collective's root first."""
        if root < 0:
            return self.chips
        return (self.chips[root],) + tuple(c for c in self.chips if c != self.chips[root])

    def _log(self, kind: str, nbytes: int, elt: int, start_fs: int, chips: tuple[int, ...],
             seq: int | str) -> dict:
        """What the trace keeps of a collective, for ``nova merge-traces`` to price
        the ranks' collectives together from the same starts."""
        return {"target": settings.target, "group": self.name, "seq": seq, "kind": timing.priced_kind(kind),
                "chips": list(chips), "nbytes": nbytes, "elt": elt, "start_ns": start_fs / 1e6}

    def _keep(self, work: NovaWork) -> NovaWork:
        if self.coalescing is not None:
            self.coalescing.append(work)
        return work

    def _reduce_opts(self, opts, cls=AllreduceOptions):  # noqa: ANN001 - c10d options classes
        """gloo has no AVG or PREMUL_SUM: they travel as SUM, scaled before or after."""
        op = _op_name(opts.reduceOp)
        out = cls()
        out.reduceOp = ReduceOp.SUM if op in ("AVG", "PREMUL_SUM") else opts.reduceOp
        out.timeout = opts.timeout
        for field in ("rootRank", "rootTensor"):
            if hasattr(opts, field):
                setattr(out, field, getattr(opts, field))
        return op, out

    def _scaled(self, op: str, opts, tensors: list[torch.Tensor]) -> list[torch.Tensor]:  # noqa: ANN001
        if op == "PREMUL_SUM":
            factor = opts.reduceOp.factor
            return [t * (factor.item() if isinstance(factor, torch.Tensor) else factor) for t in tensors]
        return tensors

    def _averaged(self, op: str) -> Callable[[list], None] | None:
        if op != "AVG":
            return None
        return lambda outs: [t.div_(self.size) if t.is_floating_point() else
                             t.copy_(torch.div(t, self.size, rounding_mode="floor")) for t in _flat(outs)]

    # -- c10d's ops -----------------------------------------------------------------
    def allreduce(self, tensors: list[torch.Tensor], opts) -> NovaWork:  # noqa: ANN001
        op, o = self._reduce_opts(opts)

        def launch(ins: list, outs: list) -> list:
            if op == "PREMUL_SUM":
                for a, s in zip(outs, self._scaled(op, opts, outs)):
                    a.copy_(s)
            return [self.gloo.allreduce(outs, o)]
        t = tensors[0]
        return self._collective(Call.of("all_reduce", t, op), [], tensors, launch,
                                t.numel() * t.element_size(), self._averaged(op))

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts) -> NovaWork:  # noqa: ANN001
        works = []
        for t in tensors:
            o = AllreduceOptions()
            o.reduceOp, o.timeout = opts.reduceOp, opts.timeout
            works.append(self.allreduce([t], o))
        return Coalesced(works)

    def broadcast(self, tensors: list[torch.Tensor], opts) -> NovaWork:  # noqa: ANN001
        t = tensors[0]
        return self._collective(Call.of("broadcast", t, root=opts.rootRank), [], tensors,
                                lambda ins, outs: [self.gloo.broadcast(outs, opts)],
                                t.numel() * t.element_size())

    def reduce(self, tensors: list[torch.Tensor], opts) -> NovaWork:  # noqa: ANN001
        op, o = self._reduce_opts(opts, dist.ReduceOptions)
        t = tensors[0]
        average = self._averaged(op) if self.rank == opts.rootRank else None

        def launch(ins: list, outs: list) -> list:
            if op == "PREMUL_SUM":
                for a, s in zip(outs, self._scaled(op, opts, outs)):
                    a.copy_(s)
            return [self.gloo.reduce(outs, o)]
        return self._collective(Call.of("reduce", t, op, opts.rootRank), [], tensors, launch,
                                t.numel() * t.element_size(), average)

    def allgather(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts) -> NovaWork:  # noqa: ANN001
        t = inputs[0]
        return self._collective(Call.of("all_gather", t), inputs, outputs,
                                lambda ins, outs: [self.gloo.allgather(outs, ins, opts)],
                                t.numel() * t.element_size())

    def allgather_base(self, output: torch.Tensor, input: torch.Tensor, opts) -> NovaWork:  # noqa: ANN001
        return self._collective(Call.of("all_gather", input), [input], [output],
                                lambda ins, outs: [self.gloo._allgather_base(outs[0], ins[0], opts)],
                                input.numel() * input.element_size())

    def allgather_coalesced(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor],
                            opts) -> NovaWork:  # noqa: ANN001
        return Coalesced([self.allgather([o], [i], opts) for o, i in zip(outputs, inputs)])

    def allgather_into_tensor_coalesced(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
                                        opts) -> NovaWork:  # noqa: ANN001
        return Coalesced([self.allgather_base(o, i, opts) for o, i in zip(outputs, inputs)])

    def reduce_scatter(self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]],
                       opts) -> NovaWork:  # noqa: ANN001
        op, o = self._reduce_opts(opts, dist.ReduceScatterOptions)
        t = outputs[0]

        def launch(ins: list, outs: list) -> list:
            return [self.gloo.reduce_scatter(outs, [self._scaled(op, opts, x) for x in ins], o)]
        return self._collective(Call.of("reduce_scatter", t, op), inputs, outputs, launch,
                                t.numel() * t.element_size() * self.size, self._averaged(op))

    def reduce_scatter_base(self, output: torch.Tensor, input: torch.Tensor, opts) -> NovaWork:  # noqa: ANN001
        op, o = self._reduce_opts(opts, dist.ReduceScatterOptions)

        def launch(ins: list, outs: list) -> list:
            return [self.gloo._reduce_scatter_base(outs[0], self._scaled(op, opts, ins)[0], o)]
        return self._collective(Call.of("reduce_scatter", input, op), [input], [output], launch,
                                input.numel() * input.element_size(), self._averaged(op))

    def reduce_scatter_tensor_coalesced(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
                                        opts) -> NovaWork:  # noqa: ANN001
        return Coalesced([self.reduce_scatter_base(o, i, opts) for o, i in zip(outputs, inputs)])

    def alltoall_base(self, output: torch.Tensor, input: torch.Tensor, out_splits: list[int],
                      in_splits: list[int], opts) -> NovaWork:  # noqa: ANN001
        return self._collective(
            Call.of("all_to_all", input), [input], [output],
            lambda ins, outs: [self.gloo.alltoall_base(outs[0], ins[0], out_splits, in_splits, opts)],
            input.numel() * input.element_size())

    def alltoall(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts) -> NovaWork:  # noqa: ANN001
        t = inputs[0]
        return self._collective(Call.of("all_to_all", t), inputs, outputs,
                                lambda ins, outs: [self.gloo.alltoall(outs, ins, opts)],
                                sum(x.numel() * x.element_size() for x in inputs))

    def gather(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts) -> NovaWork:  # noqa: ANN001
        t = inputs[0]
        return self._collective(Call.of("gather", t, root=opts.rootRank), inputs, outputs,
                                lambda ins, outs: [self.gloo.gather(outs, ins, opts)],
                                t.numel() * t.element_size() * self.size)

    def scatter(self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], opts) -> NovaWork:  # noqa: ANN001
        t = outputs[0]
        return self._collective(Call.of("scatter", t, root=opts.rootRank), inputs, outputs,
                                lambda ins, outs: [self.gloo.scatter(outs, ins, opts)],
                                t.numel() * t.element_size() * self.size)

    def barrier(self, opts) -> NovaWork:  # noqa: ANN001
        return self._collective(Call.of("barrier", None), [], [], lambda ins, outs: [], 0)

    # -- point to point -------------------------------------------------------------
    def send(self, tensors: list[torch.Tensor], dst: int, tag: int) -> NovaWork:
        t = tensors[0]
        if t.device.type != "nova":
            return self._keep(NovaWork([self.gloo.send(tensors, dst, tag)], "send", None, [], None))
        device = t.device.index or 0
        pending.settle([t], device)
        seq = self.sent[dst] = self.sent.get(dst, 0) + 1
        clock = current_stream(device).clock_fs
        me, peer = self.chips[self.rank], self.chips[dst]
        what = f"send of {Call.of('send', t)} from global rank {me} to {peer}"
        coord, key = self._coordinator(), self._pair(me, peer, seq)
        nbytes = t.numel() * t.element_size()

        def trace(start: int, end: int) -> None:
            profile.record("c10d::send", start / 1e6, end / 1e6, (end - start) / 1e6, nbytes, lane="comm",
                           args=self._log("send", nbytes, t.element_size(), start, (me, peer),
                                          f"{me}->{peer}#{seq}"))
        coord.arrive(key, "send", (me, peer), nbytes, t.element_size(), clock, trace)
        transfers = [self.gloo.send([Call.of("send", t).encode(seq, clock)], dst, tag),
                     self.gloo.send([_alias(t)], dst, tag)]
        work = NovaWork(transfers, what, device, [], lambda: coord.end(key))
        pending.mark([t], work)
        return self._keep(work)

    def _pair(self, src: int, dst: int, seq: int) -> coordinator.Key:
        """The coordinator's name of message ``seq`` from chip ``src`` to ``dst``: a
        transfer from both ends' arrivals, in order with the pair's others."""
        return (f"{self.name}#{src}>{dst}", seq)

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int) -> NovaWork:
        t = tensors[0]
        if t.device.type != "nova":
            return self._keep(NovaWork([self.gloo.recv(tensors, src, tag)], "recv", None, tensors, None))
        device = t.device.index or 0
        pending.settle([t], device)
        seq = self.received[src] = self.received.get(src, 0) + 1
        posted = current_stream(device).clock_fs
        header = torch.empty(WIDTH, dtype=torch.int64)
        mine = Call.of("send", t)
        me, peer = self.chips[self.rank], self.chips[src]
        coord, key = self._coordinator(), self._pair(peer, me, seq)
        coord.arrive(key, "send", (peer, me), t.numel() * t.element_size(), t.element_size(), posted)
        transfers = [self.gloo.recv([header], src, tag), self.gloo.recv([_alias(t)], src, tag)]

        def check() -> None:
            their_seq, theirs, _ = Call.decode(header.tolist())
            if theirs != mine or their_seq != seq:
                raise CollectiveMismatch(
                    f"torch.distributed on nova: global rank {me} posted recv of "
                    f"{str(mine).replace('send', 'tensor', 1)} from global rank {peer} as its message "
                    f"#{seq} from it, but global rank {peer} sent {str(theirs).replace('send', 'tensor', 1)} "
                    f"as message #{their_seq}")

        # (will_wait: the sender may be waiting on this rank's floor while it blocks in gloo)
        work = NovaWork(transfers, f"recv of {mine} on global rank {me} from {peer}", device, [t],
                        lambda: coord.end(key), check, lambda: coord.will_wait(key))
        pending.mark([t], work)
        return self._keep(work)

    # -- coalescing, bookkeeping ----------------------------------------------------
    def start_coalescing(self) -> None:
        self.coalescing = []

    def end_coalescing(self) -> NovaWork:
        works, self.coalescing = self.coalescing or [], None
        return Coalesced(works)

    def sequence_number(self) -> int:
        return self.seq

    def abort(self) -> None:
        self.gloo.abort()

    def shutdown(self) -> None:
        if not dist.is_initialized() or self.size == dist.get_world_size():
            coordinator.close_all()  # this rank arrives nowhere again
        self.gloo.shutdown()
