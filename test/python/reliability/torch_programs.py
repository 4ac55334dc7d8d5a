"""Random small PyTorch programs for the whole-pipeline fuzzer, and how a case is judged.

A program is Python source (a module class plus the example inputs it is called with),
so that a failing case can be printed as it is and run by hand. It is built from
elementwise ops, matmuls, reductions, reshapes and transposes, softmax / layer_norm,
indexing with integer tensors, comparisons and ``where``, in float32, bfloat16 and
int64, on small shapes; a few ops Nova is known not to take (fft, erfinv...)
are drawn now and then, to check that they are refused clearly.

``generate(rng)`` takes any ``random.Random``-like object (hypothesis' ``randoms()``
in the suite, a seeded ``random.Random`` in ``scripts/fuzz_torch_programs.py``).
``run_case(source)`` compiles and runs one program and returns its outcome:

  passed     Nova's outputs match eager
  rejected   compiling (or running) raised one of Nova's own errors: fine, if clear
  wrong      Nova ran and its numbers, dtypes or shapes differ from eager
  crash      a Nova tool died of a signal (an assertion, a segfault)
  raw        an exception that is not a Nova error
  invalid    eager itself fails on the program (a generator bug; not counted)

Floats are compared with a float64 evaluation of the same program as the reference:
Nova's error may be at most ``rtol * |ref| + atol`` plus four times eager's largest
error on that output (float32: 1e-4 / 1e-5; bfloat16: 1.6e-2 / 1e-2), NaN and
infinities where eager has them. Eager's largest error, not its error on the same
element: Nova rounds low-precision intermediates at other points than eager (a fused
elementwise chain rounds once), and an ill-conditioned op downstream (layer_norm over
nearly equal values) amplifies either's one-ulp differences on different elements --
seed 3, case 1080: Nova's bf16 intermediate was closer to float64 than eager's
(1.6e-3 against 2.5e-3) and its output's largest error smaller (0.079 against 0.089),
but on another element. Integers and bools must equal eager's exactly.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SIZES = (1, 2, 3, 4, 5, 7, 8, 16)
BIG = (33, 129, 130, 200)
TOLERANCE = {"float32": (1e-4, 1e-5), "bfloat16": (1.6e-2, 1e-2)}


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    dtype: str  # "float" (the program's float type), "f32", "i64" or "bool"


class Builder:
    """Grows one program: inputs, parameters and forward-body lines."""

    def __init__(self, rng: Any, float_dtype: str) -> None:
        self.rng = rng
        self.float_dtype = float_dtype  # "float32" or "bfloat16"
        self.inputs: list[tuple[str, tuple[int, ...], str, int]] = []  # name, shape, kind, bound
        self.params: list[tuple[str, tuple[int, ...]]] = []
        self.lines: list[str] = []
        self.values: list[Value] = []
        self.counter = itertools.count()

    # Helpers --------------------------------------------------------------------------
    def pick(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def shape(self, rank: int | None = None) -> tuple[int, ...]:
        rank = self.rng.randint(1, 3) if rank is None else rank
        dims = [self.pick(SIZES[:6] if rank > 2 else SIZES) for _ in range(rank)]
        if dims and rank <= 2 and self.chance(0.15):  # past a tile edge (128 lanes / rows)
            dims[self.rng.randrange(rank)] = self.pick(BIG)
        return tuple(dims)

    def new(self, expr: str, shape: tuple[int, ...], dtype: str) -> Value:
        v = Value(f"v{next(self.counter)}", tuple(shape), dtype)
        self.lines.append(f"{v.name} = {expr}")
        self.values.append(v)
        return v

    def float_input(self, shape: tuple[int, ...]) -> Value:
        name = f"x{len(self.inputs)}"
        self.inputs.append((name, shape, "float", 0))
        v = Value(name, shape, "float")
        self.values.append(v)
        return v

    def index_input(self, shape: tuple[int, ...], bound: int) -> Value:
        name = f"x{len(self.inputs)}"
        self.inputs.append((name, shape, "index", bound))
        v = Value(name, shape, "i64")
        self.values.append(v)
        return v

    def param(self, shape: tuple[int, ...]) -> str:
        name = f"p{len(self.params)}"
        self.params.append((name, shape))
        return f"self.{name}"

    def floats(self) -> list[Value]:
        return [v for v in self.values if v.dtype in ("float", "f32")]

    # Ops ------------------------------------------------------------------------------
    UNARY = ("torch.relu({})", "torch.tanh({})", "torch.sigmoid({})", "F.gelu({})", "F.silu({})",
             "torch.exp({}.clamp(-8, 8))", "torch.sin({})", "torch.cos({})", "(-{})", "torch.abs({})",
             "torch.sqrt(torch.abs({}))", "torch.rsqrt(torch.abs({}) + 1)",
             "torch.log(torch.abs({}) + 1)", "({0} * {0})", "(1 / (torch.abs({}) + 1))",
             "torch.erf({})", "{}.clamp(-0.5, 0.5)", "F.leaky_relu({}, 0.1)", "F.softplus({})")
    BINARY = ("({} + {})", "({} - {})", "({} * {})", "({} / (torch.abs({}) + 1))",
              "torch.maximum({}, {})", "torch.minimum({}, {})")
    UNSUPPORTED = ("torch.cumsum({}, dim=-1)", "torch.sort({}, dim=-1).values", "torch.erfinv(torch.tanh({}) * 0.5)",
                   "torch.fft.fft({}).real", "torch.topk({}, 1, dim=-1).values")

    def unary(self, v: Value) -> Value:
        return self.new(self.pick(self.UNARY).format(v.name), v.shape, v.dtype)

    def broadcast_partner(self, v: Value) -> str:
        """Another operand broadcastable with ``v``: an earlier value of the same
        shape, a parameter of a suffix shape, a scalar or a fresh input."""
        same = [w for w in self.floats() if w.shape == v.shape and w.dtype == v.dtype and w is not v]
        r = self.rng.random()
        if same and r < 0.35:
            return self.pick(same).name
        if r < 0.55:
            return repr(round(self.rng.uniform(-2, 2), 2))
        if r < 0.8 and v.shape:
            k = self.rng.randint(0, len(v.shape))
            suffix = v.shape[k:]
            if suffix and self.chance(0.3):  # a size-1 dimension broadcast too
                suffix = (1,) + suffix[1:]
            return self.param(suffix)
        return self.float_input(v.shape).name

    def binary(self, v: Value) -> Value:
        form, partner = self.pick(self.BINARY), self.broadcast_partner(v)
        if not partner[0].isalpha():  # a number, not a tensor
            if form.startswith("torch.m"):
                form = "({} + {})"
            elif "/" in form:
                form, partner = "({} / {})", repr(abs(float(partner)) + 1)
        return self.new(form.format(v.name, partner), v.shape, v.dtype)

    def matmul(self, v: Value) -> Value:
        if not v.shape:
            return self.unary(v)
        k, n = v.shape[-1], self.pick(SIZES)
        if len(v.shape) == 3 and self.chance(0.4):  # batched with another value of the batch
            other = self.float_input((v.shape[0], k, n)) if self.chance(0.5) else None
            rhs = other.name if other else f"{v.name}.transpose(-1, -2)"
            n = n if other else v.shape[1]
            return self.new(f"torch.matmul({v.name}, {rhs})", (v.shape[0], v.shape[1], n), v.dtype)
        if len(v.shape) >= 2 and self.chance(0.3):
            return self.new(f"F.linear({v.name}, {self.param((n, k))}, {self.param((n,))})",
                            v.shape[:-1] + (n,), v.dtype)
        return self.new(f"({v.name} @ {self.param((k, n))})", v.shape[:-1] + (n,), v.dtype)

    def reduce(self, v: Value) -> Value:
        if not v.shape:
            return self.unary(v)
        dim = self.rng.randrange(len(v.shape))
        keep = self.chance(0.4)
        shape = tuple(1 if i == dim else s for i, s in enumerate(v.shape)) if keep else \
            v.shape[:dim] + v.shape[dim + 1:]
        r = self.rng.random()
        if r < 0.1:
            return self.new(f"{v.name}.sum()", (), v.dtype)
        if r < 0.2:
            return self.new(f"torch.argmax({v.name}, dim={dim}, keepdim={keep})", shape, "i64")
        fn = self.pick(("sum", "mean", "amax", "amin", "logsumexp", "var"))
        extra = ", unbiased=False" if fn == "var" else ""
        return self.new(f"{v.name}.{fn}(dim={dim}, keepdim={keep}{extra})", shape, v.dtype)

    def reshape(self, v: Value) -> Value:
        if not v.shape:
            return self.new(f"{v.name}.reshape(1)", (1,), v.dtype)
        r = self.rng.random()
        if r < 0.3 and len(v.shape) >= 2:
            a, b = self.rng.sample(range(len(v.shape)), 2)
            shape = list(v.shape)
            shape[a], shape[b] = shape[b], shape[a]
            return self.new(f"{v.name}.transpose({a}, {b})", tuple(shape), v.dtype)
        if r < 0.45 and len(v.shape) >= 2:
            perm = list(range(len(v.shape)))
            self.rng.shuffle(perm)
            return self.new(f"{v.name}.permute({', '.join(map(str, perm))})",
                            tuple(v.shape[p] for p in perm), v.dtype)
        if r < 0.6 and len(v.shape) < 4:
            d = self.rng.randint(0, len(v.shape))
            return self.new(f"{v.name}.unsqueeze({d})", v.shape[:d] + (1,) + v.shape[d:], v.dtype)
        if r < 0.7 and v.shape[0] > 1:
            stop = self.rng.randint(1, v.shape[0] - 1)  # both halves non-empty
            if self.chance(0.5):
                return self.new(f"{v.name}[:{stop}]", (stop,) + v.shape[1:], v.dtype)
            return self.new(f"{v.name}[{stop}:]", (v.shape[0] - stop,) + v.shape[1:], v.dtype)
        if r < 0.8:
            other = self.float_input(v.shape) if v.dtype == "float" else v
            dim = self.rng.randrange(len(v.shape))
            shape = tuple(2 * s if i == dim else s for i, s in enumerate(v.shape))
            return self.new(f"torch.cat([{v.name}, {other.name}], dim={dim})", shape, v.dtype)
        numel = math.prod(v.shape)
        factors = [f for f in range(1, numel + 1) if numel % f == 0]
        a = self.pick(factors)
        shape = (a, numel // a) if self.chance(0.7) else (numel,)
        return self.new(f"{v.name}.reshape({', '.join(map(str, shape))})", shape, v.dtype)

    def normalize(self, v: Value) -> Value:
        if not v.shape:
            return self.unary(v)
        dim = self.rng.randrange(len(v.shape))
        r = self.rng.random()
        if r < 0.35:
            return self.new(f"torch.softmax({v.name}, dim={dim})", v.shape, v.dtype)
        if r < 0.5:
            return self.new(f"torch.log_softmax({v.name}, dim={dim})", v.shape, v.dtype)
        n = v.shape[-1]
        if r < 0.85:
            affine = f", {self.param((n,))}, {self.param((n,))}" if self.chance(0.6) else ""
            return self.new(f"F.layer_norm({v.name}, ({n},){affine})", v.shape, v.dtype)
        return self.new(f"({v.name} * torch.rsqrt(({v.name} * {v.name}).mean(-1, keepdim=True) + 1e-5))",
                        v.shape, v.dtype)

    def index(self, v: Value) -> Value:
        if not v.shape:
            return self.unary(v)
        r = self.rng.random()
        if r < 0.4:  # rows by an index tensor
            idx = self.index_input(self.shape(self.rng.randint(1, 2)), v.shape[0])
            return self.new(f"{v.name}[{idx.name}]", idx.shape + v.shape[1:], v.dtype)
        if r < 0.6:
            dim = self.rng.randrange(len(v.shape))
            idx = self.index_input((self.pick(SIZES[:5]),), v.shape[dim])
            shape = tuple(idx.shape[0] if i == dim else s for i, s in enumerate(v.shape))
            return self.new(f"torch.index_select({v.name}, {dim}, {idx.name})", shape, v.dtype)
        if r < 0.8:
            dim = self.rng.randrange(len(v.shape))
            shape = tuple(self.rng.randint(1, s) if i != dim else self.pick(SIZES[:5])
                          for i, s in enumerate(v.shape))
            idx = self.index_input(shape, v.shape[dim])
            return self.new(f"torch.gather({v.name}, {dim}, {idx.name})", shape, v.dtype)
        n = self.pick(SIZES)
        idx = self.index_input(self.shape(self.rng.randint(1, 2)), n)
        d = self.pick(SIZES)
        return self.new(f"F.embedding({idx.name}, {self.param((n, d))})", idx.shape + (d,), "float")

    def attention(self, v: Value) -> Value:
        """softmax(q k^T / sqrt(d) + causal mask) v, with q, k, v projections of ``v``."""
        if len(v.shape) < 2:
            return self.unary(v)
        n, d = v.shape[-2], v.shape[-1]
        h = self.pick(SIZES[1:6])
        q, k, w = (self.new(f"({v.name} @ {self.param((d, h))})", v.shape[:-1] + (h,), v.dtype)
                   for _ in range(3))
        scores = self.new(f"({q.name} @ {k.name}.transpose(-1, -2)) * {1 / math.sqrt(h):.6f}",
                          v.shape[:-1] + (n,), v.dtype)
        if self.chance(0.6):
            scores = self.new(f"{scores.name}.masked_fill(torch.ones({n}, {n}, dtype=torch.bool)"
                              f".triu(1), float('-inf'))", scores.shape, v.dtype)
        probs = self.new(f"torch.softmax({scores.name}, dim=-1)", scores.shape, v.dtype)
        return self.new(f"({probs.name} @ {w.name})", w.shape, v.dtype)

    def compare(self, v: Value) -> Value:
        mask = self.new(f"({v.name} > {round(self.rng.uniform(-1, 1), 2)})", v.shape, "bool")
        r = self.rng.random()
        if r < 0.5:
            return self.new(f"torch.where({mask.name}, {v.name}, {self.broadcast_partner(v)})",
                            v.shape, v.dtype)
        if r < 0.7:
            return self.new(f"{v.name}.masked_fill({mask.name}, -1.5)", v.shape, v.dtype)
        if r < 0.85:
            return self.new(f"({mask.name}.to({v.name}.dtype) * {v.name})", v.shape, v.dtype)
        return mask

    def integer(self, v: Value) -> Value:
        """An integer op on an index-like value (``v`` is i64)."""
        form = self.pick(("({} + 1)", "({} * 3)", "({} - 2)", "torch.maximum({0}, {0}.flip(-1))"
                          if v.shape else "({} + 1)", "({} % 3)", "({} // 2)"))
        return self.new(form.format(v.name), v.shape, "i64")

    # The program ------------------------------------------------------------------------
    def step(self) -> None:
        v = self.values[-1] if self.chance(0.6) else self.pick(self.values[-4:])
        if v.dtype == "i64":
            if self.chance(0.5):
                self.integer(v)
            else:
                self.new(f"{v.name}.to(x0.dtype)", v.shape, "float")
            return
        if v.dtype == "bool":
            self.new(f"torch.where({v.name}, 1.0, -1.0).to(x0.dtype)", v.shape, "float")
            return
        kinds = (self.unary, self.binary, self.matmul, self.reduce, self.reshape, self.normalize,
                 self.index, self.compare, self.attention)
        weights = (3, 3, 2, 2, 2, 1.5, 1.2, 1, 0.4)
        fn = self.rng.choices(kinds, weights)[0]
        if self.chance(0.02):
            self.new(self.pick(self.UNSUPPORTED).format(v.name), v.shape, v.dtype)
            return
        fn(v)

    def source(self, seed: int) -> str:
        sig = ", ".join(name for name, *_ in self.inputs)
        outs = [self.values[-1]]
        body_text = "\n".join(self.lines)
        unused = [v for v in self.values[:-1] if v.name.startswith("v") and not
                  re.search(rf"\b{v.name}\b", body_text.split(f"{v.name} = ", 1)[-1])]
        if unused and self.chance(0.5):
            outs.append(self.pick(unused))
        ret = outs[0].name if len(outs) == 1 else f"({', '.join(v.name for v in outs)})"
        init = [f"        self.{n} = nn.Parameter(0.5 * torch.randn({_dims(s)}, generator=g)"
                f".to(torch.{self.float_dtype}))" for n, s in self.params]
        make = []
        for name, shape, kind, bound in self.inputs:
            dims = _dims(shape)
            if kind == "index":
                make.append(f"torch.randint(0, {bound}, {dims}, generator=g)")
            else:
                make.append(f"torch.randn({dims}, generator=g).to(torch.{self.float_dtype})")
        body = "\n".join(f"        {line}" for line in self.lines)
        return f'''import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed({seed})
{chr(10).join(init) if init else "        pass"}

    def forward(self, {sig}):
{body}
        return {ret}


def example_inputs():
    g = torch.Generator().manual_seed({seed + 1})
    return ({", ".join(make)}{"," if len(make) == 1 else ""})
'''


def _dims(shape: tuple[int, ...]) -> str:
    """A tuple literal: ``()``, ``(3,)``, ``(2, 4)``."""
    return f"({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def generate(rng: Any, seed: int = 0) -> str:
    """The source of one random program (``seed`` seeds its weights and inputs)."""
    b = Builder(rng, "bfloat16" if rng.random() < 0.2 else "float32")
    b.float_input(b.shape(rng.choice((0, 1, 2, 2, 3, 3)) if rng.random() < 0.95 else 0))
    if rng.random() < 0.3:
        b.float_input(b.values[0].shape)
    for _ in range(rng.randint(1, 8)):
        b.step()
    return b.source(seed)


# Running a case ------------------------------------------------------------------------------
@dataclass
class Outcome:
    kind: str  # passed, rejected, wrong, crash, raw, invalid
    detail: str = ""


def load_source(source: str, path: Path):
    """The module of ``source``, written to ``path`` (so that tracebacks and
    Nova's diagnostics can show its lines)."""
    path.write_text(source)
    name = f"nova_fuzz_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _leaves(value: Any) -> list:
    import torch
    from torch.utils import _pytree as pytree

    return [v for v in pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


def compare(got: Any, eager: Any, ref: Any) -> str:
    """'' when ``got`` matches ``eager`` (floats judged against the float64 ``ref``),
    else what differs."""
    import torch

    g, e, r = _leaves(got), _leaves(eager), _leaves(ref)
    if len(g) != len(e):
        return f"{len(g)} outputs, eager has {len(e)}"
    for i, (a, b, c) in enumerate(zip(g, e, r)):
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"output {i}: {a.dtype} {list(a.shape)}, eager {b.dtype} {list(b.shape)}"
        if not b.dtype.is_floating_point:
            if not torch.equal(a, b):
                bad = (a != b).nonzero()[0].tolist()
                return f"output {i}: {a[tuple(bad)].item()} at {bad}, eager {b[tuple(bad)].item()}"
            continue
        a64, b64, c64 = a.double(), b.double(), c.double()
        if not torch.equal(torch.isnan(a64), torch.isnan(b64)):
            return f"output {i}: NaN where eager has none (or the reverse)"
        inf = torch.isinf(b64)
        if not torch.equal(a64[inf], b64[inf]) or bool(torch.isinf(a64[~inf]).any()):
            return f"output {i}: infinities differ from eager's"
        fin = torch.isfinite(b64) & torch.isfinite(c64)
        rtol, atol = TOLERANCE.get(str(b.dtype).removeprefix("torch."), TOLERANCE["float32"])
        err, own = (a64 - c64).abs()[fin], (b64 - c64).abs()[fin]
        allowed = atol + rtol * c64.abs()[fin] + 4 * (own.max() if own.numel() else 0.0)
        if bool((err > allowed).any()):
            k = int(torch.argmax(err - allowed))
            return (f"output {i}: {a64[fin][k].item():.7g} vs eager {b64[fin][k].item():.7g} "
                    f"(float64 {c64[fin][k].item():.7g}; max |error| {err.max().item():.3g}, "
                    f"eager's {own.max().item():.3g})")
    return ""


def _clone(values: tuple) -> tuple:
    return tuple(v.clone() for v in values)


def _as_double(model, inputs: tuple):
    import copy

    import torch

    double = copy.deepcopy(model).double()
    return double, tuple(v.double() if v.is_floating_point() else v for v in inputs)


def run_case(source: str, path: Path) -> Outcome:
    """Compiles and runs one program (see the module docstring for the outcomes)."""
    import torch

    import nova
    from nova.compiler.errors import NovaCompileError, NovaError
    from nova.runtime.errors import NovaRuntimeError
    from nova.sim.errors import SimulationError

    try:
        module = load_source(source, path)
        model, inputs = module.Model().eval(), module.example_inputs()
        with torch.no_grad():
            eager = model(*_clone(inputs))
            double, inputs64 = _as_double(model, inputs)
            ref = double(*inputs64)
    except Exception as error:  # the generator made a program eager rejects
        return Outcome("invalid", f"{type(error).__name__}: {error}".splitlines()[0])
    stage = "compile"
    try:
        program = nova.compile(model, *_clone(inputs))
        stage = "run"
        got = program(*_clone(inputs))
    except NovaCompileError as error:
        if error.returncode < 0:
            return Outcome("crash", f"{error.command[0]} died of signal {-error.returncode}: "
                                    + _lead(str(error)))
        return Outcome("rejected", f"{stage}: {_lead(str(error))}")
    except (NovaError, NovaRuntimeError, SimulationError) as error:
        return Outcome("rejected", f"{stage}: {type(error).__name__}: {_lead(str(error))}")
    except Exception as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        return Outcome("raw", f"{stage}: {type(error).__name__}: {_lead(str(error))} "
                              f"({Path(where.filename).name}:{where.lineno})")
    diff = compare(got, eager, ref)
    return Outcome("wrong", diff) if diff else Outcome("passed")


def _lead(message: str) -> str:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[0][:300] if lines else ""
