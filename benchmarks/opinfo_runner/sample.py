"""One OpInfo sample as a module whose inputs are the sample's tensors."""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree


class Skip(Exception):
    """A sample that cannot be a Nova program at all (or has no eager reference)."""


class OpModule(torch.nn.Module):
    """Calls ``fn`` on the sample's arguments, with the tensors as inputs."""

    def __init__(self, fn, leaves, spec, tensor_slots):
        super().__init__()
        self.fn = fn
        self.leaves = leaves
        self.spec = spec
        self.tensor_slots = tensor_slots

    def forward(self, *tensors):
        leaves = list(self.leaves)
        for slot, tensor in zip(self.tensor_slots, tensors):
            leaves[slot] = tensor
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        out = self.fn(*args, **kwargs)
        flat, _ = pytree.tree_flatten(out)
        return tuple(flat)


_CONSTANTS = (bool, int, float, complex, str, torch.dtype, torch.device, torch.memory_format,
              torch.layout, torch.Size, slice, type(Ellipsis))


def make_module(op, sample):
    """The module and its tensor inputs (none for factories: ``arange``, ``ones``);
    every non-tensor argument is baked in."""
    structure = ((sample.input, *sample.args), dict(sample.kwargs))
    leaves, spec = pytree.tree_flatten(structure)
    tensor_slots = []
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, torch.Tensor):
            if leaf.layout != torch.strided or leaf.device.type != "cpu":
                raise Skip(f"{leaf.layout} tensor")
            tensor_slots.append(i)
        elif not (leaf is None or isinstance(leaf, _CONSTANTS)):
            raise Skip(f"argument of type {type(leaf).__name__}")
    tensors = [leaves[i] for i in tensor_slots]
    baked = [None if i in tensor_slots else leaf for i, leaf in enumerate(leaves)]
    return OpModule(op.op, baked, spec, tensor_slots), tensors


def clones(tensors):
    return [t.detach().clone() for t in tensors]


def describe(tensors) -> list[str]:
    return [f"{t.dtype}{list(t.shape)}".replace("torch.", "") for t in tensors]
