"""Mutated IR through ``nova-opt``: the fuzzer of test/python/compiler/test_fuzz_ir.py
and scripts/fuzz_ir.py.

The corpus is the lit suite: every ``nova-opt`` RUN line of test/**/*.mlir gives an
input (one ``// -----`` chunk of the file it reads) and the pass options to run on
it. A case applies one seeded mutation to the input (an integer literal or a shape
dimension replaced by a boundary value, an element type swapped, a line deleted,
duplicated or truncated, two SSA uses swapped) and runs the RUN line's passes on
it. Every outcome must be one of

* ``accepted``  exit 0;
* ``rejected``  exit 1 with an ``error:`` diagnostic (a clear error).

Lit tests that call upstream's ``shard-partition`` by name (to test Nova's
sharding models) run through ``--nova-partition`` here, Nova's entry to it.

Anything else is a finding: ``crash`` (an assertion, a signal, a stack dump),
``silent`` (a failure without a diagnostic), ``hang`` (over the time limit).
"""

from __future__ import annotations

import random
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from nova.compiler.driver import tool_process_options

OK = ("accepted", "rejected")

#: Values an integer literal or a dimension is replaced with: the boundaries
#: where parsers, verifiers and size arithmetic break.
BOUNDARY = (0, 1, -1, 2, 3, 5, 7, 127, 128, 129, 4096, 65536, 2**31 - 1, 2**31, 2**32,
            2**62, 2**63 - 1, -(2**63), 10**20)
ELEMENT_TYPES = ("f32", "f16", "bf16", "f64", "i1", "i8", "i32", "i64", "index")

_INT = re.compile(r"(?<![\w.%#@^])-?\d+(?![\w.])")
_SHAPED = re.compile(r"\b(tensor|memref|vector)<([^<>]*)>")
_ELT = re.compile(r"\b(f16|bf16|f32|f64|i1|i8|i32|i64)\b")
_USE = re.compile(r"%[\w]+")


@dataclass(frozen=True)
class Seed:
    """One fuzzing input: IR text and the nova-opt arguments of its RUN line."""
    source: str      # file:chunk, for reports
    text: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    kind: str        # accepted | rejected | crash | silent | hang
    mutation: str
    seed: str
    returncode: int | None
    stderr_tail: str


def _run_lines(path: Path) -> list[str]:
    out, cur = [], None
    for line in path.read_text().splitlines():
        m = re.match(r"\s*//\s*RUN:\s?(.*)$", line)
        if not m:
            cur = None
            continue
        body = m.group(1)
        if cur is not None:
            out[-1] = out[-1][:-1] + " " + body
        else:
            out.append(body)
        cur = out[-1] if body.endswith("\\") else None
    return out


def _nova_opt_args(run: str) -> list[str] | None:
    """The options of the first ``nova-opt`` of a RUN line (without the input)."""
    first = re.split(r"\||&&", run)[0].strip()
    try:
        words = shlex.split(first)
    except ValueError:
        return None
    if not words or words[0] != "nova-opt":
        return None
    args = []
    for w in words[1:]:
        if w.startswith("%") or w.endswith(".mlir") or w in ("-verify-diagnostics", "--verify-diagnostics",
                                                            "-split-input-file", "--split-input-file"):
            continue
        if w.startswith("-o") or "%t" in w or ">" in w:
            continue
        args.append(w)
    return args


def _input_path(run: str, test: Path) -> Path:
    words = re.split(r"\||&&", run)[0].split()
    for w in words[1:]:
        if w.startswith("%S/"):
            return (test.parent / w[3:]).resolve()
    return test


def _chunks(text: str) -> list[str]:
    """The ``// -----`` chunks of a file with comment lines dropped (so that
    expected-error annotations do not matter)."""
    chunks = re.split(r"^// -----\s*$", text, flags=re.M)
    out = []
    for c in chunks:
        body = "\n".join(l for l in c.splitlines() if not l.lstrip().startswith("//"))
        if body.strip():
            out.append(body + "\n")
    return out


