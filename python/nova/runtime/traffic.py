"""What a program's runs moved between the host and the simulated device, and
within the device (the copies of values kept there: :mod:`nova.runtime.device`).

The simulator does not time host transfers; the device copies it does (each as
an HBM-to-HBM DMA), and ``device_ns`` is added to a run's simulated time by the
callers that report it (``nova.dynamo.report()``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass
class Traffic:
    """Bytes moved (every chip's, summed)."""

    #: Input bytes written from the host (bound parameters included).
    host_written: int = 0
    #: Output bytes read back to the host (later reads of kept values included).
    host_read: int = 0
    #: Outputs kept in device memory (count) and their bytes.
    kept: int = 0
    kept_bytes: int = 0
    #: Input bytes copied device-to-device from values kept by a run.
    device_in: int = 0
    #: Kept values moved out of an output buffer before a run overwrote it.
    moved_bytes: int = 0
    #: Simulated ns of those device copies (device_in and moved).
    device_ns: float = 0.0

    def add(self, other: "Traffic") -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
