"""The merged program of a pipeline training step: where every tensor is
among the per-chip functions' arguments and results (:class:`Layout`), and
the functions themselves, written from the schedule by inlining the stages'
lowered bodies (:func:`chip_module`; :mod:`nova.parallel.pipeline_merge`).

Arguments, the same on every chip (the binary has one I/O table): every
stage's trainable parameters (a weight two stages use once), their
read-only state, the optimizer state slot by slot, the hyperparameters of
every group, the ``m`` input micro-batches, the ``m`` label micro-batches,
the bodies' lifted constants. Results: the ``m`` losses (the last chip's
are real), the parameters and the state, each donated by its argument
(``nova.aliasing_output``): a chip updates its own stage's in place and
returns the others' untouched.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nova.parallel.errors import PipelineError
from nova.parallel.pipeline_merge import ChipFunction, module_text, renamed_globals
from nova.parallel.pipeline_schedule import Schedule

__all__ = ["Layout", "chip_module"]


@dataclass
class Layout:
    """Where everything is in the merged functions' arguments and results."""

    arg_types: list[str]
    result_types: list[str]
    donated: dict[int, int]
    params: list[list[int]]        # [stage][i] -> argument
    constants: list[list[int]]     # [stage][i] -> argument
    slots: list[list[list[int]]]   # [stage][slot][i] -> argument
    hypers: list[int]
    inputs: list[int]              # per micro-batch
    labels: list[int]
    body_constants: dict[tuple[int, str], list[int]]
    constant_values: list[np.ndarray]
    losses: list[int]              # result positions
    param_results: list[list[int]]
    slot_results: list[list[list[int]]]
    #: With clipping: the ``max_grad_norm`` argument, the ``grad_norm`` result,
    #: and per stage the parameters whose gradients its norm part counts (a
    #: shared weight in its first stage only).
    max_norm: int | None = None
    grad_norm: int | None = None
    counted: list[list[int]] | None = None

    @staticmethod
    def build(infos, rule, hypers, m: int, lowered, counted=None) -> "Layout":
        args: list[str] = []

        def take(types: list[str]) -> list[int]:
            start = len(args)
            args.extend(types)
            return list(range(start, start + len(types)))

        n_slots = len(rule.slots)
        params, constants, slots = [], [], []
        # A weight two stages use (tied) is one argument (and result) of both.
        placed: dict[tuple[int, int], int] = {}

        def once(key: tuple[int, int], type_: str) -> int:
            if key not in placed:
                placed[key] = take([type_])[0]
            return placed[key]

        for s, info in enumerate(infos):
            # U's, not F's: F leaves a parameter W casts for it unused (unplaced).
            u_types = lowered[s]["U"][1].arg_types
            params.append([once((id(t), -1), ty) for t, ty in zip(info.params, u_types)])
        for s, info in enumerate(infos):
            f_types = lowered[s]["F"][1].arg_types
            n = len(info.params)
            constants.append(take(f_types[n:n + len(info.constants)]))
        for s, info in enumerate(infos):
            n = len(info.params)
            u_types = lowered[s]["U"][1].arg_types
            slots.append([[once((id(t), k), ty) for t, ty in
                           zip(info.params, u_types[2 * n + k * n:2 * n + (k + 1) * n])]
                          for k in range(n_slots)])
        n_hyper = sum(len(h) for h in hypers)
        u0 = lowered[0]["U"][1]
        n0 = len(infos[0].params)
        hyper_args = take(u0.arg_types[2 * n0 + n_slots * n0:2 * n0 + n_slots * n0 + n_hyper])
        clip = lowered[0].get("C")
        max_norm = take([clip[1].arg_types[len(infos)]])[0] if clip else None
        f0 = lowered[0]["F"][1]
        x_type = f0.arg_types[len(infos[0].params) + len(infos[0].constants)]
        inputs = take([x_type] * m)
        fl = lowered[-1]["F"][1]
        label_type = fl.arg_types[len(infos[-1].params) + len(infos[-1].constants) + 1]
        labels = take([label_type] * m)
        body_constants, values = {}, []
        for s, traced in enumerate(lowered):
            for key, (body, parsed) in traced.items():
                k = len(body.constants)
                body_constants[(s, key)] = take(parsed.arg_types[len(parsed.arg_types) - k:]) if k else []
                values += [c.detach().numpy().copy() for c in body.constants]
        loss_type = fl.result_types[0]
        results = [loss_type] * m
        losses = list(range(m))
        donated, param_results, slot_results = {}, [], []
        for s in range(len(infos)):
            param_results.append([])
            for a in params[s]:
                if a not in donated:
                    donated[a] = len(results)
                    results.append(args[a])
                param_results[s].append(donated[a])
        for s in range(len(infos)):
            slot_results.append([])
            for k in range(n_slots):
                slot_results[s].append([])
                for a in slots[s][k]:
                    if a not in donated:
                        donated[a] = len(results)
                        results.append(args[a])
                    slot_results[s][k].append(donated[a])
        grad_norm = None
        if clip:
            grad_norm = len(results)
            results.append(clip[1].result_types[-1])
        return Layout(args, results, donated, params, constants, slots, hyper_args, inputs,
                      labels, body_constants, values, losses, param_results, slot_results,
                      max_norm, grad_norm, counted)


