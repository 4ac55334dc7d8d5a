"""The device's memory statistics, named and shaped as ``torch.cuda``'s.

The allocator (C++, ``nova._device_C``) rounds every allocation up to a multiple
of 512 bytes and keeps freed blocks for reuse until :func:`empty_cache`;
``memory_allocated`` counts the rounded sizes of live blocks,
``memory_reserved`` those plus the cached ones. Capacity: the target's
``hbm_bytes``; beyond it ``torch.OutOfMemoryError``.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from nova.device import _device_C
from nova.device.clock import device_index

ROUND_BYTES = _device_C.round_bytes


def memory_stats(device: Any = None) -> "OrderedDict[str, int]":
    raw = _device_C.stats(device_index(device))
    out: "OrderedDict[str, int]" = OrderedDict()
    for name, key in (("allocated_bytes", "allocated_bytes"), ("reserved_bytes", "reserved_bytes"),
                      ("active", "active"), ("segment", "segment")):
        for stat, value in raw[key].items():
            out[f"{name}.all.{stat}"] = value
    out["num_alloc_retries"] = raw["num_alloc_retries"]
    out["num_ooms"] = raw["num_ooms"]
    out["host_to_device_bytes"] = raw["host_to_device_bytes"]
    out["device_to_host_bytes"] = raw["device_to_host_bytes"]
    return out


def memory_allocated(device: Any = None) -> int:
    return _device_C.stats(device_index(device))["allocated_bytes"]["current"]


def max_memory_allocated(device: Any = None) -> int:
    return _device_C.stats(device_index(device))["allocated_bytes"]["peak"]


def memory_reserved(device: Any = None) -> int:
    return _device_C.stats(device_index(device))["reserved_bytes"]["current"]


def max_memory_reserved(device: Any = None) -> int:
    return _device_C.stats(device_index(device))["reserved_bytes"]["peak"]


def reset_peak_memory_stats(device: Any = None) -> None:
    _device_C.reset_peak(device_index(device))


def empty_cache() -> None:
    for device in range(_device_C.device_count()):
        _device_C.empty_cache(device)


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the chip's HBM, as ``torch.cuda.mem_get_info``."""
    index = device_index(device)
    total = _device_C.capacity(index)
    return total - memory_reserved(index), total


def transfer_bytes(device: Any = None) -> tuple[int, int]:
    """(host-to-device, device-to-host) bytes copied so far."""
    raw = _device_C.stats(device_index(device))
    return raw["host_to_device_bytes"], raw["device_to_host_bytes"]


def memory_snapshot(device: Any = None) -> list[dict[str, Any]]:
    """Every block: its simulated HBM address, size and whether a tensor holds it."""
    return [{"address": a, "size": s, "allocated": live}
            for a, s, live in _device_C.snapshot(device_index(device))]


def _fmt(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A table of the allocator's statistics, as ``torch.cuda.memory_summary``."""
    index = device_index(device)
    raw = _device_C.stats(index)
    rows = [("Allocated memory", "allocated_bytes", _fmt), ("Reserved memory", "reserved_bytes", _fmt),
            ("Active allocs", "active", str), ("Segments", "segment", str)]
    width = 75
    lines = ["=" * width,
             f"{'nova memory summary, device ID ' + str(index):^{width}}",
             "-" * width,
             f"  capacity {_fmt(_device_C.capacity(index))} (the target's hbm_bytes); "
             f"blocks rounded to {ROUND_BYTES} B",
             f"  retries: {raw['num_alloc_retries']}   OOMs: {raw['num_ooms']}",
             "=" * width,
             f"{'Metric':<22}|{'Cur Usage':>12} |{'Peak Usage':>12} |{'Tot Alloc':>12} |{'Tot Freed':>12}",
             "-" * width]
    for label, key, fmt in rows:
        s = raw[key]
        lines.append(f"{label:<22}|{fmt(s['current']):>12} |{fmt(s['peak']):>12} |"
                     f"{fmt(s['allocated']):>12} |{fmt(s['freed']):>12}")
    lines.append("-" * width)
    lines.append(f"{'Host to device':<22}|{_fmt(raw['host_to_device_bytes']):>12} |")
    lines.append(f"{'Device to host':<22}|{_fmt(raw['device_to_host_bytes']):>12} |")
    lines.append("=" * width)
    return "\n".join(lines) + "\n"
