"""``torch.nova``: the device module PyTorch finds for ``nova`` tensors, shaped as
``torch.cuda`` (devices, streams and events on simulated time, memory statistics,
the RNG seed) plus Nova's own switches (``set_target``, ``set_fallback``, the
eager profile)."""
from __future__ import annotations

from typing import Any

import torch

from nova.device import _device_C, config, profile as _profile
from nova.device.clock import (Event, Stream, current_stream, default_stream, set_stream,
                               stream, synchronize)
from nova.device.host import counts as _fallback_counts
from nova.device.memory import (empty_cache, max_memory_allocated, max_memory_reserved,
                                mem_get_info, memory_allocated, memory_reserved,
                                memory_snapshot, memory_stats, memory_summary,
                                reset_peak_memory_stats, transfer_bytes)
from nova.device.programs import cache as _cache
from nova.device.random import (get_rng_state, get_rng_state_all, initial_seed, manual_seed,
                                manual_seed_all, seed, seed_all, set_rng_state, set_rng_state_all)

__all__ = [
    "Event", "Stream", "current_device", "current_stream", "default_stream", "device_count",
    "empty_cache", "fallback_report", "get_amp_supported_dtype", "get_rng_state", "get_rng_state_all",
    "initial_seed",
    "is_available", "is_bf16_supported", "is_initialized", "manual_seed", "manual_seed_all",
    "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
    "memory_reserved", "memory_snapshot", "memory_stats", "memory_summary", "op_cache_stats",
    "profile_table", "reset_peak_memory_stats", "seed", "seed_all", "set_device", "set_fallback",
    "set_rng_state", "set_rng_state_all", "set_stream", "set_target", "stream", "synchronize", "target",
    "transfer_bytes", "write_trace",
]


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def _is_in_bad_fork() -> bool:
    return False


def _lazy_init() -> None:
    pass


def device_count() -> int:
    """The target's chips: ``nova:0`` .. ``nova:N-1``."""
    return _device_C.device_count()


def current_device() -> int:
    return _device_C.current_device()


def set_device(device: int | str | torch.device) -> None:
    index = device if isinstance(device, int) else torch.device(device).index or 0
    if not 0 <= index < device_count():
        raise RuntimeError(f"nova: device index {index} is out of range: the target "
                           f"{config.settings.target!r} has {device_count()} chip(s)")
    _device_C.set_current_device(index)


class device:
    """``with torch.nova.device(i):`` makes ``nova:i`` current inside the block."""

    def __init__(self, index: int | str | torch.device) -> None:
        self.index = index if isinstance(index, int) else torch.device(index).index or 0

    def __enter__(self) -> None:
        self.before = current_device()
        set_device(self.index)

    def __exit__(self, *exc: Any) -> None:
        set_device(self.before)


def get_device_name(device: Any = None) -> str:
    return f"Nova simulated chip ({config.settings.target})"


def get_device_properties(device: Any = None) -> Any:
    """The chip's description (the target file's fields) as an object."""
    from types import SimpleNamespace

    d = config.settings.description
    return SimpleNamespace(name=get_device_name(device), total_memory=d["hbm_bytes"],
                           **{k: v for k, v in d.items() if k not in ("name", "timing")})


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.bfloat16, torch.float16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def set_target(name: str) -> None:
    """The target the chips are (a name in ``targets/`` or a JSON path); the
    ``NOVA_DEVICE_TARGET`` environment variable sets it at import."""
    config.configure(name)


def target() -> str:
    return config.settings.target


def set_fallback(mode: str) -> None:
    """``"warn"`` (default) or ``"error"``: what an op without a Nova kernel does."""
    config.set_fallback(mode)


def fallback_report() -> dict[str, int]:
    """Ops that ran on the CPU, with how many times."""
    return dict(_fallback_counts)


def profile_table(top: int = 30) -> str:
    """The eager ops by simulated time: calls, time, bytes read."""
    return _profile.table(top)


def profile_rows() -> dict[str, dict[str, Any]]:
    return _profile.rows()


def reset_profile() -> None:
    _profile.reset()


def launches() -> int:
    return _profile.launches()


def write_trace(path: str) -> None:
    _profile.write_trace(path)


def op_cache_stats() -> dict[str, float]:
    """Programs compiled in this process, loaded from the disk cache, compile seconds."""
    return {"compiled": _cache.compiles, "disk_hits": _cache.disk_hits,
            "compile_seconds": _cache.compile_seconds, "programs": len(_cache.programs)}
