"""What a rank asked a collective to do, as a fixed row of integers the ranks of a
group exchange before the bytes move: their calls must agree (op, dtypes, shapes,
root, order), as NCCL's desync debugging checks, and each row carries the rank's
simulated clock at the call."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from nova.errors import NovaError

KINDS = ("all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all",
         "gather", "scatter", "barrier", "send")
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool)
REDUCE_OPS = ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM", "-")
MAX_DIMS = 6
WIDTH = 8 + MAX_DIMS  # seq, kind, dtype, numel, ndim, op, root, clock, dims


class CollectiveMismatch(NovaError):
    """The ranks of a group called different collectives (or the same one on
    different tensors) at the same point of their programs."""


@dataclass(frozen=True)
class Call:
    kind: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    op: str = "-"
    root: int = -1

    @classmethod
    def of(cls, kind: str, tensor: torch.Tensor | None, op: str = "-", root: int = -1) -> "Call":
        if tensor is None:
            return cls(kind, torch.float32, (), op, root)
        return cls(kind, tensor.dtype, tuple(tensor.shape), op, root)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def encode(self, seq: int, clock_fs: int) -> torch.Tensor:
        dims = list(self.shape[:MAX_DIMS]) + [0] * (MAX_DIMS - min(len(self.shape), MAX_DIMS))
        row = [seq, KINDS.index(self.kind), _dtype_code(self.dtype), self.numel, len(self.shape),
               REDUCE_OPS.index(self.op), self.root, clock_fs] + dims
        return torch.tensor(row, dtype=torch.int64)

    @staticmethod
    def decode(row: list[int]) -> tuple[int, "Call", int]:
        """(seq, call, clock_fs) of an encoded row."""
        seq, kind, dtype, numel, ndim, op, root, clock = row[:8]
        shape = tuple(row[8:8 + min(ndim, MAX_DIMS)])
        if ndim > MAX_DIMS:  # only the first dims travel; numel stands for the rest
            shape = shape + (numel,)
        return seq, Call(KINDS[kind], DTYPES[dtype], shape, REDUCE_OPS[op], root), clock

    def __str__(self) -> str:
        dtype = str(self.dtype).removeprefix("torch.")
        text = f"{self.kind}({dtype}{list(self.shape)}"
        if self.op != "-":
            text += f", op={self.op}"
        if self.root >= 0:
            text += f", root={self.root}"
        return text + ")"


def _dtype_code(dtype: torch.dtype) -> int:
    if dtype not in DTYPES:
        raise NovaError(f"torch.distributed on nova: collectives of {dtype} are not supported "
                        f"(supported: {', '.join(str(d).removeprefix('torch.') for d in DTYPES)})")
    return DTYPES.index(dtype)


def check_agree(group: str, rows: list[list[int]], ranks: tuple[int, ...], where: str = "") -> list[int]:
    """The clocks of every rank's row; raises :class:`CollectiveMismatch` naming the
    first two ranks whose calls differ."""
    decoded = [Call.decode(r) for r in rows]
    seq0, call0, _ = decoded[0]
    for i, (seq, call, _) in enumerate(decoded[1:], 1):
        if call != call0 or seq != seq0:
            raise CollectiveMismatch(
                f"torch.distributed on nova: the ranks of process group {group!r} called different "
                f"collectives: global rank {ranks[0]} called {call0} as its call #{seq0} in the group, "
                f"global rank {ranks[i]} called {call} as its call #{seq}" + (f"; this rank's call is at {where}" if where else ""))
    return [clock for _, _, clock in decoded]
