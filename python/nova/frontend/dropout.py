"""Dropout drawn from a program input: masks from :mod:`nova.frontend.random_bits`.

Under :func:`random_stream` (a ``TorchFunctionMode``), ``F.dropout`` /
``nn.Dropout`` / ``torch.dropout`` / ``torch.native_dropout`` in training
mode compute their keep mask from the stream's seed tensor (a 0-d int64
input of the traced program) and the stream's next counters, so each call
site, and each call of one site (a micro-batch), gets its own mask. The
mask is an ordinary tensor of the graph: autograd's backward multiplies by
the same tensor, as torch's dropout backward does.

Why a torch-function mode and not the decomposition table: ``aten.dropout``
is CompositeImplicitAutograd and reaches ``make_fx`` already decomposed in
C++ into ``empty_like(x).bernoulli_(1 - p)`` (an in-place op on an
uninitialised tensor), which the table never sees; above the dispatcher the
call is still ``F.dropout(x, p, training)``. The mask ops are plain aten ops,
so the functionalized re-trace of a mutating graph replays them as they are.

Semantics are torch's: keep with probability ``1 - p`` and scale kept values
by ``1 / (1 - p)`` (``x * mask * s``, ``s`` torch's ``1 / (1 - p)`` in the
dtype of ``x``: :func:`keep_scale`);
``p = 0`` or ``training=False`` returns ``x`` (no random ops emitted);
``p = 1`` gives ``x * 0``.

``F.scaled_dot_product_attention`` is replaced under the mode by its math form
(:func:`nova.frontend.attention_math.sdpa_math`), whose ``dropout_p`` drops
attention weights with a mask from the same stream.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import torch
from torch.overrides import TorchFunctionMode

from nova.frontend.attention_math import sdpa_math
from nova.frontend.errors import NovaExportError
from nova.frontend.random_bits import keep_threshold, random_keep, random_keep_pairs, uniform

F = torch.nn.functional


class RandomStream:
    """A traced program's seed tensor and its next unused counter."""

    def __init__(self, seed: torch.Tensor) -> None:
        self.seed = seed
        self.offset = 0
        #: Number of draws (dropout calls with 0 < p < 1) so far.
        self.draws = 0

    def take(self, numel: int) -> int:
        """Reserves ``numel`` counters; returns the first."""
        first = self.offset
        self.offset += numel
        self.draws += 1
        return first


def keep_mask(stream: RandomStream, shape: torch.Size, p: float,
              device: torch.device | None = None, pairs: bool = False) -> torch.Tensor:
    """A bool mask of ``shape``, True with probability ``1 - p``, from ``stream``
    (on ``device``, the seed's when None); ``pairs``: two decisions from each
    hash (:func:`~nova.frontend.random_bits.random_keep_pairs`)."""
    numel = 1
    for size in shape:
        numel *= int(size)
    keep = random_keep_pairs if pairs else random_keep
    return keep(stream.seed, stream.take(numel), shape, keep_threshold(1.0 - p), device)


def keep_scale(dtype: torch.dtype, p: float) -> float:
    """torch's factor of a kept element, ``ones((), dtype) / (1 - p)`` (the
    division in float32 for float32 and narrower types, rounded to ``dtype``),
    as a Python float computed without tensor ops.

    Dropout multiplies the float mask by it rather than dividing the mask by
    ``1 - p``: the same values (``1 * scale``, ``0 * scale``), but a divide is
    four times a multiply on the vector engine (docs/isa.md 2.4), on every
    element of the mask."""
    import struct

    if dtype in (torch.float64, torch.complex128):
        return 1.0 / (1.0 - p)
    # A float32 quotient of float32 operands, computed in double and rounded
    # once: exact (double has more than 2 * 24 + 2 bits).
    q = struct.unpack("<f", struct.pack("<f", 1.0 - p))[0]
    scale = struct.unpack("<f", struct.pack("<f", 1.0 / q))[0]
    if dtype == torch.float16:
        return struct.unpack("<e", struct.pack("<e", scale))[0]
    if dtype == torch.bfloat16:  # round to nearest even on the top 16 bits
        b = struct.unpack("<I", struct.pack("<f", scale))[0]
        b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
        return struct.unpack("<f", struct.pack("<I", b))[0]
    return scale


