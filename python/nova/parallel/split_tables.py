"""Embedding tables that a plan splits.

MLIR 22's sharding propagation does not partition a gather whose table is
split: a vocabulary split (``Shard(0)``) looks global ids up in each chip's
local rows (the simulator's bounds check, or wrong rows), and a split of
the embedding dimension (``Shard(1)``, GPT-2's ``wpe``) gave logits off by
0.4 with no error. So, for every plan (hand-written or from torch styles):

* each ``nn.Embedding`` whose table the plan splits (any ``Shard`` under any
  of its tied names: GPT-2's exported graph reads ``lm_head.weight`` for
  the ``wte`` lookup) is exported as ``one_hot(ids) @ weight``
  (:class:`nova.parallel.rewrites.OneHotEmbedding`), a contraction that
  propagation partitions exactly;
* any other lookup left on a split state (``F.embedding`` on a bare
  parameter, ``index_select``, ``gather``, ``table[ids]``) is a
  :class:`ParallelError` at compile time naming the state.
"""

from __future__ import annotations

import re
from typing import Iterable

import torch

from nova.parallel.errors import ParallelError
from nova.runtime.mesh import Shard
from nova.parallel.plan import ParallelPlan
from nova.parallel.rewrites import ModuleRewrite

aten = torch.ops.aten

#: Ops that read rows (or elements) of their first operand at data-dependent positions.
_LOOKUPS = frozenset({
    aten.embedding.default, aten.index_select.default, aten.gather.default,
    aten.index.Tensor, aten.take.default, aten._embedding_bag.default,
    aten.embedding_bag.default, aten.embedding_bag.padding_idx,
})

#: Ops whose result is (a view or copy of) their first operand: a lookup on
#: their result is a lookup on the table (``table.t()[ids]``).
_PASS_THROUGH = frozenset({
    aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.t.default,
    aten.transpose.int, aten.permute.default, aten.unsqueeze.default, aten.squeeze.dim,
    aten.squeeze.dims, aten.squeeze.default, aten.expand.default, aten.clone.default,
    aten.alias.default, aten._to_copy.default, aten.contiguous.default, aten.detach.default,
    aten.slice.Tensor, aten.select.int,
})


def split_states(plan: ParallelPlan) -> dict[str, str | int]:
    """State or input names the plan splits (any ``Shard``) -> the mesh axis of the split."""
    return {name: axis for name, by_axis in plan.placements.items()
            for axis, placement in by_axis.items() if isinstance(placement, Shard)}


def _aliases(model: torch.nn.Module) -> dict[int, set[str]]:
    """id(tensor) -> every name of that parameter or buffer (tied weights)."""
    names: dict[int, set[str]] = {}
    for name, tensor in [*model.named_parameters(remove_duplicate=False),
                         *model.named_buffers(remove_duplicate=False)]:
        names.setdefault(id(tensor), set()).add(name)
    return names


def embedding_rewrites(model: torch.nn.Module, plan: ParallelPlan,
                       done: Iterable[ModuleRewrite] = ()) -> list[ModuleRewrite]:
    """One-hot rewrites of the ``nn.Embedding`` modules whose table ``plan``
    splits, other than those ``done`` already replaces."""
    split = split_states(plan)
    if not split:
        return []
    replaced = {rewrite.module for rewrite in done}
    aliases = _aliases(model)
    rewrites: list[ModuleRewrite] = []
    by_dim: set[int] = set()  # the dimensions the split tables are split along
    for name, module in model.named_modules(remove_duplicate=False):
        if not isinstance(module, torch.nn.Embedding) or not name:
            continue  # the model itself (name "") has no parent to swap it in: checked later
        names = sorted(aliases.get(id(module.weight), set()) & split.keys())
        by_dim |= {p.dim for n in names for p in plan.placements[n].values()
                   if isinstance(p, Shard)}
        if not names or name in replaced:
            continue
        if module.max_norm is not None:
            raise ParallelError(f"{names[0]}: the plan splits the table of {name!r}, an "
                                f"nn.Embedding with max_norm (renormed in place), which cannot "
                                f"be split; replicate it")
        rewrites.append(ModuleRewrite(name, "one_hot_embedding", axis=split[names[0]]))
        replaced.add(name)
    if by_dim - {0}:
        # A table split along its embedding dimension gives a split output,
        # which propagation also splits the lookups added to it by
        # (GPT-2's wte + wpe), and a gather cannot be split so: every other
        # nn.Embedding of the model is looked up by one-hot too.
        for name, module in model.named_modules(remove_duplicate=False):
            if (isinstance(module, torch.nn.Embedding) and name and name not in replaced
                    and module.max_norm is None):
                rewrites.append(ModuleRewrite(name, "one_hot_embedding"))
                replaced.add(name)
    return rewrites


