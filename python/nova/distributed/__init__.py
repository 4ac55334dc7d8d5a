"""``torch.distributed`` on simulated chips: ``init_process_group("nova")`` under
``torchrun``, one process per chip, DDP, FSDP2, DTensor and pipelining unchanged.

Importing this package registers the ``nova`` c10d backend for nova tensors (and
CPU tensors, which it hands to gloo). Each rank's place in the target's topology
is its global rank. Bytes move through torch.distributed's own gloo transport; the
simulated time of every collective and transfer comes from one simulation of the
interconnect that every rank runs on the same log (:mod:`nova.distributed.coordinator`),
so concurrent groups share links and every rank agrees. docs/distributed.md.
"""
from __future__ import annotations

import torch.distributed as dist

from nova.device import make_backend, profile
from nova.distributed import timing
from nova.distributed.backend import NovaBackend
from nova.distributed.calls import CollectiveMismatch
from nova.distributed.work import PeerFailure
from nova.errors import NovaError

__all__ = ["CollectiveMismatch", "PeerFailure", "register"]


def _create(options, backend_options=None):  # noqa: ANN001, ANN202 - c10d's creator signature
    ranks = tuple(options.global_ranks_in_group) or tuple(range(options.group_size))
    chips = timing.system_chips()
    if max(ranks) >= chips:
        raise NovaError(f"torch.distributed on nova: global rank {max(ranks)} has no chip: the target "
                        f"has {chips} chips (set NOVA_DEVICE_TARGET to a target with at least "
                        f"{max(ranks) + 1}, e.g. nova-t1-ring8)")
    if dist.is_initialized() is False or len(ranks) == options.group_size:
        profile.process["name"] = f"rank {ranks[options.group_rank]}"
    impl = NovaBackend(options.store, options.group_rank, options.group_size, options.timeout,
                       ranks, str(options.group_id))
    return make_backend(options.group_rank, options.group_size, impl)


def register() -> None:
    if "nova" in dist.Backend.backend_list:
        return
    dist.Backend.register_backend("nova", _create, extended_api=True, devices=["nova", "cpu"])


register()
