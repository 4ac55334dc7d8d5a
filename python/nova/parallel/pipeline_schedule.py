"""Pipeline training schedules as data: per chip, the ordered list of what it
does per micro-batch.

``Schedule.build("1f1b", stages=p, microbatches=m)`` (the default; PipeDream
flush / Megatron's non-interleaved 1F1B) or ``"gpipe"`` (all forwards, then
all backwards). Chip ``s`` runs stage ``s``. With ``virtual=v > 1``
(Megatron's ``virtual_pipeline_model_parallel_size``) ``"1f1b"`` is
Megatron's interleaved 1F1B: the model is cut into ``p * v`` chunks and chip
``s`` runs chunks ``s, s + p, s + 2p, ...`` (:func:`interleaved_order`).
Actions (``chunk``: the model chunk an action belongs to, set only when
``v > 1``; with ``v = 1`` chip ``s``'s chunk is stage ``s``):

* ``recv_act i`` / ``F i`` / ``send_act i``: micro-batch ``i``'s activation
  comes from the chip of the previous chunk, the chunk's forward runs, its
  output goes to the chip of the next chunk;
* ``recv_grad i`` / ``B i`` / ``send_grad i``: the gradient of the chunk's
  output comes back from the chip of the next chunk, the backward runs
  (accumulating the parameters' gradients), the gradient of the chunk's
  input goes to the chip of the previous chunk;
* ``send_shared k`` / ``recv_shared k`` / ``add_shared k``: a weight used by
  two chunks on two chips (a tied LM head and token embedding): after the
  backwards, the two chips swap their gradients of it and each adds the
  other's, so both apply the same update to their copy;
* with clipping, ``send_norm`` / ``recv_norm`` to and from every other chip:
  each chunk's part of the squared gradient norm, then ``clip`` (every chip
  sums the parts in chunk order, the same global norm everywhere, and
  scales its gradients);
* ``update``: the optimizer step on a chunk's own parameters.

Channels (a message is keyed by sender, receiver and channel): the
activation crossing chunk boundary ``c`` (chunk ``c`` to ``c + 1``) for
micro-batch ``i`` on ``(c // p) m + i``, its gradient on ``v m + (c // p) m
+ i``; shared weight ``k`` on ``2 v m + k``; chunk ``c``'s norm part on
``2 v m + len(shared) + c`` (with ``v = 1``: ``i``, ``m + i``, ``2 m + k``).

1F1B: stage ``s`` runs ``min(p - 1 - s, m)`` warm-up forwards, then
alternates one forward and one backward, then drains the backwards; at most
``p - s`` micro-batches are in flight on stage ``s`` (GPipe: ``m``). Both
have the bubble fraction ``(p - 1) / (m + p - 1)`` for balanced stages;
interleaved 1F1B ``(p - 1) / (v m + p - 1)`` for balanced chunks.

:meth:`Schedule.build` runs the schedule abstractly (sends buffered, a
receive waiting for its send) and raises a :class:`PipelineError` if a chip
would wait forever or a message is never received, so a schedule that
compiles cannot hang the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass

from nova.parallel.errors import PipelineError

SCHEDULES = ("1f1b", "gpipe")


@dataclass(frozen=True)
class Action:
    kind: str          # "F", "B", "send_act", "recv_act", "send_grad", "recv_grad", "update", ...
    microbatch: int | None = None
    peer: int | None = None
    channel: int | None = None
    #: The model chunk (interleaved schedules only; None: the chip's own stage).
    chunk: int | None = None

    def __str__(self) -> str:
        of = "" if self.chunk is None else f" chunk {self.chunk}"
        if self.kind in ("update", "clip"):
            return self.kind + of
        direction = "to" if self.kind.startswith("send") else "from"
        if self.kind.endswith("_norm"):
            return f"{self.kind}{of} {direction} chip {self.peer}"
        text = f"{self.kind} {self.microbatch}{of}"
        if self.peer is not None and self.kind.endswith("shared"):
            text = f"{self.kind} weight {self.microbatch}"
        if self.peer is not None:
            text += f" {direction} chip {self.peer}"
        return text


def interleaved_order(stages: int, virtual: int, microbatches: int,
                      chip: int) -> tuple[int, list[tuple[str, int, int]]]:
    """Megatron's interleaved 1F1B on ``chip``
    (``forward_backward_pipelining_with_interleaving``): its warm-up count
    and its ``("F" | "B", chunk, micro-batch)`` in order.

    The chip's ``v m`` forwards go through the micro-batches in groups of
    ``p``: micro-batches ``0 .. p-1`` on its first chunk, the same on its
    second, ..., then the next ``p`` micro-batches; the backwards in the same
    order with the chunks reversed. Warm-up: ``2 (p - 1 - s) + (v - 1) p``
    forwards (all of them when ``m == p``), then one forward and one
    backward in turn, then the remaining backwards."""
    p, v, m, s = stages, virtual, microbatches, chip
    total = m * v
    warmup = total if m == p else min(2 * (p - 1 - s) + (v - 1) * p, total)

    def at(k: int, forward: bool) -> tuple[int, int]:
        group = k % (p * v) // p
        chunk = (group if forward else v - 1 - group) * p + s
        return chunk, k // (p * v) * p + k % p

    order = [("F", *at(k, True)) for k in range(warmup)]
    for k in range(total - warmup):
        order += [("F", *at(k + warmup, True)), ("B", *at(k, False))]
    order += [("B", *at(k, False)) for k in range(total - warmup, total)]
    return warmup, order


def _plain_order(kind: str, p: int, m: int, s: int) -> tuple[int, list[tuple[str, int, int]]]:
    """GPipe or non-interleaved 1F1B on stage ``s``: warm-up count, order."""
    if kind == "gpipe":
        return m, [("F", s, i) for i in range(m)] + [("B", s, i) for i in range(m)]
    warmup = min(p - 1 - s, m)
    order = [("F", s, i) for i in range(warmup)]
    f, b = warmup, 0
    while b < m:
        if f < m:
            order.append(("F", s, f))
            f += 1
        order.append(("B", s, b))
        b += 1
    return warmup, order


@dataclass(frozen=True)
class Schedule:
    kind: str
    stages: int          # chips (Megatron's pipeline_model_parallel_size)
    microbatches: int
    chips: tuple[tuple[Action, ...], ...]
    #: Model chunks per chip (Megatron's virtual_pipeline_model_parallel_size).
    virtual: int = 1
    #: Per chip: forwards before its first backward's turn (the warm-up).
    warmups: tuple[int, ...] = ()

    @staticmethod
    def build(kind: str, stages: int, microbatches: int,
              shared: tuple[tuple[int, int], ...] = (), clip: bool = False,
              virtual: int = 1) -> "Schedule":
        """``shared[k] = (a, b)``: weight ``k`` is used by chunks ``a`` and ``b``
        (stages when ``virtual == 1``); ``clip``: the gradients are clipped by
        their global norm; ``virtual``: model chunks per chip (interleaved)."""
        if kind not in SCHEDULES:
            hint = (" (interleaved 1F1B is schedule='1f1b' with virtual_stages=v, Megatron's "
                    "virtual_pipeline_model_parallel_size)" if "inter" in str(kind) else "")
            raise PipelineError(f"schedule must be one of {SCHEDULES}, got {kind!r}{hint}")
        if stages < 2:
            raise PipelineError(f"a pipeline needs at least 2 stages, got {stages}")
        if isinstance(microbatches, bool) or not isinstance(microbatches, int) or microbatches < 1:
            raise PipelineError(f"microbatches must be a positive integer, got {microbatches!r}")
        check_virtual(virtual)
        p, m, v = stages, microbatches, virtual
        if v > 1 and kind != "1f1b":
            raise PipelineError(f"virtual_stages={v} interleaves the 1f1b schedule; "
                                f"schedule {kind!r} takes virtual_stages=1")
        if v > 1 and m % p:
            raise PipelineError(f"interleaved 1F1B needs the micro-batches to be a multiple of "
                                f"the stages (Megatron's rule): {m} micro-batches, {p} stages")
        n = p * v  # chunks
        for a, b in shared:
            if a % p == b % p:
                raise PipelineError(f"chunks {a} and {b} share a weight but run on the same "
                                    f"chip {a % p}; interleave with other virtual_stages")
        tag = (lambda c: c) if v > 1 else (lambda c: None)
        act, grad = (lambda c, i: c // p * m + i), (lambda c, i: v * m + c // p * m + i)
        chips, warmups = [], []
        for s in range(p):
            warmup, order = (interleaved_order(p, v, m, s) if v > 1
                             else _plain_order(kind, p, m, s))
            warmups.append(warmup)
            actions = []
            for what, c, i in order:
                if what == "F":
                    if c > 0:
                        actions.append(Action("recv_act", i, (c - 1) % p, act(c - 1, i), tag(c)))
                    actions.append(Action("F", i, chunk=tag(c)))
                    if c < n - 1:
                        actions.append(Action("send_act", i, (c + 1) % p, act(c, i), tag(c)))
                else:
                    if c < n - 1:
                        actions.append(Action("recv_grad", i, (c + 1) % p, grad(c, i), tag(c)))
                    actions.append(Action("B", i, chunk=tag(c)))
                    if c > 0:
                        actions.append(Action("send_grad", i, (c - 1) % p, grad(c - 1, i),
                                              tag(c)))
            for k, (a, b) in enumerate(shared):
                if s in (a % p, b % p):
                    peer = (b if s == a % p else a) % p
                    actions += [Action("send_shared", k, peer, 2 * v * m + k),
                                Action("recv_shared", k, peer, 2 * v * m + k),
                                Action("add_shared", k)]
            mine = range(s, n, p)
            if clip:
                channel = 2 * v * m + len(shared)
                actions += [Action("send_norm", None, t, channel + c, tag(c))
                            for c in mine for t in range(p) if t != s]
                actions += [Action("recv_norm", None, c % p, channel + c, tag(c))
                            for c in range(n) if c % p != s]
                actions += [Action("clip", chunk=tag(c)) for c in mine]
            actions += [Action("update", chunk=tag(c)) for c in mine]
            chips.append(tuple(actions))
        schedule = Schedule(kind, p, m, tuple(chips), v, tuple(warmups))
        schedule.check_runs()
        return schedule

    @property
    def chunks(self) -> int:
        """Model chunks: ``stages * virtual``."""
        return self.stages * self.virtual

    def chip_of(self, chunk: int) -> int:
        return chunk % self.stages

    def chunks_of(self, chip: int) -> list[int]:
        return list(range(chip, self.chunks, self.stages))

    def chunk(self, action: Action, chip: int) -> int:
        """The chunk ``action`` on ``chip`` belongs to (a ``recv_norm``: the
        sender's; with ``virtual == 1`` the chunk is the stage)."""
        if action.chunk is not None:
            return action.chunk
        return action.peer if action.kind == "recv_norm" else chip

    @property
    def ideal_bubble(self) -> float:
        """``(p - 1) / (v m + p - 1)``: the idle fraction of balanced chunks
        (``v = 1``: ``(p - 1) / (m + p - 1)``)."""
        return (self.stages - 1) / (self.virtual * self.microbatches + self.stages - 1)

    def compute_order(self, chip: int) -> list[str]:
        """Chip ``chip``'s forwards and backwards in order: ``["F0", "F1", "B0",
        ...]``; interleaved, chunk first as torch.distributed.pipelining
        prints its actions: ``["0F0", "0F1", "2F0", ...]``."""
        return [f"{'' if a.chunk is None else a.chunk}{a.kind}{a.microbatch}"
                for a in self.chips[chip] if a.kind in ("F", "B")]

    def check_runs(self) -> None:
        """Runs the schedule abstractly, each chip's actions in order, a send
        buffered, a receive waiting for its send: a chip that would wait
        forever or a message never received is a PipelineError."""
        sent: dict[tuple[int, int, int], int] = {}
        at = [0] * len(self.chips)
        moved = True
        while moved:
            moved = False
            for chip, actions in enumerate(self.chips):
                while at[chip] < len(actions):
                    a = actions[at[chip]]
                    if a.kind.startswith("send"):
                        key = (chip, a.peer, a.channel)
                        sent[key] = sent.get(key, 0) + 1
                    elif a.kind.startswith("recv"):
                        key = (a.peer, chip, a.channel)
                        if not sent.get(key):
                            break
                        sent[key] -= 1
                    at[chip] += 1
                    moved = True
        stuck = [f"chip {c} at '{actions[at[c]]}'" for c, actions in enumerate(self.chips)
                 if at[c] < len(actions)]
        if stuck:
            raise PipelineError("the schedule deadlocks: " + ", ".join(stuck))
        left = [key for key, n in sent.items() if n]
        if left:
            src, dst, channel = left[0]
            raise PipelineError(f"the schedule sends from chip {src} to chip {dst} on channel "
                                f"{channel} but never receives it")

    def __str__(self) -> str:
        p, m, v = self.stages, self.microbatches, self.virtual
        what = (f"{self.kind} schedule, {p} stages x {m} micro-batches" if v == 1 else
                f"interleaved {self.kind} schedule, {p} stages x {v} virtual stages "
                f"({self.chunks} chunks) x {m} micro-batches")
        lines = [f"{what} (ideal bubble {self.ideal_bubble:.1%})"]
        for chip, actions in enumerate(self.chips):
            head = f"chip {chip}"
            if v > 1:
                head += (f" (chunks {', '.join(map(str, self.chunks_of(chip)))}; "
                         f"{self.warmups[chip]} warm-up forwards)")
            lines.append(f"{head}: " + " ".join(self.compute_order(chip)) + " update")
            lines.append("  " + "; ".join(str(a) for a in actions))
        return "\n".join(lines)


def check_virtual(virtual: object) -> None:
    if isinstance(virtual, bool) or not isinstance(virtual, int) or virtual < 1:
        raise PipelineError(f"virtual_stages must be a positive integer, got {virtual!r}")
