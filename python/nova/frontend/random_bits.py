"""Counter-based random numbers as plain int64 tensor ops (SplitMix64).

Nova's chip has no random-number instruction, so a traced program that needs
random numbers computes them: element ``i`` of a draw at counter ``offset``
from ``seed`` is SplitMix64's output for the state
``seed + (offset + i + 1) * GAMMA``, i.e. a multiply-xorshift finaliser over
a Weyl sequence. It is ``add``, ``mul``, ``xor``, ``and`` and arithmetic
right shifts on int64 with two's-complement wrap-around, which torch eager,
torch-mlir's linalg and Nova's simulator (``nova.sim.numerics``) all compute
alike, so a Nova program reproduces :func:`reference_bits` bit for bit.

Logical right shifts are arithmetic shifts masked to the low ``64 - k`` bits
(torch has no unsigned int64 shift). The 64-bit multipliers are plain
multiplies by their signed values: Nova carries an integer immediate as its
exact i64 (docs/isa.md 3.1).
"""

from __future__ import annotations

from typing import Sequence

import torch

MASK64 = (1 << 64) - 1
#: SplitMix64's increment and finaliser multipliers (unsigned 64-bit).
GAMMA = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
#: Bits of the uniforms: float32 holds every multiple of 2**-24 in [0, 1) exactly.
UNIFORM_BITS = 24


def signed64(value: int) -> int:
    """``value`` modulo 2**64 as a signed 64-bit integer (how an int64 tensor holds it)."""
    value &= MASK64
    return value - (1 << 64) if value >> 63 else value


def _shru(x: torch.Tensor, k: int) -> torch.Tensor:
    """Logical right shift of int64 ``x`` by ``k`` in (0, 64)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def mix64(z: torch.Tensor) -> torch.Tensor:
    """SplitMix64's finaliser on an int64 tensor (wrapping)."""
    z = (z ^ _shru(z, 30)) * signed64(MIX1)
    z = (z ^ _shru(z, 27)) * signed64(MIX2)
    return z ^ _shru(z, 31)


