"""Pipeline training schedules as data: per chip, the ordered list of what it
does per micro-batch.

``Schedule.build("1f1b", stages=p, microbatches=m)`` (the default; PipeDream
flush / Megatron's non-interleaved 1F1B) or ``"gpipe"`` (all forwards, then
all backwards). Chip ``s`` runs stage ``s``. Actions:

* ``recv_act i`` / ``F i`` / ``send_act i``: micro-batch ``i``'s activation
  comes from chip ``s - 1`` on channel ``i``, the stage's forward runs, its
  output goes to chip ``s + 1`` on channel ``i``;
* ``recv_grad i`` / ``B i`` / ``send_grad i``: the gradient of the stage's
  output comes back from chip ``s + 1`` on channel ``m + i``, the backward
  runs (accumulating the parameters' gradients), the gradient of the stage's
  input goes to chip ``s - 1`` on channel ``m + i``;
* ``send_shared k`` / ``recv_shared k`` / ``add_shared k``: a weight used by
  two stages (a tied LM head and token embedding): after the backwards, the
  two chips swap their gradients of it (channel ``2 m + k``) and each adds
  the other's, so both apply the same update to their copy;
* with clipping, ``send_norm`` / ``recv_norm`` to and from every other chip
  (channel ``2 m + len(shared) + sender``): each chip's part of the squared
  gradient norm, then ``clip`` (every chip sums the parts in stage order,
  the same global norm everywhere, and scales its gradients);
* ``update``: the optimizer step on the stage's own parameters.

1F1B: stage ``s`` runs ``min(p - 1 - s, m)`` warm-up forwards, then
alternates one forward and one backward, then drains the backwards; at most
``p - s`` micro-batches are in flight on stage ``s`` (GPipe: ``m``). Both
have the bubble fraction ``(p - 1) / (m + p - 1)`` for balanced stages.
"""

from __future__ import annotations

from dataclasses import dataclass

from nova.parallel.errors import PipelineError

SCHEDULES = ("1f1b", "gpipe")


@dataclass(frozen=True)
class Action:
    kind: str          # "F", "B", "send_act", "recv_act", "send_grad", "recv_grad", "update"
    microbatch: int | None = None
    peer: int | None = None
    channel: int | None = None

    def __str__(self) -> str:
        if self.kind in ("update", "clip"):
            return self.kind
        if self.kind.endswith("_norm"):
            return f"{self.kind} {'to' if self.kind.startswith('send') else 'from'} chip {self.peer}"
        text = f"{self.kind} {self.microbatch}"
        if self.peer is not None and self.kind.endswith("shared"):
            text = f"{self.kind} weight {self.microbatch}"
        if self.peer is not None:
            text += f" {'to' if self.kind.startswith('send') else 'from'} chip {self.peer}"
        return text


@dataclass(frozen=True)
class Schedule:
    kind: str
    stages: int
    microbatches: int
    chips: tuple[tuple[Action, ...], ...]

    @staticmethod
    def build(kind: str, stages: int, microbatches: int,
              shared: tuple[tuple[int, int], ...] = (), clip: bool = False) -> "Schedule":
        """``shared[k] = (a, b)``: weight ``k`` is used by stages ``a`` and ``b``;
        ``clip``: the gradients are clipped by their global norm."""
        if kind not in SCHEDULES:
            raise PipelineError(f"schedule must be one of {SCHEDULES}, got {kind!r}")
        if stages < 2:
            raise PipelineError(f"a pipeline needs at least 2 stages, got {stages}")
        if isinstance(microbatches, bool) or not isinstance(microbatches, int) or microbatches < 1:
            raise PipelineError(f"microbatches must be a positive integer, got {microbatches!r}")
        p, m = stages, microbatches
        chips = []
        for s in range(p):
            order = []  # ("F"|"B", i)
            if kind == "gpipe":
                order = [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
            else:
                warmup = min(p - 1 - s, m)
                order = [("F", i) for i in range(warmup)]
                f, b = warmup, 0
                while b < m:
                    if f < m:
                        order.append(("F", f))
                        f += 1
                    order.append(("B", b))
                    b += 1
            actions = []
            for what, i in order:
                if what == "F":
                    if s > 0:
                        actions.append(Action("recv_act", i, s - 1, i))
                    actions.append(Action("F", i))
                    if s < p - 1:
                        actions.append(Action("send_act", i, s + 1, i))
                else:
                    if s < p - 1:
                        actions.append(Action("recv_grad", i, s + 1, m + i))
                    actions.append(Action("B", i))
                    if s > 0:
                        actions.append(Action("send_grad", i, s - 1, m + i))
            for k, pair in enumerate(shared):
                if s in pair:
                    peer = pair[1] if s == pair[0] else pair[0]
                    actions += [Action("send_shared", k, peer, 2 * m + k),
                                Action("recv_shared", k, peer, 2 * m + k),
                                Action("add_shared", k)]
            if clip:
                channel = 2 * m + len(shared)
                actions += [Action("send_norm", None, c, channel + s) for c in range(p) if c != s]
                actions += [Action("recv_norm", None, c, channel + c) for c in range(p) if c != s]
                actions.append(Action("clip"))
            actions.append(Action("update"))
            chips.append(tuple(actions))
        return Schedule(kind, p, m, tuple(chips))

    @property
    def ideal_bubble(self) -> float:
        """``(p - 1) / (m + p - 1)``: the idle fraction of balanced stages."""
        return (self.stages - 1) / (self.microbatches + self.stages - 1)

    def compute_order(self, chip: int) -> list[str]:
        """Chip ``chip``'s forwards and backwards in order: ``["F0", "F1", "B0", ...]``."""
        return [f"{a.kind}{a.microbatch}" for a in self.chips[chip] if a.kind in ("F", "B")]

    def __str__(self) -> str:
        lines = [f"{self.kind} schedule, {self.stages} stages x {self.microbatches} micro-batches "
                 f"(ideal bubble {self.ideal_bubble:.1%})"]
        for chip, actions in enumerate(self.chips):
            lines.append(f"chip {chip}: " + " ".join(self.compute_order(chip)) + " update")
            lines.append("  " + "; ".join(str(a) for a in actions))
        return "\n".join(lines)
