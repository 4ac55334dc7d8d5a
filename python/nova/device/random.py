"""The device's generators: one default ``torch.Generator`` per chip, as CUDA
keeps one per GPU, each a seed and a counter offset (the Philox way: a draw of
``n`` numbers takes ``n`` counters and the offset advances by them). They are
C++ objects (``ext/device/Generator.cpp``, handed to PyTorch by the PrivateUse1
hooks), so ``torch.Generator("nova")`` makes more of the same kind.

``torch.manual_seed`` seeds every chip's (through ``torch.nova.manual_seed_all``);
``torch.nova.manual_seed`` seeds the current chip's. A random op on the device is
a Nova program that computes its numbers with :class:`nova.frontend.dropout.RandomStream`
from a 0-d int64 key input, as the compiled training steps do from their seed
input (:mod:`nova.device.random_forms`); :func:`take` gives that key. The key
folds seed and offset into one SplitMix64 state, so a program is cached once and
serves every call, and a draw depends only on (seed, offset, shape).
"""
from __future__ import annotations

import torch

from nova.device import _device_C


def default_generator(device: object = None) -> torch.Generator:
    """The default generator of ``device``'s chip (None: the current chip; an
    int, a str or a torch.device)."""
    if device is None:
        index = _device_C.current_device()
    elif isinstance(device, int):
        index = device
    else:
        device = torch.device(device)
        index = _device_C.current_device() if device.index is None else device.index
    return _device_C.default_generator(index)


def default_generators() -> tuple[torch.Generator, ...]:
    return tuple(default_generator(i) for i in range(_device_C.device_count()))


def manual_seed(seed: int) -> None:
    """Seeds the current chip's generator (``torch.cuda.manual_seed``); its offset restarts."""
    default_generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds every chip's generator (what ``torch.manual_seed`` calls)."""
    for generator in default_generators():
        generator.manual_seed(int(seed))


def seed() -> None:
    default_generator().seed()


def seed_all() -> None:
    manual_seed_all(default_generator().seed())


def initial_seed() -> int:
    return default_generator().initial_seed()


def get_rng_state(device: object = None) -> torch.Tensor:
    """The chip's generator state as CUDA gives it: a uint8 tensor of 16 bytes
    (the seed and the offset, 64 bits each)."""
    return default_generator(device).get_state()


def set_rng_state(state: torch.Tensor, device: object = None) -> None:
    default_generator(device).set_state(state.detach().cpu())


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(_device_C.device_count())]


def set_rng_state_all(states: list[torch.Tensor]) -> None:
    for index, state in enumerate(states):
        set_rng_state(state, index)


def take(device: int, counters: int, generator: torch.Generator | None = None) -> int:
    """The key of a draw of up to ``counters`` numbers from ``generator`` (chip
    ``device``'s default one when None); its offset advances past them.
    ``random_bits(key, 0, shape)`` is then the generator's stream at counters
    ``offset ..``: SplitMix64 from the mixed seed."""
    from nova.frontend.random_bits import GAMMA, MASK64, signed64, step_seed

    generator = generator if generator is not None else default_generator(device)
    seed_, offset = generator.initial_seed(), generator.get_offset()
    generator.set_offset((offset + counters) & MASK64)
    return signed64(step_seed(seed_, 0) + offset * GAMMA)
