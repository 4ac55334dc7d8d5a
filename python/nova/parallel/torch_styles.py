"""Tensor-parallel plans in PyTorch's vocabulary: the ``parallelize_plan``
of ``torch.distributed.tensor.parallel.parallelize_module`` (module-name
patterns -> ``ColwiseParallel`` / ``RowwiseParallel`` / ...) translated to
a :class:`ParallelPlan` of the modules' parameters, by state name.

Nova compiles the whole model in one global view: every module sees whole
(logical) tensors, and sharding propagation lays out the activations from
the placements of the state. A style's ``input_layouts`` /
``output_layouts`` are therefore honoured where they are what propagation
gives at the module's boundary, and a clear :class:`ParallelError` names
the module and the style where they ask for something else (a sequence
split of activations inside the model). ``use_local_output`` only says
whether torch's eager code sees a local shard or a DTensor; in the global
view there is no local shard, so either value compiles the same program.
No process group is needed: the style objects are read, never applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatch
from typing import Any, Mapping

import torch
from torch.distributed.tensor import Replicate as TorchReplicate
from torch.distributed.tensor import Shard as TorchShard
from torch.distributed.tensor.parallel import (ColwiseParallel, ParallelStyle, RowwiseParallel,
                                               SequenceParallel)

from nova.parallel.errors import ParallelError
from nova.runtime.mesh import Mesh, Placement, Replicate, Shard
from nova.parallel.plan import ParallelPlan
from nova.parallel.rewrites import ModuleRewrite, Relayout


class FusedColwiseParallel(ColwiseParallel):
    """``ColwiseParallel`` of a fused projection whose output is ``parts``
    tensors side by side (GPT-2's ``c_attn``: q, k, v). Each chip gets its
    share of every part (its heads of q, k and v), as Megatron splits a
    fused QKV; a plain ``ColwiseParallel`` would give chip 0 all of q and
    part of k. Nova stores the weight's output columns grouped per chip
    (``nova.parallel.rewrites.Relayout``) and the model must read the
    output only by ``.split(width, dim=-1)``, as Hugging Face's attention
    does. A Nova style: torch's ``parallelize_module`` does not know it."""

    def __init__(self, parts: int = 3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
            raise ParallelError(f"FusedColwiseParallel: parts must be a positive integer, "
                                f"got {parts!r}")
        self.parts = parts

    def __repr__(self) -> str:
        return f"FusedColwiseParallel(parts={self.parts}, " + super().__repr__().split("(", 1)[1]


@dataclass(frozen=True)
class TorchParallelPlan(ParallelPlan):
    """A :class:`ParallelPlan` translated from PyTorch styles. Besides the
    placements by state name it lists the modules replaced while exporting
    (``rewrites``: split embeddings, fused projections; see
    :mod:`nova.parallel.rewrites`) and, by state name, the states stored
    re-laid-out (``relayouts``: the compiled program takes the re-laid-out
    tensor; ``Relayout.apply`` makes it from the user's)."""

    rewrites: tuple[ModuleRewrite, ...] = ()
    relayouts: Mapping[str, Relayout] = field(default_factory=dict)
    #: The styles by matched module name, for messages and reports.
    styles: Mapping[str, ParallelStyle] = field(default_factory=dict)


def torch_plan(model: torch.nn.Module, mesh_or_axis: Mesh | str | int,
               plan: Mapping[str, ParallelStyle] | ParallelStyle,
               *, batch_axis: str | int | None = None) -> TorchParallelPlan:
    """The :class:`TorchParallelPlan` of ``plan``, a ``parallelize_plan`` as
    ``torch.distributed.tensor.parallel.parallelize_module(model, mesh, plan)``
    takes it: fully qualified module names, each dot-separated part an
    ``fnmatch`` pattern (``"transformer.h.*.mlp.c_fc"``), ``""`` the model
    itself, or one style for the model itself. ``mesh_or_axis`` is the
    tensor-parallel mesh axis (a name or index), or a 1-D :class:`Mesh`.
    ``batch_axis`` adds data parallelism over another axis.

    Per module (torch's semantics, ``weight``/``bias`` by their names):

    ======================  =====================  ======================
    style                   ``nn.Linear``          ``nn.Embedding``
    ======================  =====================  ======================
    ``ColwiseParallel``     weight, bias Shard(0)  weight Shard(1)
    ``RowwiseParallel``     weight Shard(1),       weight Shard(0)
                            bias Replicate         (vocab parallel)
    ``SequenceParallel``    not accepted (see below)
    ======================  =====================  ======================

    Hugging Face's ``Conv1D`` (GPT-2) stores its weight transposed,
    ``[in, out]``; torch refuses it, Nova takes it: ``ColwiseParallel`` is
    weight Shard(1), bias Shard(0), ``RowwiseParallel`` weight Shard(0),
    bias Replicate. :class:`FusedColwiseParallel` splits a fused projection
    by parts (heads of q, k and v). A tied weight (GPT-2's ``lm_head`` and
    ``wte``) gets one placement under all its names; two styles asking
    different ones of it are an error. A split embedding is compiled as a
    one-hot contraction (:mod:`nova.parallel.rewrites`). A colwise layer of
    an attention module (one with ``head_dim``) must split into whole
    heads (grouped-query attention: whole k/v heads too).

    Layouts: ``ColwiseParallel`` takes ``input_layouts`` Replicate and
    ``output_layouts`` Shard(-1) or Replicate (where a consumer needs the
    whole tensor, the partitioned program gathers it; the model's outputs
    are always whole); ``RowwiseParallel`` takes ``input_layouts`` Shard(-1)
    (Replicate on an embedding: the token ids) and ``output_layouts``
    Replicate. Sequence-dimension layouts and ``SequenceParallel`` place
    activations inside the model, which a Nova plan cannot (it places state
    and the program's inputs): a :class:`ParallelError` says so.

    A pattern that matches no module is a :class:`ParallelError` (torch
    2.13 warns and skips it), and so is a module matched by two entries."""
    axis = _axis_of(mesh_or_axis)
    if isinstance(plan, ParallelStyle):
        plan = {"": plan}
    if not isinstance(plan, Mapping):
        raise ParallelError(f"a torch tensor-parallel plan is a dict of module names to "
                            f"ParallelStyle objects, got {type(plan).__name__}")
    aliases = _aliases(model)
    styles: dict[str, ParallelStyle] = {}
    for pattern, style in plan.items():
        if not isinstance(pattern, str):
            raise ParallelError(f"plan keys are module names, got {pattern!r}")
        if not isinstance(style, ParallelStyle):
            hint = (" (placements by state name go in a nova.parallel.ParallelPlan)"
                    if isinstance(style, Mapping) else "")
            raise ParallelError(f"plan[{pattern!r}] must be a torch ParallelStyle "
                                f"(ColwiseParallel, RowwiseParallel, ...), got {style!r}{hint}")
        matched = _match(model, pattern)
        if not matched:
            raise ParallelError(f"plan key {pattern!r} matches no module of "
                                f"{type(model).__name__}")
        for name in matched:
            if name in styles:
                raise ParallelError(f"module {name!r} is matched by two plan entries "
                                    f"({styles[name]!r} and {style!r})")
            styles[name] = style

    placements: dict[str, dict[str | int, Placement]] = {}
    owner: dict[str, str] = {}  # state name -> the module whose style placed it
    rewrites: list[ModuleRewrite] = []
    relayouts: dict[str, Relayout] = {}
    for name, style in styles.items():
        module = model.get_submodule(name)
        for param, placement in _param_placements(name, module, style).items():
            full = f"{name}.{param}" if name else param
            for alias in aliases.get(full, (full,)):
                if alias in placements and placements[alias][axis] != placement:
                    raise ParallelError(
                        f"{alias} is tied to {full}: {owner[alias]!r} places it "
                        f"{placements[alias][axis]}, {name!r} ({type(style).__name__}) "
                        f"{placement}")
                placements[alias] = {axis: placement}
                owner[alias] = name
        if isinstance(style, FusedColwiseParallel):
            if len(aliases.get(f"{name}.weight", ())) > 1:
                raise ParallelError(f"{name!r} (FusedColwiseParallel): its weight is tied to "
                                    f"another module's; a re-laid-out weight cannot be shared")
            rewrites.append(ModuleRewrite(name, "grouped_parts", style.parts, axis))
            relayouts[f"{name}.weight"] = Relayout(0 if isinstance(module, torch.nn.Linear)
                                                   else 1, style.parts)
            if getattr(module, "bias", None) is not None:
                relayouts[f"{name}.bias"] = Relayout(0, style.parts)

    # Every embedding whose table ends up split, by its own style or a tie.
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Embedding):
            placement = placements.get(f"{name}.weight", {}).get(axis)
            if isinstance(placement, Shard):
                if module.max_norm is not None:
                    raise ParallelError(f"{name!r}: an nn.Embedding with max_norm (renormed "
                                        f"in place) cannot be split")
                rewrites.append(ModuleRewrite(name, "one_hot_embedding", axis=axis))
    # Split grouped-query attentions: repeat_kv in a form propagation keeps split.
    attentions = {name.rpartition(".")[0] for name, style in styles.items()
                  if isinstance(style, ColwiseParallel) and "." in name}
    for name in sorted(attentions):
        groups = getattr(model.get_submodule(name), "num_key_value_groups", 1)
        if isinstance(groups, int) and groups > 1:
            rewrites.append(ModuleRewrite(name, "repeat_kv", axis=axis))
    return TorchParallelPlan(placements, batch_axis=batch_axis, rewrites=tuple(rewrites),
                             relayouts=relayouts, styles=styles)


def check_heads(model: torch.nn.Module, plan: TorchParallelPlan, mesh: Mesh) -> None:
    """Colwise layers of an attention module (one with ``head_dim``) must
    give every chip whole heads: ``out / head_dim`` (per part for a fused
    projection) divisible by the axis's chips (grouped-query attention:
    k_proj and v_proj have ``num_key_value_heads`` heads)."""
    for name, style in plan.styles.items():
        if not isinstance(style, ColwiseParallel) or "." not in name:
            continue
        module = model.get_submodule(name)
        parent = model.get_submodule(name.rpartition(".")[0])
        head_dim = getattr(parent, "head_dim", None)
        if not isinstance(head_dim, int) or isinstance(module, torch.nn.Embedding):
            continue
        out = _out_features(module)
        parts = style.parts if isinstance(style, FusedColwiseParallel) else 1
        heads = out // parts // head_dim
        axis = next(iter(plan.placements[f"{name}.weight"]))
        chips = mesh.shape[mesh.axis(axis)]
        if heads % chips:
            raise ParallelError(f"{name!r} ({type(style).__name__}): {heads} heads of "
                                f"{head_dim} do not split evenly over {chips} chips")


def _axis_of(mesh_or_axis: Mesh | str | int) -> str | int:
    if isinstance(mesh_or_axis, Mesh):
        if len(mesh_or_axis.shape) != 1:
            raise ParallelError(f"a torch plan is for one mesh axis (as parallelize_module "
                                f"takes a 1-D DeviceMesh): name the tensor-parallel axis of "
                                f"mesh {mesh_or_axis.axis_names!r}")
        return mesh_or_axis.axis_names[0]
    if isinstance(mesh_or_axis, (str, int)) and not isinstance(mesh_or_axis, bool):
        return mesh_or_axis
    raise ParallelError(f"expected a mesh axis (name or index) or a 1-D Mesh, "
                        f"got {mesh_or_axis!r}")


def _match(model: torch.nn.Module, pattern: str) -> list[str]:
    """The qualified names of the modules ``pattern`` names, resolved as
    ``parallelize_module`` does: one ``fnmatch`` per dot-separated part
    against the children's names."""
    if pattern == "":
        return [""]
    found = [("", model)]
    for token in pattern.split("."):
        found = [(f"{prefix}.{child}" if prefix else child, sub)
                 for prefix, module in found
                 for child, sub in module.named_children() if fnmatch(child, token)]
    return [name for name, _ in found]


def _aliases(model: torch.nn.Module) -> dict[str, tuple[str, ...]]:
    """Every parameter name -> all names of the same tensor (tied weights)."""
    names_of: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names_of.setdefault(id(param), []).append(name)
    return {name: tuple(names) for names in names_of.values() for name in names}


def _is_conv1d(module: torch.nn.Module) -> bool:
    """Hugging Face's ``Conv1D`` (weight ``[in, out]``), without importing transformers."""
    return (type(module).__name__ == "Conv1D" and hasattr(module, "nf")
            and isinstance(getattr(module, "weight", None), torch.Tensor)
            and module.weight.dim() == 2)


def _out_features(module: torch.nn.Module) -> int:
    return module.weight.shape[1] if _is_conv1d(module) else module.weight.shape[0]


def _style_error(name: str, style: ParallelStyle, why: str) -> ParallelError:
    return ParallelError(f"module {name!r} ({style!r}): {why}")


def _same(layout, expected) -> bool:
    """A torch placement equals ``expected``, Shard(-1) and Shard(last) alike."""
    if isinstance(expected, TorchShard) and isinstance(layout, TorchShard):
        return layout.dim == expected.dim
    return layout == expected


def _one_layout(name: str, style: ParallelStyle, layouts, what: str):
    if len(layouts) != 1:
        raise _style_error(name, style, f"{what} must be one placement, got {layouts!r}")
    return layouts[0]


def _check_layouts(name: str, module: torch.nn.Module, style: ParallelStyle) -> None:
    inp = _one_layout(name, style, style.input_layouts, "input_layouts")
    out = _one_layout(name, style, style.output_layouts, "output_layouts")
    embedding = isinstance(module, torch.nn.Embedding)
    if isinstance(style, ColwiseParallel):
        inputs_ok = [TorchReplicate()]
        outputs_ok = [TorchShard(-1), TorchReplicate()]
    else:
        inputs_ok = [TorchReplicate(), TorchShard(-1)] if embedding else [TorchShard(-1)]
        outputs_ok = [TorchReplicate()]
    for layout, allowed, what in ((inp, inputs_ok, "input_layouts"),
                                  (out, outputs_ok, "output_layouts")):
        if not any(_same(layout, ok) for ok in allowed):
            raise _style_error(
                name, style, f"{what}={layout!r} cannot be expressed: a Nova plan places the "
                f"state and the program's inputs, and sharding propagation lays out the "
                f"activations ({type(style).__name__} takes "
                f"{' or '.join(repr(a) for a in allowed)}); sequence parallelism inside the "
                f"model is not available")


def _param_placements(name: str, module: torch.nn.Module,
                      style: ParallelStyle) -> dict[str, Placement]:
    """The placements of ``module``'s own parameters under ``style``."""
    label = name or "<model>"
    if isinstance(style, SequenceParallel):
        raise _style_error(label, style, "SequenceParallel splits the module's activations "
                           "along the sequence; a Nova plan places the state and the "
                           "program's inputs only (split the input along the sequence in a "
                           "ParallelPlan, or use megatron_transformer_plan(sequence_parallel="
                           "True) for nova.models)")
    if not isinstance(style, (ColwiseParallel, RowwiseParallel)):
        raise _style_error(label, style, f"{type(style).__name__} is not supported (Nova "
                           f"takes ColwiseParallel, RowwiseParallel and FusedColwiseParallel)")
    colwise = isinstance(style, ColwiseParallel)
    if isinstance(module, torch.nn.Linear):
        weight, bias = (Shard(0), Shard(0)) if colwise else (Shard(1), Replicate())
    elif _is_conv1d(module):
        weight, bias = (Shard(1), Shard(0)) if colwise else (Shard(0), Replicate())
    elif isinstance(module, torch.nn.Embedding):
        if isinstance(style, FusedColwiseParallel):
            raise _style_error(label, style, "an nn.Embedding has no fused parts")
        weight, bias = (Shard(1) if colwise else Shard(0)), None
    else:
        raise _style_error(label, style, f"{type(style).__name__} splits nn.Linear, "
                           f"nn.Embedding and Hugging Face Conv1D, not {type(module).__name__}")
    _check_layouts(label, module, style)
    result = {"weight": weight}
    if getattr(module, "bias", None) is not None and bias is not None:
        result["bias"] = bias
    return result