def corpus(test_root: Path) -> list[Seed]:
    """Every (input chunk, nova-opt options) pair of the lit suite under ``test_root``."""
    seeds: list[Seed] = []
    test_root = test_root.resolve()
    for test in sorted(test_root.rglob("*.mlir")):
        if "Inputs" in test.parts:
            continue
        for run in _run_lines(test):
            args = _nova_opt_args(run.replace("%S", str(test.parent)))
            if args is None:
                continue
            if any("shard-partition" in a for a in args):
                # Upstream's partitioner asserts on what it assumes (one use
                # per annotated argument, splits that divide); Nova reaches it
                # through nova-partition, which verifies those first.
                args = ["--nova-partition"]
            src = _input_path(run, test)
            if not src.exists():
                continue
            for i, chunk in enumerate(_chunks(src.read_text())):
                seeds.append(Seed(f"{src.relative_to(test_root)}:{i}", chunk, tuple(args)))
    # Several RUN lines repeat one input with the same options (FileCheck prefixes).
    unique = {(s.text, s.args): s for s in seeds}
    return list(unique.values())


# Mutations -------------------------------------------------------------------------
def _body_lines(lines: list[str]) -> list[int]:
    return [i for i, l in enumerate(lines) if l.strip() and not l.strip().startswith(("func.func", "}", "module"))]


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    """One mutation of ``text``: (mutated text, what was done)."""
    kinds = ["int", "int", "dim", "dim", "type", "delete", "duplicate", "swap", "truncate"]
    for _ in range(8):
        kind = rng.choice(kinds)
        if kind == "int":
            ms = list(_INT.finditer(text))
            if ms:
                m = rng.choice(ms)
                v = rng.choice(BOUNDARY)
                return text[:m.start()] + str(v) + text[m.end():], f"int {m.group()}->{v} at {m.start()}"
        elif kind == "dim":
            ms = [m for m in _SHAPED.finditer(text) if "x" in m.group(2)]
            if ms:
                m = rng.choice(ms)
                dims = m.group(2).split("x")
                i = rng.randrange(len(dims) - 1) if len(dims) > 1 else 0
                v = rng.choice(("0", "1", "?", "3", "129", str(2**31), str(2**40)))
                dims[i] = v
                new = f"{m.group(1)}<{'x'.join(dims)}>"
                return text[:m.start()] + new + text[m.end():], f"dim {m.group()}->{new}"
        elif kind == "type":
            ms = list(_ELT.finditer(text))
            if ms:
                m = rng.choice(ms)
                t = rng.choice(ELEMENT_TYPES)
                return text[:m.start()] + t + text[m.end():], f"type {m.group()}->{t} at {m.start()}"
        elif kind in ("delete", "duplicate"):
            lines = text.splitlines()
            body = _body_lines(lines)
            if body:
                i = rng.choice(body)
                what = f"{kind} line {i}: {lines[i].strip()[:60]}"
                if kind == "delete":
                    del lines[i]
                else:
                    lines.insert(i, lines[i])
                return "\n".join(lines) + "\n", what
        elif kind == "swap":
            ms = [m for m in _USE.finditer(text)]
            names = sorted({m.group() for m in ms})
            if len(names) >= 2:
                a, b = rng.sample(names, 2)
                uses = [m for m in ms if m.group() == a and text[m.end():m.end() + 3] != " = "]
                if uses:
                    m = rng.choice(uses)
                    return text[:m.start()] + b + text[m.end():], f"swap use {a}->{b} at {m.start()}"
        elif kind == "truncate":
            cut = rng.randrange(1, max(2, len(text)))
            return text[:cut], f"truncate at {cut}"
    return text, "none"


# Running ---------------------------------------------------------------------------
def classify(returncode: int | None, stderr: str) -> str:
    if returncode is None:
        return "hang"
    if returncode < 0 or returncode >= 128 or "Assertion" in stderr or "Stack dump" in stderr \
            or "PLEASE submit a bug report" in stderr:
        return "crash"
    if returncode == 0:
        return "accepted"
    if "error:" in stderr:
        return "rejected"
    return "silent"


def run_ir(nova_opt: str | Path, text: str, args: tuple[str, ...] | list[str],
           timeout: float = 20.0) -> tuple[str, int | None, str]:
    """Runs ``nova-opt args`` on ``text``: (outcome kind, exit code, stderr)."""
    try:
        p = subprocess.run([str(nova_opt), *args, "-", "-o", "/dev/null"], input=text,
                           capture_output=True, text=True, timeout=timeout,
                           **tool_process_options())
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = None
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    return classify(rc, err), rc, err


def run_case(nova_opt: str | Path, seed: Seed, rng: random.Random, timeout: float = 20.0) -> Outcome:
    """One fuzzing case: ``seed`` mutated once with ``rng``, through nova-opt."""
    text, what = mutate(seed.text, rng)
    kind, rc, err = run_ir(nova_opt, text, seed.args, timeout)
    return Outcome(kind, what, seed.source, rc, err[-2000:])
