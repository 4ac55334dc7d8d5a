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
            f_types = lowered[s]["F"][1].arg_types
            params.append([once((id(t), -1), ty) for t, ty in zip(info.params, f_types)])
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


def chip_module(layout: Layout, lowered, sched: Schedule, comm: bool, update: bool = True,
                shared=(), recompute: bool = False, per_stage: int = 1) -> str:
    """The merged module; ``comm=False`` drops the sends and makes each receive
    a plain buffer (every chip runs its bodies back to back: the work alone);
    ``update=False`` leaves the optimizer step out (the parameters unchanged).
    With ``recompute`` a B body takes ``(P, C, x, dy or labels[, gacc])``;
    without, ``(saved..., [dy][, gacc])``, the saved tensors being its F's
    results after the first."""
    p, m = sched.stages, sched.microbatches
    header = lowered[0]["F"][1].header
    globals_ = []
    for s, traced in enumerate(lowered):
        for key, (_, parsed) in traced.items():
            globals_ += renamed_globals(parsed, f"s{s}{key}_")
    functions = []
    for chip in range(p * per_stage):
        s, local = divmod(chip, per_stage)
        fn = ChipFunction(chip, layout.arg_types, layout.result_types, layout.donated)

        def peer(stage: int, local: int = local) -> int:
            return stage * per_stage + local

        F, B = lowered[s]["F"][1], lowered[s]["B"][1]
        Bacc = lowered[s]["Bacc"][1] if "Bacc" in lowered[s] else None
        U = lowered[s]["U"][1]
        params = [fn.arg(a) for a in layout.params[s]]
        consts = [fn.arg(a) for a in layout.constants[s]]
        n_state = len(params) + len(consts)
        last, first = s == p - 1, s == 0
        xs: dict[int, str] = {}
        ys: dict[int, str] = {}
        dys: dict[int, str] = {}
        dxs: dict[int, str] = {}
        losses: dict[int, str] = {}
        saved: dict[int, list[str]] = {}
        part, norm, parts = None, None, {}
        gacc: list[str] | None = None
        x_type = F.arg_types[n_state]
        y_type = F.result_types[0]

        def extra(key):
            return [fn.arg(a) for a in layout.body_constants[(s, key)]]

        for action in sched.chips[s]:
            i = action.microbatch
            if action.kind == "recv_act":
                xs[i] = (fn.recv(x_type, peer(action.peer), action.channel) if comm
                         else fn.alloc(x_type))
            elif action.kind == "F":
                x = fn.arg(layout.inputs[i]) if first else xs[i]
                args = params + consts + [x] + ([fn.arg(layout.labels[i])] if last else [])
                out = fn.inline(F, f"s{s}F_", args + extra("F"))
                if first:
                    xs[i] = x
                (losses if last else ys)[i] = out[0]
                saved[i] = out[1:]
                fn.wait_sends(keep=2)
            elif action.kind == "send_act":
                if comm:
                    fn.send(ys[i], y_type, peer(action.peer), action.channel)
            elif action.kind == "recv_grad":
                dy_type = (B.arg_types[n_state + 1] if recompute
                           else B.arg_types[len(F.result_types) - 1])
                dys[i] = (fn.recv(dy_type, peer(action.peer), action.channel) if comm
                          else fn.alloc(dy_type))
            elif action.kind == "B":
                dy = fn.arg(layout.labels[i]) if last else dys[i]
                body, key = (B, "B") if gacc is None else (Bacc, "Bacc")
                if recompute:
                    args = params + consts + [xs[i], dy] + (gacc or [])
                else:
                    args = saved.pop(i) + ([] if last else [dy]) + (gacc or [])
                out = fn.inline(body, f"s{s}{key}_", args + extra(key))
                if not first:
                    dxs[i] = out[0]
                    out = out[1:]
                gacc = out[:len(params)]  # the last stage's B also returns its loss
                fn.wait_sends(keep=2)
            elif action.kind == "send_grad":
                if comm:
                    dx_type = B.result_types[0]
                    fn.send(dxs[i], dx_type, peer(action.peer), action.channel)
            elif action.kind == "send_shared":
                w = shared[i]
                mine = w.index_a if s == w.a else w.index_b
                if comm:
                    fn.send(gacc[mine], _grad_type(B, first, mine), peer(action.peer), action.channel)
            elif action.kind == "recv_shared":
                w = shared[i]
                mine = w.index_a if s == w.a else w.index_b
                t = _grad_type(B, first, mine)
                other = fn.recv(t, peer(action.peer), action.channel) if comm else fn.alloc(t)
            elif action.kind == "add_shared":
                # (stage a's, stage b's) on both chips: the same sum, bit for bit.
                w = shared[i]
                mine = w.index_a if s == w.a else w.index_b
                pair = [gacc[mine], other] if s == w.a else [other, gacc[mine]]
                gacc = list(gacc)
                add = lowered[w.a][f"A{i}"][1]
                gacc[mine] = fn.inline(add, f"s{w.a}A{i}_", pair + [
                    fn.arg(a) for a in layout.body_constants[(w.a, f"A{i}")]])[0]
            elif action.kind == "send_norm":
                if part is None:
                    part = fn.inline(lowered[s]["N"][1], f"s{s}N_",
                                     [gacc[j] for j in layout.counted[s]] + extra("N"))[0]
                if comm:
                    fn.send(part, lowered[s]["N"][1].result_types[0], peer(action.peer),
                            action.channel)
            elif action.kind == "recv_norm":
                t = lowered[s]["N"][1].result_types[0]
                parts[action.peer] = (fn.recv(t, peer(action.peer), action.channel) if comm
                                      else fn.alloc(t))
            elif action.kind == "clip":
                if part is None:  # one stage (no send_norm): its part is the whole
                    part = fn.inline(lowered[s]["N"][1], f"s{s}N_",
                                     [gacc[j] for j in layout.counted[s]] + extra("N"))[0]
                parts[s] = part
                out = fn.inline(lowered[s]["C"][1], f"s{s}C_",
                                [parts[c] for c in range(p)] + [fn.arg(layout.max_norm)]
                                + list(gacc) + extra("C"))
                gacc, norm = out[:-1], out[-1]
            elif action.kind == "update" and not update:
                new = [fn.arg(a) for a in layout.params[s]]
                new += [fn.arg(a) for slot in layout.slots[s] for a in slot]
            elif action.kind == "update":
                slots = [fn.arg(a) for slot in layout.slots[s] for a in slot]
                hyp = [fn.arg(a) for a in layout.hypers]
                new = fn.inline(U, f"s{s}U_", params + list(gacc) + slots + hyp + extra("U"))
        results = []
        for i in range(m):
            results.append(losses[i] if last else fn.alloc(layout.result_types[i]))
        own = {}
        n = len(layout.params[s])
        for j, r in enumerate(layout.param_results[s]):
            own[r] = new[j]
        flat_slot_results = [r for slot in layout.slot_results[s] for r in slot]
        for j, r in enumerate(flat_slot_results):
            own[r] = new[n + j]
        inverse = {r: a for a, r in layout.donated.items()}
        for r in range(m, len(layout.result_types)):
            if r == layout.grad_norm:
                results.append(norm)
                continue
            results.append(own.get(r, fn.arg(inverse[r])))
        functions.append(fn.text(results))
    _check_types(layout, lowered, sched)
    return module_text(header, globals_, functions)


def _grad_type(B, first: bool, index: int) -> str:
    """The buffer type of the gradient of parameter ``index`` a B body returns."""
    return B.result_types[(0 if first else 1) + index]


def _check_types(layout: Layout, lowered, sched: Schedule) -> None:
    """Stage ``s``'s output must be stage ``s + 1``'s input, buffer type and all."""
    for s in range(sched.stages - 1):
        y = lowered[s]["F"][1].result_types[0]
        n_state = len(layout.params[s + 1]) + len(layout.constants[s + 1])
        x = lowered[s + 1]["F"][1].arg_types[n_state]
        if x != y:
            raise PipelineError(f"stage {s + 1} takes {x} but stage {s} returns {y}")