class _ChunkWriter:
    """Writes one model chunk's bodies into its chip's function, keeping the
    chunk's values between them (its activations, saved tensors and
    gradients per micro-batch, its accumulated parameter gradients)."""

    def __init__(self, fn: ChipFunction, layout: Layout, lowered, chunk: int, chunks: int,
                 recompute: bool, microbatches: int = 1) -> None:
        self.fn, self.layout, self.chunk = fn, layout, chunk
        self.bodies = lowered[chunk]
        self.first, self.last = chunk == 0, chunk == chunks - 1
        self.recompute = recompute
        self.params = [fn.arg(a) for a in layout.params[chunk]]
        self.consts = [fn.arg(a) for a in layout.constants[chunk]]
        self.xs: dict[int, str] = {}
        self.ys: dict[int, str] = {}
        self.dys: dict[int, str] = {}
        self.dxs: dict[int, str] = {}
        self.losses: dict[int, str] = {}
        self.saved: dict[int, list[str]] = {}
        self.gacc: list[str] | None = None
        self.part: str | None = None    # its part of the squared gradient norm
        self.new: list[str] | None = None  # P' and the slots' new values
        self.norm: str | None = None
        self.copies: list[str] = []  # W's weight copies, this step's
        self.m = microbatches
        #: With a G body (the weights' gradients once per step): per
        #: micro-batch what G reads of it, kept until G runs.
        self.deferred = "G" in self.bodies
        self.extras: dict[int, list[str]] = {}
        self.kept: dict[int, list[str]] = {}

    def body(self, key: str):
        return self.bodies[key][1]

    def inline(self, key: str, args: list[str]) -> list[str]:
        extra = [self.fn.arg(a) for a in self.layout.body_constants[(self.chunk, key)]]
        return self.fn.inline(self.body(key), f"s{self.chunk}{key}_", args + extra)

    @property
    def n_state(self) -> int:
        return len(self.params) + len(self.consts)

    def x_type(self) -> str:
        return self.body("F").arg_types[self.n_state]

    def dy_type(self) -> str:
        if self.deferred:
            return self.body("Bx").arg_types[len(self.bodies["Bx"][0].saved)]
        B = self.body("B")
        return (B.arg_types[self.n_state + 1] if self.recompute
                else B.arg_types[_saved_count(self.bodies)])

    def cast(self) -> None:
        """W (when the chunk has one): the step's weight copies, before any F."""
        if "W" in self.bodies:
            self.copies = self.inline("W", self.params)

    def grad_type(self, index: int) -> str:
        if self.deferred:
            return self.body("G").result_types[index]
        return _grad_type(self.body("B"), self.first, index)

    def forward(self, i: int) -> None:
        x = self.fn.arg(self.layout.inputs[i]) if self.first else self.xs[i]
        label = [self.fn.arg(self.layout.labels[i])] if self.last else []
        out = self.inline("F", self.params + self.consts + [x] + label + self.copies)
        if self.first:
            self.xs[i] = x
        (self.losses if self.last else self.ys)[i] = out[0]
        self.saved[i] = _saved(self.bodies, out[1:], self.copies)

    def backward(self, i: int) -> None:
        dy = self.fn.arg(self.layout.labels[i]) if self.last else self.dys[i]
        if self.deferred:
            self.kept[i] = self.saved.pop(i)
            reads = [self.kept[i][j] for j in self.bodies["Bx"][0].saved]
            out = self.inline("Bx", reads + ([] if self.last else [dy]))
            if not self.first:
                self.dxs[i], out = out[0], out[1:]
            self.extras[i] = out
            return
        key = "B" if self.gacc is None else "Bacc"
        if self.recompute:
            args = self.params + self.consts + [self.xs[i], dy] + (self.gacc or [])
        else:
            args = self.saved.pop(i) + ([] if self.last else [dy]) + (self.gacc or [])
        out = self.inline(key, args)
        if not self.first:
            self.dxs[i] = out[0]
            out = out[1:]
        self.gacc = out[:len(self.params)]  # the last chunk's B also returns its loss

    def weight_grads(self) -> None:
        """G over every micro-batch's boundary values, each kind of value
        concatenated along its dimension (``G.sources``; micro-batch order), once the last
        micro-batch's Bx has run (and its ``dx`` is sent: the previous stage
        waits for that, not for G)."""
        if not self.deferred or len(self.extras) < self.m:
            return
        G = self.bodies["G"]
        args = []
        for (kind, j, dim), type_ in zip(G[0].sources, G[1].arg_types):
            if kind == "once":
                args.append(self.kept[0][j])
                continue
            values = [self.kept[i][j] if kind == "saved" else
                      self.dys[i] if kind == "dy" else self.extras[i][j]
                      for i in range(self.m)]
            args.append(self.fn.concat(values, type_, dim))
        self.gacc = self.inline("G", args)
        self.kept.clear()
        self.extras.clear()

    def norm_part(self) -> str:
        if self.part is None:
            self.part = self.inline("N", [self.gacc[j] for j in self.layout.counted[self.chunk]])[0]
        return self.part

    def clip(self, parts: list[str]) -> None:
        out = self.inline("C", parts + [self.fn.arg(self.layout.max_norm)] + list(self.gacc))
        self.gacc, self.norm = out[:-1], out[-1]

    def update(self, really: bool) -> None:
        if self.gacc is None:
            raise PipelineError(f"chunk {self.chunk}: the update comes before its gradients")
        slots = [self.fn.arg(a) for slot in self.layout.slots[self.chunk] for a in slot]
        if not really:
            self.new = self.params + slots
            return
        hyp = [self.fn.arg(a) for a in self.layout.hypers]
        self.new = self.inline("U", self.params + list(self.gacc) + slots + hyp)


