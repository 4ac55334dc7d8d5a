"""The device's settings: the target its chips are, and what an op without a Nova
kernel does (``NOVA_DEVICE_TARGET``, ``NOVA_DEVICE_FALLBACK``)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from nova.binary.targets import available_targets, load_target_dict, target_file
from nova.device import _device_C
from nova.errors import NovaError

FALLBACK_MODES = ("warn", "error")


@dataclass
class Settings:
    target: str = "nova-t1"
    description: dict | None = None
    fallback: str = "warn"


settings = Settings()


def configure(target: str | None = None) -> None:
    """Chooses the target (its chips are nova:0..N-1, each with its HBM)."""
    name = target or os.environ.get("NOVA_DEVICE_TARGET") or settings.target
    path = target_file(name)
    if path is None:
        raise NovaError(f"unknown target {name!r} for the nova device (targets: "
                        f"{', '.join(sorted(available_targets()))}; or a .json path)")
    description = load_target_dict(path)
    for device in range(_device_C.device_count()):
        if _device_C.stats(device)["reserved_bytes"]["current"]:
            if name != settings.target:
                raise NovaError(f"torch.nova.set_target({name!r}): tensors are still on "
                                f"nova:{device} (target {settings.target!r}); free them first")
    settings.target = name
    settings.description = description
    # A node's chips, as torch.cuda counts a host's GPUs (one node: the whole system).
    local = min(description["chips"], description.get("chips_per_node") or description["chips"])
    _device_C.set_device_count(local)
    for device in range(local):
        _device_C.empty_cache(device)
        _device_C.set_capacity(device, description["hbm_bytes"])
    mode = os.environ.get("NOVA_DEVICE_FALLBACK")
    if mode:
        set_fallback(mode)


def set_fallback(mode: str) -> None:
    """``"warn"`` (default): an op without a Nova kernel runs on the CPU with one
    warning naming it; ``"error"``: it raises instead (strict mode)."""
    if mode not in FALLBACK_MODES:
        raise NovaError(f"fallback mode must be one of {', '.join(FALLBACK_MODES)}, got {mode!r}")
    settings.fallback = mode