def native_dropout(stream: RandomStream, x: torch.Tensor, p: float,
                   train: bool | None = True) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.native_dropout``: ``(output, mask)`` with a mask from ``stream``."""
    _check_p(p)
    if not train or p == 0:
        return x.clone(), torch.ones_like(x, dtype=torch.bool)
    if p == 1:
        return x * torch.zeros_like(x), torch.zeros_like(x, dtype=torch.bool)
    mask = keep_mask(stream, x.shape, p, x.device)
    return x * mask * keep_scale(x.dtype, p), mask


def dropout(stream: RandomStream, x: torch.Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> torch.Tensor:
    """``F.dropout`` (torch's ``_dropout_impl``) with a mask from ``stream``."""
    _check_p(p)
    if not training or p == 0 or x.numel() == 0:
        return x
    if p == 1:
        zeros = torch.zeros_like(x)
        return x.mul_(zeros) if inplace else x * zeros
    mask = keep_mask(stream, x.shape, p, x.device)
    if inplace:
        return x.mul_(mask.to(x.dtype) * keep_scale(x.dtype, p))
    # torch's x * (mask / (1 - p)) value for value (x * 1 * s, x * 0 * s), but
    # no float mask: that tensor, read by the forward and by the backward, was
    # written to HBM and read twice; the bool one is converted where each
    # multiply reads it. (The backward is (g * s) * mask: a dropped element's
    # gradient is NaN rather than 0 only if g * s overflows.)
    return x * mask * keep_scale(x.dtype, p)


def attention_dropout(stream: RandomStream, weights: torch.Tensor, p: float) -> torch.Tensor:
    """SDPA's ``dropout_p`` on attention weights: ``weights * D`` with the
    float mask ``D = mask * (1 / (1 - p))`` a tensor of its own, the form
    nova-fuse-attention takes into its kernels (as an i1 mask operand)."""
    _check_p(p)
    if p == 0 or weights.numel() == 0:
        return weights
    if p == 1:
        return weights * torch.zeros_like(weights)
    # Two decisions a hash: the halves' concatenation is the i1 input of D's
    # generic, which nova-fuse-attention passes to its kernels as it is.
    mask = keep_mask(stream, weights.shape, p, weights.device, pairs=True)
    return weights * (mask.to(weights.dtype) * keep_scale(weights.dtype, p))


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _other(name: str, training_default: bool):
    """A check for a dropout variant Nova draws no mask for: an error when it would draw."""
    def check(stream: RandomStream, input: torch.Tensor, p: float = 0.5,
              training: bool = training_default, inplace: bool = False) -> None:
        if p and training:
            raise NovaExportError(f"F.{name} with p={p} in training is not supported yet "
                                  "(Nova draws masks for F.dropout / nn.Dropout only)")
    return check


_DROPOUT = {F.dropout: dropout, torch.dropout: lambda s, x, p, train: dropout(s, x, p, train),
            torch.dropout_: lambda s, x, p, train: dropout(s, x, p, train, inplace=True),
            torch.native_dropout: native_dropout}
_OTHER = {F.alpha_dropout: _other("alpha_dropout", False),
          F.feature_alpha_dropout: _other("feature_alpha_dropout", False),
          F.dropout1d: _other("dropout1d", True), F.dropout2d: _other("dropout2d", True),
          F.dropout3d: _other("dropout3d", True)}


def stream_dropout(func: object) -> Callable[..., Any] | None:
    """The version of dropout ``func`` (``F.dropout``, ``torch.dropout``, ...)
    that takes a :class:`RandomStream` first; None for anything else."""
    return _DROPOUT.get(func)


# Layer drop (OPT, BART: ``if torch.rand([]) < self.layerdrop: skip the layer``)
# branches in Python on one uniform draw. A compiled step cannot branch per call,
# so such a comparison is answered at trace time only when the range of the draw,
# [0, 1), decides it (``layerdrop`` 0, the default, never skips); otherwise it is
# an error rather than one fixed choice of layers for every step.
# ``draw < p`` reaches the mode as ``TensorBase.lt``; each entry gives
# (never true, always true) for a draw in [0, 1).
_RANGE_DECIDES = {"lt": lambda p: (p <= 0.0, p >= 1.0), "le": lambda p: (p < 0.0, p >= 1.0),
                  "gt": lambda p: (p >= 1.0, p < 0.0), "ge": lambda p: (p > 1.0, p <= 0.0)}
_COMPARE = {getattr(owner, name): decide for name, decide in _RANGE_DECIDES.items()
            for owner in (torch._C.TensorBase, torch)}
_COMPARE.update({getattr(torch.Tensor, f"__{name}__"): decide
                 for name, decide in _RANGE_DECIDES.items()})


def _one_element(args, kwargs) -> bool:
    size = kwargs.get("size", args[0] if len(args) == 1 and isinstance(args[0], (list, tuple, torch.Size)) else args)
    try:
        return all(int(s) == 1 for s in size)
    except TypeError:
        return False


def _model_line() -> str:
    """The innermost caller outside torch and Nova (the model's line), as a traceback line."""
    import inspect
    import linecache

    for info in inspect.stack()[2:]:
        path = info.filename.replace("\\", "/")
        if "/torch/" in path or "/nova/" in path:
            continue
        text = linecache.getline(info.filename, info.lineno).strip()
        return f'  File "{info.filename}", line {info.lineno}\n    {text}'
    return ""


class _DropoutMode(TorchFunctionMode):
    def __init__(self, stream: RandomStream) -> None:
        super().__init__()
        self.stream = stream
        #: The one-element ``torch.rand`` draws (by id) a comparison may decide.
        self.scalar_draws: dict[int, torch.Tensor] = {}

    def _scalar_draw(self, args, kwargs) -> torch.Tensor:
        dtype = kwargs.get("dtype") or torch.get_default_dtype()
        size = kwargs.get("size", args[0] if len(args) == 1 and isinstance(args[0], (list, tuple, torch.Size)) else args)
        u = uniform(self.stream.seed, self.stream.take(1), [int(s) for s in size]).to(dtype)
        self.scalar_draws[id(u)] = u
        return u

    def _decide(self, func, draw: torch.Tensor, p: float) -> bool:
        never, always = _COMPARE[func](float(p))
        if never or always:
            return bool(always)
        raise NovaExportError(
            f"a Python branch on a random draw (torch.rand([]) compared with {p}: layer drop "
            "in training) is not supported: a compiled step cannot choose its layers per call; "
            f"it is supported when the probability is 0 (the default) or 1\n{_model_line()}")

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.rand and _one_element(args, kwargs) and "generator" not in kwargs:
            return self._scalar_draw(args, kwargs)
        if (func in _COMPARE and len(args) == 2 and id(args[0]) in self.scalar_draws
                and self.scalar_draws[id(args[0])] is args[0]
                and isinstance(args[1], (int, float))):
            return self._decide(func, args[0], args[1])
        if func in _DROPOUT:
            return _DROPOUT[func](self.stream, *args, **kwargs)
        if func in _OTHER:
            _OTHER[func](self.stream, *args, **kwargs)
        elif func is F.scaled_dot_product_attention:
            # Its math form, so that autograd derives the backward from plain
            # ops and dropout_p draws from this stream (nova.frontend.attention_math).
            return sdpa_math(*args, **kwargs,
                             dropout=lambda w, p: attention_dropout(self.stream, w, p))
        return func(*args, **kwargs)


_ACTIVE: list[RandomStream] = []


def current_stream() -> RandomStream | None:
    """The stream of the innermost :func:`random_stream` block, if any."""
    return _ACTIVE[-1] if _ACTIVE else None


@contextlib.contextmanager
def random_stream(stream: RandomStream | None) -> Iterator[RandomStream | None]:
    """Within the block, dropouts draw their masks from ``stream`` (no-op for None)."""
    if stream is None:
        yield None
        return
    _ACTIVE.append(stream)
    try:
        with _DropoutMode(stream):
            yield stream
    finally:
        _ACTIVE.pop()