def chip_module(layout: Layout, lowered, sched: Schedule, comm: bool, update: bool = True,
                shared=(), recompute: bool = False, per_stage: int = 1) -> str:
    """The merged module; ``comm=False`` drops the sends and makes each receive
    a plain buffer (every chip runs its bodies back to back: the work alone);
    ``update=False`` leaves the optimizer step out (the parameters unchanged).
    With ``recompute`` a B body takes ``(P, C, x, dy or labels[, gacc])``;
    without, ``(saved..., [dy][, gacc])``, the saved tensors being its F's
    results after the first, and a chunk's W copies where ``W.saved`` puts
    them (W runs once, before the chip's first action: every F of the step
    takes its copies after its own arguments). ``lowered`` is per model
    chunk (per stage when the schedule is not interleaved); chip ``s``
    (stage ``s``, or chip ``s * per_stage + l`` of a stage mesh) writes the
    bodies of ``sched.chunks_of(s)``."""
    p, m, n = sched.stages, sched.microbatches, sched.chunks
    if len(lowered) != n:
        raise PipelineError(f"the schedule runs {n} chunks, given {len(lowered)}")
    header = lowered[0]["F"][1].header
    globals_ = []
    for c, traced in enumerate(lowered):
        for key, (_, parsed) in traced.items():
            globals_ += renamed_globals(parsed, f"s{c}{key}_")
    functions = []
    for chip in range(p * per_stage):
        s, local = divmod(chip, per_stage)
        fn = ChipFunction(chip, layout.arg_types, layout.result_types, layout.donated)

        def peer(stage: int, local: int = local) -> int:
            return stage * per_stage + local

        chunks = {c: _ChunkWriter(fn, layout, lowered, c, n, recompute, m)
                  for c in sched.chunks_of(s)}
        for w in chunks.values():
            w.cast()
        parts: dict[int, str] = {}   # every chunk's norm part, by chunk
        others: dict[int, str] = {}  # the peer's gradient of shared weight k
        for action in sched.chips[s]:
            i, kind = action.microbatch, action.kind
            w = chunks.get(sched.chunk(action, s))
            if kind == "recv_act":
                t = w.x_type()
                w.xs[i] = fn.recv(t, peer(action.peer), action.channel) if comm else fn.alloc(t)
            elif kind == "F":
                w.forward(i)
                fn.wait_sends(keep=2)
            elif kind == "send_act":
                if comm:
                    fn.send(w.ys[i], w.body("F").result_types[0], peer(action.peer),
                            action.channel)
            elif kind == "recv_grad":
                t = w.dy_type()
                w.dys[i] = fn.recv(t, peer(action.peer), action.channel) if comm else fn.alloc(t)
            elif kind == "B":
                w.backward(i)
                fn.wait_sends(keep=2)
                if w.first:
                    w.weight_grads()
            elif kind == "send_grad":
                if comm:
                    fn.send(w.dxs[i], w.body("Bx" if w.deferred else "B").result_types[0],
                            peer(action.peer), action.channel)
                w.weight_grads()
            elif kind.endswith("_shared"):
                weight = shared[i]
                mine = chunks.get(weight.a) or chunks[weight.b]
                index = weight.index_a if mine.chunk == weight.a else weight.index_b
                t = mine.grad_type(index)
                if kind == "send_shared" and comm:
                    fn.send(mine.gacc[index], t, peer(action.peer), action.channel)
                elif kind == "recv_shared":
                    others[i] = fn.recv(t, peer(action.peer), action.channel) if comm else fn.alloc(t)
                elif kind == "add_shared":
                    # (chunk a's, chunk b's) on both chips: the same sum, bit for bit.
                    pair = [mine.gacc[index], others[i]]
                    if mine.chunk == weight.b:
                        pair.reverse()
                    add = lowered[weight.a][f"A{i}"]
                    mine.gacc = list(mine.gacc)
                    mine.gacc[index] = fn.inline(add[1], f"s{weight.a}A{i}_", pair + [
                        fn.arg(a) for a in layout.body_constants[(weight.a, f"A{i}")]])[0]
            elif kind == "send_norm":
                parts[w.chunk] = w.norm_part()
                if comm:
                    fn.send(parts[w.chunk], w.body("N").result_types[0], peer(action.peer),
                            action.channel)
            elif kind == "recv_norm":
                c = sched.chunk(action, s)
                t = lowered[c]["N"][1].result_types[0]
                parts[c] = fn.recv(t, peer(action.peer), action.channel) if comm else fn.alloc(t)
            elif kind == "clip":
                for c, mine in chunks.items():  # one chip: no send_norm computed them
                    parts.setdefault(c, mine.norm_part())
                w.clip([parts[c] for c in range(n)])
            elif kind == "update":
                w.update(update)
        last = chunks.get(n - 1)
        results = [last.losses[i] if last else fn.alloc(layout.result_types[i])
                   for i in range(m)]
        own = {}
        for c, w in chunks.items():
            flat = layout.param_results[c] + [r for slot in layout.slot_results[c] for r in slot]
            own.update(zip(flat, w.new))
        norm = next((w.norm for w in chunks.values() if w.norm is not None), None)
        inverse = {r: a for a, r in layout.donated.items()}
        for r in range(m, len(layout.result_types)):
            if r == layout.grad_norm:
                results.append(norm)
                continue
            results.append(own.get(r, fn.arg(inverse[r])))
        functions.append(fn.text(results))
    _check_types(layout, lowered, sched, recompute)
    return module_text(header, globals_, functions)


