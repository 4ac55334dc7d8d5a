"""``print(nova_tensor)``: PyTorch formats a tensor with tensor ops (slices,
``masked_select``); on a compiling device it copies the tensor to the CPU first
(``xla``, ``lazy``, ``mtia`` are special-cased in ``torch._tensor_str``). Nova
does the same: printing reads the tensor back (counted as device-to-host bytes)
and formats the copy, the ``device='nova:0'`` suffix included."""
from __future__ import annotations

from typing import Any

import torch._tensor_str as tensor_str

_format = tensor_str._tensor_str


def _nova_aware(self: Any, indent: int) -> str:
    if getattr(self, "device", None) is not None and self.device.type == "nova":
        self = self.to("cpu")
    return _format(self, indent)


def install() -> None:
    tensor_str._tensor_str = _nova_aware
