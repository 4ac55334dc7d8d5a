"""The device's generators: one per chip, as CUDA keeps one per GPU, each a seed
and a counter offset (the Philox way: a draw of ``n`` numbers takes ``n``
counters and the state advances by them).

``torch.manual_seed`` seeds them all (through ``torch.nova.manual_seed_all``);
``torch.nova.manual_seed`` seeds the current chip's. A random op on the device is
a Nova program that computes its numbers with :class:`nova.frontend.dropout.RandomStream`
from a 0-d int64 key input, as the compiled training steps do from their seed
input (:mod:`nova.device.random_forms`); :func:`take` gives that key. The key
folds seed and offset into one SplitMix64 state, so a program is cached once and
serves every call, and a draw depends only on (seed, offset, shape).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

# nova.frontend.random_bits is imported where used: PyTorch's device autoload
# imports this package while torch loads, and the frontend package pulls in the exporter.

#: CUDA's default seed (``torch.cuda.initial_seed()`` before any seeding).
DEFAULT_SEED = 67280421310721


@dataclass
class _Generator:
    seed: int = DEFAULT_SEED
    offset: int = 0


_generators: dict[int, _Generator] = {}


def _index(device: object) -> int:
    """The chip of ``device`` (None: the current chip; an int, a str or a torch.device)."""
    from nova.device import _device_C

    if device is None:
        return _device_C.current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    return _device_C.current_device() if device.index is None else device.index


def _generator(device: object = None) -> _Generator:
    return _generators.setdefault(_index(device), _Generator())


def _device_count() -> int:
    from nova.device import torch_nova

    return torch_nova.device_count()


def manual_seed(seed: int) -> None:
    """Seeds the current chip's generator (``torch.cuda.manual_seed``)."""
    generator = _generator()
    generator.seed, generator.offset = int(seed) & 0xFFFF_FFFF_FFFF_FFFF, 0


def manual_seed_all(seed: int) -> None:
    """Seeds every chip's generator (what ``torch.manual_seed`` calls)."""
    for index in range(_device_count()):
        _generators[index] = _Generator(int(seed) & 0xFFFF_FFFF_FFFF_FFFF, 0)


def seed() -> None:
    manual_seed(int(torch.randint(0, 2**62, (1,)).item()))


def seed_all() -> None:
    manual_seed_all(int(torch.randint(0, 2**62, (1,)).item()))


def initial_seed() -> int:
    return _generator().seed


def get_rng_state(device: object = None) -> torch.Tensor:
    """The chip's generator state as CUDA gives it: a uint8 tensor of 16 bytes
    (the seed and the offset, int64 each)."""
    from nova.frontend.random_bits import signed64

    generator = _generator(device)
    words = torch.tensor([signed64(generator.seed), signed64(generator.offset)], dtype=torch.int64)
    return words.view(torch.uint8).clone()


def set_rng_state(state: torch.Tensor, device: object = None) -> None:
    if state.dtype != torch.uint8 or state.numel() != 16:
        raise ValueError(f"a nova RNG state is a uint8 tensor of 16 bytes (get_rng_state()), "
                         f"got {state.dtype} of {state.numel()} elements")
    seed_, offset = state.detach().cpu().contiguous().view(torch.int64).tolist()
    generator = _generator(device)
    generator.seed, generator.offset = seed_ & 0xFFFF_FFFF_FFFF_FFFF, offset & 0xFFFF_FFFF_FFFF_FFFF


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(_device_count())]


def set_rng_state_all(states: list[torch.Tensor]) -> None:
    for index, state in enumerate(states):
        set_rng_state(state, index)


def take(device: int, counters: int) -> int:
    """The key of a draw of up to ``counters`` numbers on chip ``device``; the
    chip's offset advances past them. ``random_bits(key, 0, shape)`` is then the
    generator's stream at counters ``offset ..``: SplitMix64 from the mixed seed."""
    from nova.frontend.random_bits import GAMMA, signed64, step_seed

    generator = _generator(device)
    key = step_seed(generator.seed, 0) + generator.offset * GAMMA
    generator.offset = (generator.offset + counters) & 0xFFFF_FFFF_FFFF_FFFF
    return signed64(key)
