"""Dynamo's device interface for ``nova`` (``torch._dynamo.device_interface``):
what Dynamo asks of a device when it traces code that uses its streams, events
and device index; and the Dynamo backend's hook for graphs on nova tensors."""
from __future__ import annotations

from typing import Any

import torch
from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device

from nova.device import clock, graphs, memory, torch_nova


class NovaInterface(DeviceInterface):
    device = torch_nova.device
    Event = clock.Event
    Stream = clock.Stream

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            torch_nova.set_device(device)

        @staticmethod
        def current_device() -> int:
            return torch_nova.current_device()

        @staticmethod
        def get_device_properties(device: Any = None) -> Any:
            return torch_nova.get_device_properties(device)

    current_device = staticmethod(torch_nova.current_device)
    set_device = staticmethod(torch_nova.set_device)
    device_count = staticmethod(torch_nova.device_count)
    is_available = staticmethod(torch_nova.is_available)
    stream = staticmethod(clock.stream)
    current_stream = staticmethod(clock.current_stream)
    set_stream = staticmethod(clock.set_stream)
    synchronize = staticmethod(clock.synchronize)
    memory_allocated = staticmethod(memory.memory_allocated)

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        return NovaInterface.exchange_device(device)

    @staticmethod
    def exchange_device(device: int) -> int:
        before = torch_nova.current_device()
        torch_nova.set_device(device)
        return before

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return 0

    @classmethod
    def get_device_properties(cls, device: Any = None) -> Any:
        return torch_nova.get_device_properties(device)

    @staticmethod
    def get_compute_capability(device: Any = None) -> Any:
        return torch_nova.target()

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def is_triton_capable(device: Any = None) -> bool:
        return False


def install() -> None:
    register_interface_for_device("nova", NovaInterface)
    graphs.install()
