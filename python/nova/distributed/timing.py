"""How long a collective takes on the simulated system: the in-process simulator's
own pricing of the same collective on the same chips of the same target, so a
collective costs the same under torchrun as inside one Python process."""
from __future__ import annotations

import functools

from nova.binary import opcodes as oc
from nova.device.config import settings
from nova.errors import NovaError
from nova.sim.collectives import CollectivePlanner
from nova.sim.interconnect import Interconnect
from nova.sim.target import target_from_dict

_OPCODES = {"all_reduce": oc.ALL_REDUCE, "all_gather": oc.ALL_GATHER,
            "reduce_scatter": oc.REDUCE_SCATTER, "all_to_all": oc.ALL_TO_ALL, "barrier": oc.BARRIER}


def system_chips() -> int:
    return int(settings.description["chips"])


@functools.lru_cache(maxsize=8)
def _planner(target: str) -> CollectivePlanner:
    return CollectivePlanner(Interconnect.from_target(target_from_dict(settings.description, target)))


def collective_ns(kind: str, chips: tuple[int, ...], nbytes: int) -> float:
    """Simulated ns of one collective alone on ``chips``; ``nbytes`` = each chip's input."""
    if len(chips) <= 1:
        return 0.0
    limit = system_chips()
    if max(chips) >= limit:
        raise NovaError(f"torch.distributed on nova: rank {max(chips)} has no chip: the target "
                        f"{settings.target!r} has {limit} chips (choose a larger one with "
                        f"NOVA_DEVICE_TARGET, e.g. nova-t1-ring8)")
    planner = _planner(settings.target)
    if kind in ("broadcast", "reduce", "gather", "scatter"):
        # A tree's bandwidth term as a ring all-gather (broadcast/scatter) or reduce-scatter.
        kind = "all_gather" if kind in ("broadcast", "scatter", "gather") else "reduce_scatter"
        nbytes = nbytes // len(chips) if kind == "all_gather" else nbytes
    return planner.plan(_OPCODES[kind], tuple(chips), float(nbytes)).duration_ns


def transfer_ns(src: int, dst: int, nbytes: int) -> float:
    """A point-to-point transfer from chip ``src`` to chip ``dst``."""
    planner = _planner(settings.target)
    route = planner.net.route(src, dst)
    return route.latency_ns + nbytes / planner.net.link_gbps
