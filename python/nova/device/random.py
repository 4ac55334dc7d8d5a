"""The device's random-number state: one seed per process, set by
``torch.manual_seed`` / ``torch.nova.manual_seed``; random ops on the device draw
from :class:`nova.frontend.dropout.RandomStream` as the compiled training paths do."""
from __future__ import annotations

import torch

_state = {"seed": 0, "offset": 0}


def manual_seed(seed: int) -> None:
    _state["seed"] = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
    _state["offset"] = 0


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> None:
    manual_seed(int(torch.randint(0, 2**62, (1,)).item()))


def seed_all() -> None:
    seed()


def initial_seed() -> int:
    return _state["seed"]


def get_rng_state(device: object = None) -> torch.Tensor:
    return torch.tensor([_state["seed"], _state["offset"]], dtype=torch.int64)


def set_rng_state(state: torch.Tensor, device: object = None) -> None:
    _state["seed"], _state["offset"] = (int(v) for v in state.tolist())


def next_seed() -> int:
    """A fresh seed for one random op (the state advances)."""
    _state["offset"] += 1
    return (_state["seed"] * 1_000_003 + _state["offset"]) & 0x7FFF_FFFF
