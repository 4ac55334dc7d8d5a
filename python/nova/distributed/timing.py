"""What the torch.distributed backend prices its ops as, on the target's chips. The
pricing itself is the in-process simulator's (:mod:`nova.sim.collective_time`, used
by :mod:`nova.distributed.coordinator`), so a collective costs the same under
torchrun as inside one Python process."""
from __future__ import annotations

from nova.device.config import settings

#: c10d ops the machine has no instruction of its own for, priced as the nearest one
#: (the bytes a gather or scatter moves to or from its root, as a reduce or broadcast).
_AS = {"gather": "reduce", "scatter": "broadcast"}


def priced_kind(kind: str) -> str:
    """The collective of :mod:`nova.sim.collective_time` that ``kind`` is priced as."""
    return _AS.get(kind, kind)


def system_chips() -> int:
    return int(settings.description["chips"])