def check_no_split_lookups(exported: torch.export.ExportedProgram, plan: ParallelPlan) -> None:
    """A :class:`ParallelError` for a lookup (gather) the exported graph still
    makes on a state the plan splits: partitioning would give wrong numbers."""
    split = split_states(plan)
    if not split:
        return
    signature = exported.graph_signature
    state_of = {**signature.inputs_to_parameters, **signature.inputs_to_buffers,
                **signature.inputs_to_lifted_tensor_constants}
    for node in exported.graph.nodes:
        if node.op != "placeholder" or state_of.get(node.name) not in split:
            continue
        lookup = _lookup_of(node)
        if lookup is not None:
            name = state_of[node.name]
            raise ParallelError(
                f"{name}: the plan splits it ({dict(plan.placements[name])}), and the model "
                f"looks it up by index ({lookup.target}), which sharding propagation does not "
                f"partition correctly (a split table gives wrong rows). Replicate {name} in "
                f"the plan, or hold the table in an nn.Embedding module called as a module: "
                f"a split nn.Embedding is compiled as one_hot(ids) @ weight, by a "
                f"ParallelPlan as by a torch-style plan (RowwiseParallel/ColwiseParallel)")


def _lookup_of(table: torch.fx.Node) -> torch.fx.Node | None:
    """The first lookup reading ``table`` (through views and copies) as its table."""
    pending, seen = [table], set()
    while pending:
        node = pending.pop()
        for user in node.users:
            if user in seen or user.op != "call_function" or not user.args:
                continue
            seen.add(user)
            if user.args[0] is not node:
                continue
            if user.target in _LOOKUPS:
                return user
            if user.target in _PASS_THROUGH:
                pending.append(user)
    return None


# --- after partitioning: a gather that propagation split where it cannot be split ---
#
# torch-mlir lowers an embedding lookup (and other gathers) to a
# ``linalg.generic`` whose body reads the table with ``tensor.extract``, the
# row from the ids and the column from ``linalg.index``. The table is not an
# operand, so partitioning sees nothing of it: splitting the loop of that
# ``linalg.index`` leaves each chip reading the first columns of the table
# (a replicated ``wpe`` gathered into a hidden-split residual stream gave
# wrong numbers). Such a gather has a loop shorter than the table dimension
# it indexes; before partitioning none has.

_MAP = re.compile(r"^(#map\d*) = affine_map<\(([^)]*)\) -> \(([^)]*)\)>", re.M)
_GENERIC = re.compile(r"linalg\.generic \{indexing_maps = \[([^\]]*)\].*outs\([^:]*: "
                      r"tensor<([^>]*)>\)")
_INDEX = re.compile(r"(%[\w]+) = linalg\.index (\d+)")
_EXTRACT = re.compile(r"tensor\.extract (%[\w]+)\[([^\]]*)\] : tensor<([^>]*)>")


def _dims(tensor_type: str) -> list[int | None]:
    return [int(d) if d.isdigit() else None for d in tensor_type.split("x")[:-1]]


def misread_gathers(mlir: str) -> list[str]:
    """Each gather of ``mlir`` that reads a table dimension by a loop
    shorter than it (``"<table> dim <d>: loop <n> of <size>"``)."""
    maps = {name: (dims.replace(" ", ""), results.replace(" ", ""))
            for name, dims, results in _MAP.findall(mlir)}
    found = []
    lines = mlir.splitlines()
    for i, line in enumerate(lines):
        match = _GENERIC.search(line)
        if not match:
            continue
        out_map = maps.get(match.group(1).split(",")[-1].strip())
        if out_map is None or out_map[0] != out_map[1]:
            continue  # only an identity output map gives the loop extents
        extents = _dims(match.group(2))
        index_of = {}
        for body in lines[i + 1:]:
            if "linalg.yield" in body:
                break
            for value, loop in _INDEX.findall(body):
                index_of[value] = int(loop)
            for table, indices, table_type in _EXTRACT.findall(body):
                sizes = _dims(table_type)
                for dim, value in enumerate(v.strip() for v in indices.split(",")):
                    loop = index_of.get(value)
                    if (loop is not None and loop < len(extents) and dim < len(sizes)
                            and None not in (extents[loop], sizes[dim])
                            and extents[loop] < sizes[dim]):
                        found.append(f"{table} dim {dim}: loop {extents[loop]} of {sizes[dim]}")
    return found


def check_gathers_kept_whole(annotated: str, spmd: str) -> None:
    """A :class:`ParallelError` when partitioning split a gather along a
    dimension it reads the table by (the numbers would be wrong)."""
    before, after = misread_gathers(annotated), misread_gathers(spmd)
    if len(after) > len(before):
        raise ParallelError(
            f"sharding propagation split an embedding lookup (a gather) along the dimension "
            f"it reads the table by ({after[0]}), which would give wrong numbers: a split "
            f"activation meets the output of a lookup in a table that is not split. Split "
            f"every embedding table this one is added to the same way, make them all "
            f"nn.Embedding modules (a split nn.Embedding is compiled as one_hot(ids) @ "
            f"weight), or replicate the split one")
