"""``nova`` as a PyTorch device: ``model.to("nova")`` and the rest of the script unchanged.

Importing this package registers PyTorch's PrivateUse1 backend under the name
``nova`` (:func:`register`; ``import nova`` and PyTorch's device-backend autoload
do it): ``torch.device("nova")``, ``torch.nova`` (:mod:`nova.device.torch_nova`),
``tensor.nova()`` / ``is_nova``. Tensors live in a simulated chip's HBM
(:mod:`nova.device.memory`); ATen ops on them run as Nova programs built by the
same compiler as ``nova.compile`` (:mod:`nova.device.kernels`), each advancing
the device's simulated clock (:mod:`nova.device.clock`). docs/device.md.
"""
from nova.device.registration import register

register()

# The C++ part's functions other Nova packages use (nova.distributed).
from nova.device._device_C import as_host, current_device, make_backend  # noqa: E402

__all__ = ["as_host", "current_device", "make_backend", "register"]