def _rows_and_last(shape: Sequence[int]) -> tuple[int, int]:
    """``shape`` as [rows, last]: its last dimension and the product of the rest."""
    numel = 1
    for size in shape:
        numel *= int(size)
    last = int(shape[-1]) if len(shape) else 1
    return (numel // last if last else 0), last


def random_bits(seed: torch.Tensor, offset: int, shape: Sequence[int],
                device: torch.device | None = None) -> torch.Tensor:
    """64 random bits per element of ``shape`` (int64): counters ``offset ..
    offset + numel - 1`` of the stream ``seed`` (a 0-d int64 tensor, a program
    input when traced), on ``device`` (the seed's when None: a graph on nova
    tensors draws on the chip from a 0-d CPU seed)."""
    # Element i's counter, offset + i + 1 with i its row-major index, built as
    # [rows, last] (rows * last + column): the hash then runs on 2-D tiles,
    # not on 1-D ones of a few hundred elements.
    rows, last = _rows_and_last(shape)
    device = device or seed.device
    counters = (torch.arange(rows, dtype=torch.int64, device=device).unsqueeze(-1) * last
                + torch.arange(last, dtype=torch.int64, device=device) + (offset + 1))
    # The counters first: a 0-d CPU seed then joins a device tensor as a scalar.
    state = counters * signed64(GAMMA) + seed.to(torch.int64)
    return mix64(state).reshape(tuple(shape))


def top_bits(bits: torch.Tensor) -> torch.Tensor:
    """The top :data:`UNIFORM_BITS` bits of int64 ``bits``, as int64 in [0, 2**24)."""
    return _shru(bits, 64 - UNIFORM_BITS)


def _premix(seed: torch.Tensor, offset: int, shape: Sequence[int],
            device: torch.device | None) -> torch.Tensor:
    """SplitMix64 without its last xorshift, as int64 [rows, last]:

    - element ``(r, c)``'s state ``(r * last + c + offset + 1) * GAMMA + seed``
      is ``R[r] + C[c]`` with ``R[r] = (r * last + offset + 1) * GAMMA + seed``
      and ``C[c] = c * GAMMA`` (wrapping multiplication distributes over
      addition): one broadcast add per element where the counters took four;
    - SplitMix64's last step ``z ^ (z >>> 31)`` leaves bits 33..63 as they
      are, so the top 24 bits are the second multiply's own."""
    rows, last = _rows_and_last(shape)
    device = device or seed.device
    gamma = signed64(GAMMA)
    # The counters first: a 0-d CPU seed then joins a device tensor as a scalar.
    row = ((torch.arange(rows, dtype=torch.int64, device=device) * last + (offset + 1)) * gamma
           + seed.to(torch.int64))
    column = torch.arange(last, dtype=torch.int64, device=device) * gamma
    z = row.unsqueeze(-1) + column
    z = (z ^ _shru(z, 30)) * signed64(MIX1)
    return (z ^ _shru(z, 27)) * signed64(MIX2)


def random_top_bits(seed: torch.Tensor, offset: int, shape: Sequence[int],
                    device: torch.device | None = None) -> torch.Tensor:
    """``top_bits(random_bits(seed, offset, shape, device))``, bit for bit, in
    about half the per-element ops (what a uniform needs; :func:`_premix`):
    an element costs 12 int64 ops instead of 18."""
    return top_bits(_premix(seed, offset, shape, device)).reshape(tuple(shape))


def random_keep(seed: torch.Tensor, offset: int, shape: Sequence[int], threshold: int,
                device: torch.device | None = None) -> torch.Tensor:
    """A bool tensor of ``shape``: element ``i`` is True when ``b ^ 2**23 <
    threshold``, ``b`` the top 24 bits of ``random_bits(...)``'s element ``i``
    (the 24-bit uniform with its top bit flipped: as uniform as ``b``).

    Why the flip: it is SplitMix64's output read as a signed int64 ``z``
    (``b ^ 2**23`` is the top 24 bits of ``z + 2**63``), so the decision is
    the one compare ``z < -2**63 + threshold * 2**40``, with no shift to the
    top bits (8 int64 ops an element instead of 9: HF GPT-2's attention
    dropout draws 6.3M a layer). :func:`reference_keep` is the same in Python
    ints."""
    if threshold >= 1 << UNIFORM_BITS:  # every element kept (the cut would overflow)
        return torch.ones(tuple(shape), dtype=torch.bool, device=device or seed.device)
    return (_premix(seed, offset, shape, device) < _keep_cut(threshold)).reshape(tuple(shape))


def _keep_cut(threshold: int) -> int:
    """The signed int64 below which an output is kept (:func:`random_keep`)."""
    return -(1 << 63) + (max(0, threshold) << (64 - UNIFORM_BITS))


def random_keep_pairs(seed: torch.Tensor, offset: int, shape: Sequence[int], threshold: int,
                      device: torch.device | None = None) -> torch.Tensor:
    """Keep decisions like :func:`random_keep`, two from each SplitMix64
    output: ``shape`` as [rows, last], the first ``h = ceil(rows / 2)`` rows
    compare the outputs' top 24 bits (as :func:`random_keep` does, at the
    same counters), the other rows bits 16..39 of the outputs of rows
    ``0 .. rows - h - 1`` (shifted to the top: ``z << 24``, then the same
    compare). Half the hashes for 2 more ops a pair: 5 int64 ops an element
    instead of 8. The two fields of one output and of neighbouring outputs are
    independent to the precision of the tests (test_dropout).

    The halves are concatenated, so the compare is not in the generic that
    scales the mask: nova-fuse-attention takes the mask as an input of that
    generic (HF GPT-2's attention dropout, 6.3M decisions a layer).
    :func:`reference_keep_pairs` is the same in Python ints."""
    rows, last = _rows_and_last(shape)
    if rows < 2 or threshold >= 1 << UNIFORM_BITS:
        return random_keep(seed, offset, shape, threshold, device)
    half = (rows + 1) // 2
    z = _premix(seed, offset, [half, last], device)
    cut = _keep_cut(threshold)
    low = z if rows - half == half else z[: rows - half]
    return torch.cat([z < cut, (low << UNIFORM_BITS) < cut]).reshape(tuple(shape))


def uniform(seed: torch.Tensor, offset: int, shape: Sequence[int]) -> torch.Tensor:
    """float32 uniforms in [0, 1), multiples of 2**-24, from :func:`random_bits`."""
    return random_top_bits(seed, offset, shape).to(torch.float32) * 2.0 ** -UNIFORM_BITS


def keep_threshold(keep_probability: float) -> int:
    """The integer ``t`` with ``top_bits < t`` exactly when ``u < keep_probability``
    for the uniform ``u = top_bits / 2**24`` (computed on the host, exactly)."""
    import math
    return min(1 << UNIFORM_BITS, max(0, math.ceil(keep_probability * (1 << UNIFORM_BITS))))


# References (pure Python, independent of torch's int64 arithmetic) --------------------

def reference_bits(seed: int, offset: int, numel: int) -> list[int]:
    """:func:`random_bits` as unsigned Python ints, by the textbook SplitMix64."""
    out = []
    for i in range(numel):
        z = _reference_premix(seed, offset + i)
        out.append(z ^ (z >> 31))
    return out


def _reference_premix(seed: int, counter: int) -> int:
    """SplitMix64 of state ``counter + 1`` without its last xorshift."""
    z = (seed + (counter + 1) * GAMMA) & MASK64
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    return ((z ^ (z >> 27)) * MIX2) & MASK64


def reference_keep(seed: int, offset: int, numel: int, threshold: int) -> list[bool]:
    """:func:`random_keep` in Python ints, from :func:`reference_bits`."""
    flip = 1 << (UNIFORM_BITS - 1)
    return [((bits >> (64 - UNIFORM_BITS)) ^ flip) < threshold
            for bits in reference_bits(seed, offset, numel)]


def reference_keep_pairs(seed: int, offset: int, shape: Sequence[int],
                         threshold: int) -> list[bool]:
    """:func:`random_keep_pairs` in Python ints (row-major), by the textbook
    SplitMix64 without its last xorshift."""
    rows, last = _rows_and_last(shape)
    if rows < 2 or threshold >= 1 << UNIFORM_BITS:
        return reference_keep(seed, offset, rows * last, threshold)
    half = (rows + 1) // 2
    flip, field = 1 << (UNIFORM_BITS - 1), (1 << UNIFORM_BITS) - 1
    out = []
    for r in range(rows):
        source, shift = (r, 64 - UNIFORM_BITS) if r < half else (r - half, 64 - 2 * UNIFORM_BITS)
        for c in range(last):
            z = _reference_premix(seed, offset + source * last + c)
            out.append((((z >> shift) & field) ^ flip) < threshold)
    return out


def step_seed(seed: int, call: int) -> int:
    """The seed of a training step's call number ``call`` (0, 1, ...) of a run
    started with ``seed``: SplitMix64's output for that state, so consecutive
    calls get unrelated streams. Signed, for a 0-d int64 input."""
    return signed64(reference_bits(seed, call, 1)[0])
