"""Export-time stand-ins for modules a tensor-parallel plan splits in a way
sharding propagation cannot follow on the module as written.

* A split ``nn.Embedding`` becomes ``one_hot(ids) @ weight``. MLIR 22's
  sharding propagation does not partition the gather of an embedding lookup
  (a vocabulary split reads global ids from a local table; a split of the
  embedding dimension gave wrong numbers for GPT-2's position embedding),
  while a contraction it does: a vocabulary split (``Shard(0)``, torch's
  vocab-parallel ``RowwiseParallel``) leaves partial sums and one all-reduce,
  an embedding-dimension split (``Shard(1)``) an output split on its last
  dimension. The one-hot product is exact in float32 (one 1.0 * w, the
  rest 0.0 * w) and costs vocab * dim multiply-adds per token.
* A fused projection of ``parts`` outputs (GPT-2's ``c_attn``: q, k and v,
  3 * d columns) stores its output columns grouped by chip, each chip's
  heads of q, k and v side by side (:class:`Relayout`), as Megatron lays out
  its fused QKV. A plain column split of ``[q | k | v]`` would give chip 0
  all of q and half of k. The stand-in's output is split into the parts by
  ``.split(width, dim=-1)`` as Hugging Face's attention does, each part
  whole heads on each chip, with no collective.

* Grouped-query attention (fewer key/value heads than heads, a split
  Hugging Face attention with ``num_key_value_groups > 1``): transformers'
  ``repeat_kv`` broadcasts ``[b, kv, 1, s, d]`` to ``[b, kv, n_rep, s, d]``;
  propagation does not keep that 5-D broadcast split by kv heads and
  gathers it (a rank-5 collective Nova's backend refuses). While
  exporting, the modeling module's ``repeat_kv`` (and the SDPA
  integration's, with its ``enable_gqa`` shortcut off) is
  :func:`repeat_kv_heads_first`, the same numbers in 4-D with the heads
  leading, which stays split: each chip repeats its own kv heads.

The stand-ins keep the replaced module's parameter names, so the exported
program's state is named as the user's model names it; a re-laid-out
state holds the user's tensor permuted by :meth:`Relayout.order`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator, Sequence

import torch

from nova.parallel.errors import ParallelError


@dataclass(frozen=True)
class Relayout:
    """A state stored with dimension ``dim`` re-laid-out: the user's
    ``[parts, chips, width]`` blocks along it are stored ``[chips, parts, width]``
    (chip ``c``'s share of every part contiguous), for ``chips`` chips."""

    dim: int
    parts: int

    def order(self, size: int, chips: int) -> torch.Tensor:
        """``stored.index_select(dim, order) == user`` inverted: ``stored =
        user.index_select(dim, order)``."""
        if size % (self.parts * chips):
            raise ParallelError(f"a fused dimension of size {size} does not split into "
                                f"{self.parts} parts of {chips} equal pieces")
        return torch.arange(size).view(self.parts, chips, -1).transpose(0, 1).reshape(-1)

    def apply(self, user: torch.Tensor, chips: int) -> torch.Tensor:
        """The stored tensor for the user's ``user``."""
        return user.index_select(self.dim, self.order(user.shape[self.dim], chips)).contiguous()

    def undo(self, stored: torch.Tensor, chips: int) -> torch.Tensor:
        """The user's tensor from the stored ``stored``."""
        inverse = torch.argsort(self.order(stored.shape[self.dim], chips))
        return stored.index_select(self.dim, inverse).contiguous()


@dataclass(frozen=True)
class ModuleRewrite:
    """Replace module ``module`` (a qualified name) while exporting: ``kind``
    is ``"one_hot_embedding"``, ``"grouped_parts"`` (``parts`` outputs,
    grouped per chip of mesh axis ``axis``) or ``"repeat_kv"`` (the
    attention module ``module``'s transformers ``repeat_kv``)."""

    module: str
    kind: str
    parts: int = 1
    axis: str | int = 0


class OneHotEmbedding(torch.nn.Module):
    """``nn.Embedding``'s lookup as ``one_hot(ids) @ weight`` (same Parameter)."""

    def __init__(self, embedding: torch.nn.Embedding) -> None:
        super().__init__()
        self.weight = embedding.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        one_hot = torch.nn.functional.one_hot(ids, self.weight.shape[0]).to(self.weight.dtype)
        return one_hot @ self.weight


class _Parts:
    """A grouped projection's output: ``split(width, dim)`` returns the parts
    in the user's order (the only use Hugging Face's attention makes of it)."""

    def __init__(self, grouped: torch.Tensor, chips: int, parts: int, owner: str) -> None:
        self.grouped, self.chips, self.parts, self.owner = grouped, chips, parts, owner

    def split(self, width: int, dim: int = 0) -> tuple[torch.Tensor, ...]:
        y = self.grouped
        if dim not in (-1, y.dim() - 1) or width * self.parts != y.shape[-1]:
            raise ParallelError(f"{self.owner}: a fused projection split per chip is read only "
                                f"by .split({y.shape[-1] // self.parts}, dim=-1); the model "
                                f"called .split({width}, dim={dim})")
        lead = y.shape[:-1]
        by_chip = y.view(*lead, self.chips, self.parts, width // self.chips)
        return tuple(by_chip[..., p, :].reshape(*lead, width) for p in range(self.parts))

    def __getattr__(self, name: str):
        # AttributeError, so that hasattr() probes (torch's own) see a plain miss.
        raise AttributeError(f"{self.owner}: the output of a fused projection split per chip "
                            f"can only be .split() into its {self.parts} parts, not .{name}")


class GroupedParts(torch.nn.Module):
    """A fused ``nn.Linear`` or Hugging Face ``Conv1D`` with its output
    columns stored grouped per chip (:class:`Relayout`)."""

    def __init__(self, module: torch.nn.Module, name: str, parts: int, chips: int) -> None:
        super().__init__()
        self.conv1d = not isinstance(module, torch.nn.Linear)
        self.parts, self.chips, self.owner = parts, chips, name
        out_dim = 1 if self.conv1d else 0
        self.weight = torch.nn.Parameter(
            Relayout(out_dim, parts).apply(module.weight.detach(), chips),
            requires_grad=module.weight.requires_grad)
        bias = getattr(module, "bias", None)
        self.bias = (None if bias is None else torch.nn.Parameter(
            Relayout(0, parts).apply(bias.detach(), chips), requires_grad=bias.requires_grad))

    def forward(self, x: torch.Tensor) -> _Parts:
        if self.conv1d:  # Conv1D.forward, on the stored weight
            flat = x.reshape(-1, x.shape[-1])
            y = (flat @ self.weight if self.bias is None
                 else torch.addmm(self.bias, flat, self.weight))
            y = y.view(*x.shape[:-1], self.weight.shape[1])
        else:
            y = torch.nn.functional.linear(x, self.weight, self.bias)
        return _Parts(y, self.chips, self.parts, self.owner)


def repeat_kv_heads_first(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    """transformers' ``repeat_kv`` (``[b, kv, s, d] -> [b, kv * n_rep, s, d]``,
    each kv head repeated ``n_rep`` times in place), with the heads leading."""
    if n_rep == 1:
        return hidden_states
    b, kv, s, d = hidden_states.shape
    heads_first = hidden_states.transpose(0, 1).reshape(kv, 1, b * s, d)
    repeated = heads_first.expand(kv, n_rep, b * s, d).reshape(kv * n_rep, b, s, d)
    return repeated.transpose(0, 1)


def _repeat_kv_patches(module: torch.nn.Module) -> list[tuple[object, str, object]]:
    """(python module, attribute, replacement) for an attention ``module``."""
    import sys

    patches = []
    modeling = sys.modules.get(type(module).__module__)
    if modeling is not None and callable(getattr(modeling, "repeat_kv", None)):
        patches.append((modeling, "repeat_kv", repeat_kv_heads_first))
    sdpa = sys.modules.get("transformers.integrations.sdpa_attention")
    if sdpa is not None:
        if callable(getattr(sdpa, "repeat_kv", None)):
            patches.append((sdpa, "repeat_kv", repeat_kv_heads_first))
        if callable(getattr(sdpa, "use_gqa_in_sdpa", None)):
            patches.append((sdpa, "use_gqa_in_sdpa", lambda *args, **kwargs: False))
    return patches


def stand_in(model: torch.nn.Module, rewrite: ModuleRewrite, chips: int) -> torch.nn.Module:
    """The module that replaces ``rewrite.module`` of ``model`` while exporting."""
    module = model.get_submodule(rewrite.module)
    if rewrite.kind == "one_hot_embedding":
        return OneHotEmbedding(module)
    if rewrite.kind == "grouped_parts":
        return GroupedParts(module, rewrite.module, rewrite.parts, chips)
    raise ParallelError(f"unknown module rewrite {rewrite.kind!r}")


@contextlib.contextmanager
def rewritten(model: torch.nn.Module, rewrites: Sequence[ModuleRewrite],
              chips_of) -> Iterator[None]:
    """``model`` with each rewrite's module replaced by its stand-in
    (``chips_of(axis)`` chips), put back on exit."""
    originals = []
    try:
        for rewrite in rewrites:
            if rewrite.kind == "repeat_kv":  # functions of transformers, not a module
                for owner, attribute, replacement in _repeat_kv_patches(
                        model.get_submodule(rewrite.module)):
                    originals.append((owner, attribute, getattr(owner, attribute)))
                    setattr(owner, attribute, replacement)
                continue
            parent_name, _, child = rewrite.module.rpartition(".")
            parent = model.get_submodule(parent_name)
            replacement = stand_in(model, rewrite, chips_of(rewrite.axis))
            originals.append((parent, child, getattr(parent, child)))
            setattr(parent, child, replacement)
        yield
    finally:
        for parent, child, original in reversed(originals):
            setattr(parent, child, original)
