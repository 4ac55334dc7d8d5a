"""The OpInfos of the sweep, the dtypes each is run in, and their tolerances."""

from __future__ import annotations

import functools

import torch

# Dtypes of the sweep, in report order; an op runs in those its CPU dtypes include.
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16,
          "int64": torch.int64, "bool": torch.bool, "complex64": torch.complex64,
          "uint8": torch.uint8, "int16": torch.int16}

# Ops excluded from the sweep: eager itself gives no reference to compare with.
EXCLUDED = {
    # Random: every call draws new numbers (and Nova's RNG is not torch's).
    "bernoulli": "random",
    "cauchy": "random",
    "exponential": "random",
    "geometric": "random",
    "log_normal": "random",
    "multinomial": "random",
    "normal": "random",
    "normal.number_mean": "random",
    "normal.in_place": "random",
    "uniform": "random",
    "rand_like": "random",
    "randint": "random",
    "randint_like": "random",
    "randn": "random",
    "randn_like": "random",
    "nn.functional.dropout": "random",
    "nn.functional.dropout2d": "random",
    "nn.functional.dropout3d": "random",
    "nn.functional.alpha_dropout": "random",
    "nn.functional.feature_alpha_dropout.with_train": "random",
    "nn.functional.feature_alpha_dropout.without_train": "random",
    "nn.functional.rrelu": "random (training mode samples a slope)",
    "nn.functional.gumbel_softmax": "random",
    # Uninitialized memory: the values are whatever was there.
    "empty": "uninitialized",
    "empty_like": "uninitialized",
    "empty_strided": "uninitialized",
    "empty_permuted": "uninitialized",
    "new_empty": "uninitialized",
    "new_empty_strided": "uninitialized",
}

# Tolerances when the OpInfo sets none for the dtype: float32 the issue's
# (looser than torch's 1.3e-6 because Nova's transcendentals are polynomial);
# the others torch.testing.assert_close's defaults.
DEFAULT_TOLERANCE = {
    torch.float32: (1e-4, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float16: (1e-3, 1e-5),
    torch.float64: (1e-4, 1e-5),  # f64 results are computed in f32 at best
    torch.complex64: (1e-4, 1e-5),  # pairs of float32 parts
}


def op_key(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


@functools.cache
def all_ops():
    from torch.testing._internal.common_methods_invocations import op_db

    return tuple(op for op in op_db
                 if any(d in op.supported_dtypes("cpu") for d in DTYPES.values()))


def find_op(name: str):
    """The OpInfo called ``name`` (``op_key``), or KeyError."""
    for op in all_ops():
        if op_key(op) == name:
            return op
    raise KeyError(name)


def op_dtypes(op, wanted) -> list[str]:
    """The names in ``wanted`` of the dtypes the op supports on CPU."""
    supported = op.supported_dtypes("cpu")
    return [name for name in wanted if DTYPES[name] in supported]


def tolerance(op, dtype: torch.dtype) -> tuple[float, float] | None:
    """(rtol, atol) for a floating ``dtype``: the loosest of the OpInfo's own
    ``toleranceOverride`` decorators that apply on CPU (any test) and name the
    dtype, but never tighter than ``DEFAULT_TOLERANCE`` (the overrides loosen
    torch's own test defaults, which are tighter than ours). None for exact dtypes
    (integers and bool; complex is compared as floats)."""
    from torch.testing._internal.common_device_type import toleranceOverride

    if not (dtype.is_floating_point or dtype.is_complex):
        return None
    rtol, atol = DEFAULT_TOLERANCE.get(dtype, DEFAULT_TOLERANCE[torch.float32])
    for info in getattr(op, "decorators", ()):
        if getattr(info, "device_type", None) not in (None, "cpu"):
            continue
        for decorator in getattr(info, "decorators", ()):
            if isinstance(decorator, toleranceOverride) and dtype in decorator.d:
                override = decorator.d[dtype]
                rtol, atol = max(rtol, override.rtol), max(atol, override.atol)
    return rtol, atol


def select(ops, names: str | None = None, every: int = 1, shard: str | None = None,
           limit: int | None = None):
    """``--ops`` (``op_key`` or bare name), ``--every``, ``--shard I/N``, ``--limit``."""
    if names:
        wanted = set(names.split(","))
        ops = [op for op in ops if op_key(op) in wanted or op.name in wanted]
    ops = ops[::every]
    if shard:
        i, n = (int(x) for x in shard.split("/"))
        ops = ops[i::n]
    if limit:
        ops = ops[:limit]
    return ops
