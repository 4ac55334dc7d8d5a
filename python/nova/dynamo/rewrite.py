"""The Dynamo graph as aot_autograd should trace it for training on Nova.

Two rewrites, both at the level of the Python calls Dynamo records (above
autograd, so the backward aot_autograd derives follows from them):

- ``F.scaled_dot_product_attention`` becomes :func:`nova.frontend.attention_math.sdpa_math`
  (primitive ops, whose backward Nova lowers too);
- dropout in training mode (``F.dropout`` / ``nn.Dropout``, ``torch.dropout``,
  ``torch.native_dropout`` and SDPA's ``dropout_p``) draws its mask from a
  :class:`~nova.frontend.dropout.RandomStream` over a seed the graph takes as
  one more input, the mechanism ``nova.compile_train_step`` uses: the masks
  are computed on the chip, and the backward multiplies by the same mask.
  The caller passes a fresh seed drawn from torch's generator at every call
  (:func:`draw_seed`), so ``torch.manual_seed`` makes runs repeatable.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

from nova.frontend.attention_math import SDPA_TARGETS, sdpa_math
from nova.dynamo.graph import copy_graph
from nova.frontend.dropout import RandomStream, stream_dropout


def rewrite_for_training(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, bool]:
    """A copy of ``gm`` with the rewrites above, and whether it takes a seed
    (then as its last input). ``gm`` itself is returned when nothing changes."""
    graph = gm.graph
    attention = [n for n in graph.nodes if n.op == "call_function" and n.target in SDPA_TARGETS]
    dropouts = [n for n in graph.nodes
                if n.op == "call_function" and stream_dropout(n.target) is not None]
    random = bool(dropouts) or any(_sdpa_dropout(n) for n in attention)
    if not attention and not random:
        return gm, False
    new = torch.fx.GraphModule(gm, copy_graph(graph))
    new.meta = dict(getattr(gm, "meta", {}))
    for name in ("_param_name_to_source",):
        if hasattr(gm, name):
            setattr(new, name, getattr(gm, name))
    graph = new.graph
    old_placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for old, node in zip(old_placeholders, [n for n in graph.nodes if n.op == "placeholder"]):
        if hasattr(old, "_dynamo_source"):
            node._dynamo_source = old._dynamo_source
    stream = None
    if random:
        last = [n for n in graph.nodes if n.op == "placeholder"][-1]
        with graph.inserting_after(last):
            seed = graph.placeholder("nova_dropout_seed")
        seed._dynamo_source = None  # not a user input (as DDP's split graphs mark theirs)
        with graph.inserting_after(seed):
            stream = graph.call_function(RandomStream, (seed,))
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if node.target in SDPA_TARGETS:
            kwargs = dict(node.kwargs)
            if stream is not None:
                kwargs["stream"] = stream
            _replace(graph, node, sdpa_math, node.args, kwargs)
        elif stream is not None and stream_dropout(node.target) is not None:
            _replace(graph, node, stream_dropout(node.target), (stream, *node.args), node.kwargs)
    graph.lint()
    new.recompile()
    return new, random


def draw_seed() -> torch.Tensor:
    """A fresh seed for one call of a graph that draws dropout masks (from
    torch's default generator)."""
    return torch.randint(-(2 ** 63), 2 ** 63 - 1, (), dtype=torch.int64)


def _sdpa_dropout(node: torch.fx.Node) -> bool:
    p = node.kwargs.get("dropout_p", node.args[4] if len(node.args) > 4 else 0.0)
    return not isinstance(p, (int, float)) or p != 0.0


def _replace(graph: torch.fx.Graph, node: torch.fx.Node, target: Any, args: tuple,
             kwargs: dict) -> None:
    with graph.inserting_before(node):
        new = graph.call_function(target, tuple(args), dict(kwargs))
    new.meta = dict(node.meta)
    node.replace_all_uses_with(new)
    graph.erase_node(node)
