"""The shardings sharding propagation gives a program's results.

A pipeline stage's forward on a mesh returns its saved activations for the
backward, a separately partitioned body: the backward must take each one
as the forward leaves it on the chips. Annotating those results for
propagation to choose (``annotate(..., result_placements=[..., None])``)
and reading back what it chose gives the backward's argument placements;
the forward, partitioned with the same results unannotated, leaves them
there (the same passes on the same text), at no resharding cost.
"""

from __future__ import annotations

import re

from nova.compiler.driver import run_opt
from nova.parallel.errors import ParallelError

__all__ = ["propagated_result_axes", "PROPAGATE"]

#: ``nova-partition`` stopped after sharding propagation: what it leaves on
#: the results is what the whole pipeline partitions them as.
PROPAGATE = ["--pass-pipeline=builtin.module(nova-partition{propagate-only=true})"]

_DEF = re.compile(r"^\s*(%[\w$.#:]+) = (\S+) (.*)$")


def _axes(text: str) -> list[list[int]]:
    """``[[1], [], [2]]`` (or ``[]``) -> the lists."""
    return [[int(a) for a in group.split(",") if a.strip()]
            for group in re.findall(r"\[([\d,\s]*)\]", text[1:-1])]


def propagated_result_axes(annotated: str, func_name: str = "forward"
                           ) -> list[list[list[int]] | None]:
    """Per result of ``@func_name`` in the ``shard``-annotated ``annotated``:
    the grid axes each tensor dimension is split over after propagation
    (``[]`` per dimension: replicated); ``None`` where the sharding is a
    partial sum or has halos or offsets, which a placement cannot state.
    Read from the printed IR (the Python bindings' parser rejects a rank-0
    tensor's ``split_axes = []``)."""
    text = run_opt(annotated, PROPAGATE)
    lines = text.splitlines()
    begin = next((i for i, line in enumerate(lines)
                  if re.match(rf"\s*func\.func (\w+ )?@{func_name}\(", line)), None)
    if begin is None:
        raise ParallelError(f"no function @{func_name}")
    defs: dict[str, tuple[str, str]] = {}
    ret = None
    for line in lines[begin + 1:]:
        found = _DEF.match(line)
        if found:
            defs[found.group(1)] = (found.group(2), found.group(3))
        elif line.strip().startswith("return"):
            ret = line.strip()
            break
    if ret is None:
        raise ParallelError(f"@{func_name} has no return")
    body = re.sub(r"\s+loc\(.*\)$", "", ret)[len("return"):]
    names, _, types = body.partition(" : ")
    ranks = [t.count("x") for t in _types(types)]
    out: list[list[list[int]] | None] = []
    for name, rank in zip([n.strip() for n in names.split(",")], ranks):
        rank = max(rank, 1)
        op, rest = defs.get(name, ("", ""))
        if op != "shard.shard":
            out.append([[] for _ in range(rank)])  # unannotated: replicated
            continue
        sharding = re.match(r"%[\w$.#]+ to (%[\w$.#]+)", rest)
        op, rest = defs.get(sharding.group(1), ("", "")) if sharding else ("", "")
        axes = _bracketed(rest, "split_axes = ")
        if op != "shard.sharding" or axes is None or any(
                word in rest for word in ("partial", "halo", "offsets")):
            out.append(None)
            continue
        found = _axes(axes)
        out.append(found + [[] for _ in range(rank - len(found))])
    return out


def _types(text: str) -> list[str]:
    """``tensor<2x3xf32>, tensor<f32>`` -> each type."""
    return re.findall(r"tensor<[^>]*>", text)


def _bracketed(text: str, after: str) -> str | None:
    """The ``[...]`` (brackets matched) right after ``after`` in ``text``."""
    start = text.find(after)
    if start < 0 or text[start + len(after):start + len(after) + 1] != "[":
        return None
    start += len(after)
    depth = 0
    for i in range(start, len(text)):
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i + 1]
    return None