def _saved(bodies, from_f: list, copies: list) -> list:
    """B's saved tensors: F's saved results, with W's copies where ``W.saved``
    puts them (no W: F's alone)."""
    if "W" not in bodies:
        return list(from_f)
    rest = iter(from_f)
    return [next(rest) if j < 0 else copies[j] for j in bodies["W"][0].saved]


def _saved_count(bodies) -> int:
    """How many saved tensors B (or Bx) takes first."""
    if "W" in bodies:
        return len(bodies["W"][0].saved)
    return len(bodies["F"][1].result_types) - 1


def _grad_type(B, first: bool, index: int) -> str:
    """The buffer type of the gradient of parameter ``index`` a B body returns."""
    return B.result_types[(0 if first else 1) + index]


def _check_types(layout: Layout, lowered, sched: Schedule, recompute: bool = True) -> None:
    """Chunk ``s``'s output must be chunk ``s + 1``'s input, buffer type and all;
    without ``recompute``, F's saved tensors B's first arguments."""
    if not recompute:
        for s in range(sched.chunks):
            copies = lowered[s]["W"][1].result_types if "W" in lowered[s] else []
            saved = _saved(lowered[s], lowered[s]["F"][1].result_types[1:], copies)
            if "Bx" in lowered[s]:
                reads = lowered[s]["Bx"][0].saved
                saved = [saved[j] for j in reads]
            for key in ("B", "Bacc", "Bx"):
                if key in lowered[s] and lowered[s][key][1].arg_types[:len(saved)] != saved:
                    raise PipelineError(f"stage {s}: {key} takes its saved tensors as "
                                        f"{lowered[s][key][1].arg_types[:len(saved)]}, F "
                                        f"returns {saved}")
    for s in range(sched.chunks - 1):
        y = lowered[s]["F"][1].result_types[0]
        n_state = len(layout.params[s + 1]) + len(layout.constants[s + 1])
        x = lowered[s + 1]["F"][1].arg_types[n_state]
        if x != y:
            raise PipelineError(f"stage {s + 1} takes {x} but stage {s} returns {y}")
