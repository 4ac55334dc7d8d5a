"""How long a collective takes on the simulated system: the in-process simulator's
own pricing (:func:`nova.sim.collective_time.collective_time_ns`: the same planner
and the same shared-bandwidth flows as the machine), so a collective costs the same
under torchrun as inside one Python process."""
from __future__ import annotations

from nova.device.config import settings
from nova.errors import NovaError
from nova.sim.collective_time import collective_time_ns

#: c10d ops the machine has no instruction of its own for, priced as the nearest one
#: (the bytes a gather or scatter moves to or from its root, as a reduce or broadcast).
_AS = {"gather": "reduce", "scatter": "broadcast"}


def priced_kind(kind: str) -> str:
    """The collective of :mod:`nova.sim.collective_time` that ``kind`` is priced as."""
    return _AS.get(kind, kind)


def system_chips() -> int:
    return int(settings.description["chips"])


def collective_ns(kind: str, chips: tuple[int, ...], nbytes: int, elt: int = 4,
                  root: int | None = None) -> float:
    """Simulated ns of one collective alone on ``chips`` (``root``: the chip a
    broadcast, reduce, gather or scatter starts or ends at); ``nbytes`` as the ISA
    counts it (all_gather: one chip's piece; otherwise a chip's whole input)."""
    if len(chips) <= 1:
        return 0.0
    if max(chips) >= system_chips():
        raise NovaError(f"torch.distributed on nova: rank {max(chips)} has no chip: the target "
                        f"{settings.target!r} has {system_chips()} chips (choose a larger one with "
                        f"NOVA_DEVICE_TARGET, e.g. nova-t1-ring8)")
    if root is not None:
        chips = (root,) + tuple(c for c in chips if c != root)
    return collective_time_ns(settings.description, priced_kind(kind), tuple(chips), int(nbytes),
                              elt=elt)


def transfer_ns(src: int, dst: int, nbytes: int, elt: int = 4) -> float:
    """A point-to-point transfer from chip ``src`` to chip ``dst``, to the receive's end."""
    if src == dst:
        return 0.0
    return collective_time_ns(settings.description, "send", (src, dst), int(nbytes), elt=elt)
