"""Loops over layers: which layer each engine instruction's execution belongs to.

nova-roll-layers rolls identical consecutive layers (a transformer's blocks) into
one loop whose body is one copy of a layer, so every layer runs the same
instructions, located in the first layer's modules (``... in blocks.0.attn``).
The DEBUG entry of that loop's ``loop`` instruction ends with the module of each
iteration (``... over layers blocks.0,blocks.1,blocks.2``, docs/binary-format.md
4.6). The sequencer's control flow depends on the program alone, so a walk of the
scalar code (:func:`nova.sim.stream._walk`) gives every dispatch its layer; an
instruction's executions complete in dispatch order (one queue each, FIFO), so its
``j``-th completion is its ``j``-th dispatch and the event loops (Python and
compiled) charge each completion's busy time to that dispatch's layer. The
report then gives each (instruction, layer) its own statistics, located in that
layer's module (``blocks.1.attn``), measured rather than split.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nova.binary import opcodes as oc
from . import stream as sx

if TYPE_CHECKING:
    from .machine import Dec
    from .program import ChipCode
    from .watchdog import Budget

#: ``over layers blocks.0,blocks.1`` at the end of a loop's DEBUG text.
_LAYERS = re.compile(r"(?:^| )over layers ([\w.\-]+(?:,[\w.\-]+)*)$")
#: ``in blocks.0.attn`` (before a ``vassert``'s ``: <message>``), as report_profile reads it.
_MODULE = re.compile(r"((?:^| )in )([\w.\-]+)(?=$|: )")


@dataclass(frozen=True)
class Layers:
    """A chip's layers: ``names[k]`` is layer ``k``'s module prefix and ``first[k]``
    the prefix its instructions' locations name (their loop's first layer);
    ``steps[i]`` the layer of stream step ``i`` (-1 outside loops over layers);
    ``executions[pc]`` the layer of each execution of instruction ``pc`` in
    dispatch order (instructions inside loops over layers only)."""

    names: tuple[str, ...]
    first: tuple[str, ...]
    steps: np.ndarray
    executions: dict[int, list[int]]

    def location(self, location: str | None, layer: int) -> str | None:
        """``location`` (in the loop's first layer) moved to layer ``layer``'s module."""
        if not location:
            return location
        first, name = self.first[layer], self.names[layer]

        def moved(m: re.Match) -> str:
            module = m.group(2)
            if module == first or module.startswith(first + "."):
                module = name + module[len(first):]
            return m.group(1) + module

        return _MODULE.sub(moved, location, count=1)


def layer_loops(decoded: list["Dec"], debug: dict[int, str]) -> dict[int, tuple[str, ...]]:
    """The loops over layers of a chip's code: loop pc -> each iteration's module."""
    loops = {}
    for pc, text in debug.items():
        if pc < len(decoded) and decoded[pc].op == oc.LOOP:
            m = _LAYERS.search(text)
            ins = decoded[pc].ins
            if m and not ins.flags & (oc.F_LB_REG | oc.F_UB_REG | oc.F_STEP_REG) and ins.imm2 > 0:
                modules = tuple(m.group(1).split(","))
                # As many iterations as the entry names layers (else it is not trusted).
                if max(0, -(-(ins.imm1 - ins.imm0) // ins.imm2)) == len(modules):
                    loops[pc] = modules
    return loops


#: Layers of recently run programs, by (ChipCode identity, chip, budget). A few entries.
_CACHE: "OrderedDict[tuple, tuple[ChipCode, Layers | None]]" = OrderedDict()


def chip_layers(code: "ChipCode", decoded: list["Dec"], cid: int, budget: "Budget") -> Layers | None:
    """Chip ``cid``'s layers, or None when its code has no loop over layers (or its
    stream does not end in ``halt`` within the stream limit: then the report keeps
    every layer's time on the first layer's locations)."""
    key = (id(code), cid, budget.max_instructions, budget.max_time_ns)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is code:
        _CACHE.move_to_end(key)
        return hit[1]
    result = _chip_layers(code, decoded, cid, budget)
    _CACHE[key] = (code, result)
    while len(_CACHE) > 8:
        _CACHE.popitem(last=False)
    return result


def _chip_layers(code: "ChipCode", decoded: list["Dec"], cid: int, budget: "Budget") -> Layers | None:
    loops = layer_loops(decoded, code.debug)
    if not loops:
        return None
    base, names, first = {}, [], []
    for pc, modules in sorted(loops.items()):
        base[pc] = len(names)
        names += modules
        first += [modules[0]] * len(modules)
    tags: list[int] = []
    steps = sx._walk(cid, decoded, code.debug, budget, sx.MAX_STEPS, layers=base, tags=tags)
    if not isinstance(steps, list) or not steps or steps[-1][1] != sx.HALT or len(tags) != len(steps):
        return None
    executions: dict[int, list[int]] = {}
    for st, tag in zip(steps, tags):
        if tag >= 0 and st[1] == sx.DISPATCH:
            executions.setdefault(st[2].pc, []).append(tag)
    return Layers(tuple(names), tuple(first), np.array(tags, dtype=np.int64), executions)
