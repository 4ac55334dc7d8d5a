"""Registers the ``nova`` device with PyTorch (once per process)."""
from __future__ import annotations

import torch

from nova.errors import NovaError

_done = False


def register() -> None:
    """Makes ``torch.device("nova")`` work: the backend name, ``torch.nova``, the
    tensor methods, the C++ allocator/view kernels and the Python compute kernels."""
    global _done
    if _done:
        return
    current = torch._C._get_privateuse1_backend_name()
    if current not in ("privateuseone", "nova"):
        raise NovaError(f"PyTorch's PrivateUse1 backend is already registered as {current!r}; "
                        f"the nova device needs it (one out-of-tree device per process)")
    # The C++ part: allocator, device guard, view/copy kernels, the hooks PyTorch
    # asks about availability and generators (registers on import).
    from nova.device import _device_C  # noqa: F401
    from nova.device import config, kernels, printing, torch_nova

    if current == "privateuseone":
        torch.utils.rename_privateuse1_backend("nova")
        torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)
    torch._register_device_module("nova", torch_nova)
    config.configure()
    kernels.install()
    printing.install()
    from nova.device import dynamo_interface
    dynamo_interface.install()
    _done = True
