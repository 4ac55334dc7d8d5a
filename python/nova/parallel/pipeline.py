"""Pipeline parallelism (GPipe forward) of a module stack over 2+ chips.

    from nova.parallel.pipeline import compile_pipeline, split_gpt
    program = compile_pipeline(split_gpt(gpt, k=1), x, microbatches=4,
                               target="nova-t1")
    y = program(x)                      # == gpt(x); program.report.time_s

Design (the simplest thing that is real; no C++ change):

1. The model is cut at module boundaries into stages, each its own
   ``nn.Module`` (:func:`split_gpt`: ``blocks[:k]`` | ``blocks[k:] + ln_f``).
2. Each stage is exported at the *microbatch* shape and lowered with the
   existing single-chip pipeline up to the ``nova`` (tiles) level
   (``nova-lower-to-tiles`` for the target at ``chips = stages``), printed in
   MLIR's generic form so that the upstream MLIR 22 Python bindings
   (``import mlir``) parse it with ``allow_unregistered_dialects``.
3. :func:`merge_stages` (bindings only, no text surgery) builds one module
   holding one ``func.func`` per stage with ``nova.chips = array<i64: s>``.
   Every function declares the same arguments: all stages' parameters, then
   the ``M`` microbatch inputs; and returns the same ``M`` outputs.
   Stage ``s`` runs its body ``M`` times (the stage function is cloned and its
   ops moved in, block arguments replaced). Microbatch ``i``'s activation
   crosses from stage ``s`` to ``s + 1`` as ``nova.send ... to s+1 channel i``
   / ``nova.recv ... from s channel i`` of an HBM buffer (+ ``nova.wait``):
   a stage sends microbatch ``i`` and goes on with ``i + 1`` while the next
   stage computes ``i`` (the simulator's send is buffered), i.e. the GPipe
   forward schedule. The sends are waited at the end of the stage. Stages
   that do not produce the final outputs return uninitialised buffers.
   ``memref.global`` constants of the stages are merged (same name and value:
   kept once; otherwise renamed).
4. The merged module goes through the existing ``nova-tiles-to-isa`` (which
   plans memory per function and lowers send/recv/wait to ISA with
   semaphores) and ``nova-translate --nova-to-binary`` (one program per chip
   set, docs/binary-format.md).

Inputs are written to every chip (the binary has one I/O table); the outputs
are read from the last stage's chip and concatenated along the batch.

Simulated (benchmarks/pipeline_parallel.py, GPT d_model 64, 4 layers, seq 16,
batch 4, k = 2): 1 chip 125.06 us; PP=2 x M=4 92.01 us on nova-t1 (switch),
92.52 us on nova-t1-ring8 (2 chips), 1.36x, max |err| 8e-7 vs torch. The
ideal GPipe bound is (M + 1) / (2 M) of the time at the same per-microbatch
efficiency; a microbatch of 1 uses the matrix unit less well than batch 4.
Not done: the backward pass / 1F1B, more than one microbatch in flight per
buffer (each microbatch has its own activation buffers), weights are written
to every chip (the I/O table is shared by all programs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from nova.compiler import pipeline as flags
from nova.compiler.driver import run_opt, run_translate
from nova.compiler.options import TargetOptions
from nova.frontend import import_model


class Stage(nn.Module):
    """A run of modules applied in order (a pipeline stage)."""

    def __init__(self, modules: Sequence[nn.Module]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(modules)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def split_gpt(model: nn.Module, k: int | None = None) -> list[Stage]:
    """Two stages of a ``nova.models.gpt.GPT``: ``blocks[:k]`` and
    ``blocks[k:] + ln_f`` (``k`` defaults to half the blocks)."""
    blocks = list(model.blocks)
    k = len(blocks) // 2 if k is None else k
    if not 0 < k < len(blocks):
        raise ValueError(f"split point {k} must leave blocks on both stages "
                         f"({len(blocks)} blocks)")
    return [Stage(blocks[:k]), Stage(blocks[k:] + [model.ln_f])]


def _generic_tiles(stage: nn.Module, example: torch.Tensor, target: TargetOptions):
    imported = import_model(stage, example)
    text = run_opt(imported.mlir, flags.lower_to_tiles(target) + ["--mlir-print-op-generic"])
    state = {**dict(stage.named_parameters()), **dict(stage.named_buffers())}
    params = [t.detach().cpu().numpy() for t in state.values()]
    return text, params


def merge_stages(stage_texts: Sequence[str], microbatches: int) -> str:
    """One module, one function per stage (``nova.chips = [s]``), from the
    generic ``nova``-level text of every stage; see the module docstring."""
    from mlir import ir

    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    with ctx, ir.Location.unknown():
        mods = [ir.Module.parse(_spaces_to_strings(t)) for t in stage_texts]
        funcs, globs = [], []
        for m in mods:
            fs = [op for op in m.body.operations if op.operation.name == "func.func"]
            if len(fs) != 1:
                raise ValueError(f"a stage must hold one function, got {len(fs)}")
            funcs.append(fs[0].operation)
            globs.append([op.operation for op in m.body.operations
                          if op.operation.name == "memref.global"])
        ftypes = [ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
                  for f in funcs]
        for s, ft in enumerate(ftypes):
            if len(ft.results) != 1 or len(ft.inputs) < 1:
                raise ValueError(f"stage {s}: expected (params..., x) -> y, got {ft}")
        for s in range(len(funcs) - 1):
            if str(ftypes[s].results[0]) != str(ftypes[s + 1].inputs[-1]):
                raise ValueError(f"stage {s} produces {ftypes[s].results[0]} but stage "
                                 f"{s + 1} takes {ftypes[s + 1].inputs[-1]}")
        param_types = [list(ft.inputs[:-1]) for ft in ftypes]
        x_type, y_type = ftypes[0].inputs[-1], ftypes[-1].results[0]
        offsets, n = [], 0
        for pts in param_types:
            offsets.append(n)
            n += len(pts)
        arg_types = [t for pts in param_types for t in pts] + [x_type] * microbatches
        res_types = [y_type] * microbatches
        merged_type = ir.FunctionType.get(arg_types, res_types)

        out = ir.Module.create()
        for name in ("nova.target",):
            if name in mods[0].operation.attributes:
                out.operation.attributes[name] = mods[0].operation.attributes[name]
        # Globals: keep one of each (name, value); rename clashes.
        seen: dict[str, str] = {}
        for s, gs in enumerate(globs):
            renames = {}
            for g in gs:
                name = ir.StringAttr(g.attributes["sym_name"]).value
                text = str(g.attributes["initial_value"]) + str(g.attributes["type"])
                if name in seen and seen[name] == text:
                    continue
                if name in seen:
                    new = f"{name}_stage{s}"
                    renames[name] = new
                    g.attributes["sym_name"] = ir.StringAttr.get(new)
                    name = new
                seen[name] = text
                _append(out.body, g)
            if renames:
                def fix(op, renames=renames):
                    if op.name == "memref.get_global":
                        old = ir.FlatSymbolRefAttr(op.attributes["name"]).value
                        if old in renames:
                            op.attributes["name"] = ir.FlatSymbolRefAttr.get(renames[old])
                    return ir.WalkResult.ADVANCE
                funcs[s].walk(fix)

        token = ir.Type.parse("!nova.token")
        i64 = ir.IntegerType.get_signless(64)
        stages = len(funcs)
        for s, f in enumerate(funcs):
            func = ir.Operation.create(
                "func.func", regions=1,
                attributes={"sym_name": ir.StringAttr.get(f"stage{s}"),
                            "function_type": ir.TypeAttr.get(merged_type),
                            "nova.chips": ir.DenseI64ArrayAttr.get([s])})
            _append(out.body, func)
            block = func.regions[0].blocks.append(*arg_types)
            ret = ir.Operation.create("func.return", operands=[])
            _append(block, ret)
            ip = ir.InsertionPoint(ret)
            params = list(block.arguments)[offsets[s]:offsets[s] + len(param_types[s])]
            results, send_tokens = [], []
            for i in range(microbatches):
                if s == 0:
                    x = block.arguments[len(arg_types) - microbatches + i]
                else:
                    x = _alloc(ip, ftypes[s].inputs[-1])
                    t = ir.Operation.create(
                        "nova.recv", results=[token], operands=[x],
                        attributes={"peer": ir.IntegerAttr.get(i64, s - 1),
                                    "channel": ir.IntegerAttr.get(i64, i)}, ip=ip)
                    ir.Operation.create("nova.wait", operands=[t.result], ip=ip)
                y = _inline(f, params + [x], ret)
                if s + 1 < stages:
                    t = ir.Operation.create(
                        "nova.send", results=[token], operands=[y],
                        attributes={"peer": ir.IntegerAttr.get(i64, s + 1),
                                    "channel": ir.IntegerAttr.get(i64, i)}, ip=ip)
                    send_tokens.append(t.result)
                else:
                    results.append(y)
            if send_tokens:
                ir.Operation.create("nova.wait", operands=send_tokens, ip=ip)
            if not results:
                results = [_alloc(ip, y_type) for _ in range(microbatches)]
            ir.Operation.create("func.return", operands=results, ip=ip)
            ret.erase()
        out.operation.verify()
        return _strings_to_spaces(out.operation.get_asm(print_generic_op_form=True))


# Upstream MemRefType accepts a memory space from an unregistered dialect only
# as a builtin Integer/String/Dictionary attribute (an OpaqueAttr, which is what
# `#nova.memory_space<hbm>` parses to without the nova dialect, is rejected:
# "unsupported memory space Attribute"). The three spellings are swapped for
# string attributes around the bindings and back; nothing else is rewritten.
_SPACES = ("hbm", "sram", "acc")


def _spaces_to_strings(text: str) -> str:
    for space in _SPACES:
        text = text.replace(f"#nova.memory_space<{space}>", f'"nova.memory_space.{space}"')
    return text


def _strings_to_spaces(text: str) -> str:
    for space in _SPACES:
        text = text.replace(f'"nova.memory_space.{space}"', f"#nova.memory_space<{space}>")
    return text


def _append(block, op) -> None:
    """Moves ``op`` (attached anywhere or detached) to the end of ``block``."""
    from mlir import ir
    if op.attached:
        op.detach_from_parent()
    ir.InsertionPoint(block).insert(op)


def _alloc(ip, memref_type):
    from mlir import ir
    op = ir.Operation.create(
        "memref.alloc", results=[memref_type], operands=[],
        attributes={"alignment": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 64),
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])}, ip=ip)
    return op.result


def _inline(func, args, before):
    """Clones ``func``'s body in front of ``before`` with its arguments
    replaced by ``args``; returns the value it returned."""
    clone = func.clone()
    body = clone.regions[0].blocks[0]
    for old, new in zip(body.arguments, args):
        old.replace_all_uses_with(new)
    ops = list(body.operations)
    value = ops[-1].operands[0]
    for op in ops[:-1]:
        op.move_before(before)
    clone.erase()
    return value


@dataclass
class PipelineProgram:
    """``program(x)`` splits ``x`` into microbatches along dim 0, runs the
    pipeline binary on the simulator and returns the last stage's outputs."""

    binary_bytes: bytes
    params: list[np.ndarray]
    microbatches: int
    stages: dict[str, Any] = field(default_factory=dict)
    report: Any = None

    def __post_init__(self) -> None:
        from nova.runtime.binary import load_binary
        self.binary = load_binary(self.binary_bytes)

    def __call__(self, x: Any) -> torch.Tensor:
        from nova.sim import Simulator
        array = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
        pieces = np.split(array, self.microbatches, axis=0)
        inputs = sorted(self.binary.inputs, key=lambda e: e.index)
        values = self.params + [np.ascontiguousarray(p) for p in pieces]
        if len(values) != len(inputs):
            raise ValueError(f"the program takes {len(inputs)} inputs, got {len(values)}")
        outputs, report = Simulator(self.binary).run(
            {e.index: v for e, v in zip(inputs, values)})
        self.report = report
        last = outputs.get("chips", [outputs])[-1]
        outs = sorted(self.binary.outputs, key=lambda e: e.index)
        return torch.from_numpy(np.concatenate([np.array(last[e.index]) for e in outs], axis=0))


def compile_pipeline(stages: Sequence[nn.Module], x: torch.Tensor, *, microbatches: int = 4,
                     target: str = "nova-t1", double_buffer: bool = True) -> PipelineProgram:
    """Compiles ``stages`` (applied in order) as a GPipe forward pipeline, stage
    ``s`` on chip ``s``, over ``microbatches`` slices of ``x`` along dim 0."""
    if x.shape[0] % microbatches:
        raise ValueError(f"batch {x.shape[0]} does not split into {microbatches} microbatches")
    options = TargetOptions(name=target, chips=len(stages))
    example = x[: x.shape[0] // microbatches]
    texts, params = [], []
    with torch.no_grad():
        for stage in stages:
            text, p = _generic_tiles(stage, example, options)
            texts.append(text)
            params += p
            example = stage(example)
    merged = merge_stages(texts, microbatches)
    isa = run_opt(merged, flags.tiles_to_isa(double_buffer))
    binary = run_translate(isa, flags.isa_to_binary())
    return PipelineProgram(binary, params, microbatches,
                           stages={"nova": merged, "nova_isa": isa, "binary": binary})
