"""Fitting a target's timing constants to measured times (``nova calibrate``).

A calibration table is a CSV file (format in ``docs/validation.md``, "Calibration
table"): one measured operation per row, ``kind,shape,dtype,measured_ns`` and
optionally ``chips,algorithm,note``; lines starting with ``#`` are comments.
:func:`read_table` parses and checks it; :func:`fit` moves the target's calibratable
constants (:func:`parameters`, taken from :mod:`nova.binary.target_schema`) to minimise
the squared log-time residuals ``ln(simulated / measured)`` of every row, each row
simulated by :mod:`nova.sim.microbench`.

The fit is Levenberg-Marquardt with finite-difference Jacobians. Positive constants
are fitted in log space (they stay positive; steps are relative), constants whose
range reaches below zero in linear space; every value is clamped to its schema range.
Before fitting, the columns of the Jacobian at the start decide what the table
constrains: a constant no row depends on is *unconstrained*; a constant whose column
only repeats a combination of those already chosen (e.g. the clock, when every row's
time is a cycle count over it) is *degenerate* and held; integer constants whose unit
step is coarser than 1 % are *held* (a least-squares step cannot move them). Only the
rest move.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from nova.binary import target_schema as schema
from .errors import SimulationError, TargetError
from .microbench import Bench, CalibrationError, build, parse_shape, simulate
from .program import Program
from .target import Target

REQUIRED_COLUMNS = ("kind", "shape", "dtype", "measured_ns")
OPTIONAL_COLUMNS = ("chips", "algorithm", "note")
#: Units of the top-level fields that are timing (the rest are sizes and counts).
_TIMING_UNITS = ("MHz", "GB/s", "ns")


@dataclass(frozen=True)
class Row:
    """One measured operation: where it came from, what it is, how long it took."""

    line: int
    bench: Bench
    measured_ns: float
    note: str = ""
    where: str = ""  # "FILE:LINE" for messages ("" : "line LINE")

    @property
    def at(self) -> str:
        return self.where or f"line {self.line}"


@dataclass(frozen=True)
class Parameter:
    """One calibratable constant: ``name`` is a top-level field (``hbm_gbps``) or
    ``timing.KEY``."""

    name: str
    spec: schema.Key

    @property
    def key(self) -> str:
        return self.name.split(".", 1)[-1]

    @property
    def in_timing(self) -> bool:
        return self.name.startswith("timing.")

    def get(self, target: Target) -> float:
        return float(target.timing[self.key] if self.in_timing else getattr(target, self.name))

    def log_space(self, value: float) -> bool:
        return value > 0 and (self.spec.lo is None or self.spec.lo >= 0)

    def clamp(self, value: float) -> float:
        lo, hi = self.spec.lo, self.spec.hi
        if self.spec.type is int:
            value = float(round(value))
        if lo is not None:
            value = max(value, lo)
        if hi is not None:
            value = min(value, hi)
        return value


def parameters(target: Target | None = None) -> list[Parameter]:
    """The calibratable constants, from the schema: every numeric ``timing`` key and
    every top-level field measured in MHz, GB/s or ns (a key with a ``fittable``
    attribute in the schema follows it instead). Timing keys come first: when two
    constants are degenerate the earlier one is fitted and the later held."""
    out = []
    for prefix, table in (("timing.", schema.TIMING), ("", schema.FIELDS)):
        for k, spec in table.items():
            fittable = getattr(spec, "fittable", None)
            if fittable is None:
                fittable = spec.type in (int, float) and (prefix == "timing." or spec.unit in _TIMING_UNITS)
            if fittable:
                out.append(Parameter(prefix + k, spec))
    return out


def apply(target: Target, values: dict[str, float]) -> Target:
    """``target`` with the named constants set (ints rounded, ranges clamped)."""
    by_name = {p.name: p for p in parameters()}
    top: dict[str, Any] = {}
    timing: dict[str, Any] = {}
    for name, v in values.items():
        p = by_name.get(name)
        if p is None:
            raise CalibrationError(f"'{name}' is not a calibratable constant (one of "
                                   f"{', '.join(by_name)})")
        v = p.clamp(v)
        v = int(v) if p.spec.type is int else float(v)
        (timing if p.in_timing else top)[p.key] = v
    return target.with_changes(timing=timing, **top) if timing else target.with_changes(**top)


# Reading a table -----------------------------------------------------------------------

def read_table(path: str | Path) -> list[Row]:
    """The rows of a calibration table; a :class:`CalibrationError` naming ``file:line``
    and the problem for anything malformed."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise CalibrationError(f"cannot read calibration table '{p}': {e.strerror or e}") from None
    lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines())
             if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise CalibrationError(f"{p}: no header line (expected {','.join(REQUIRED_COLUMNS)}[,"
                               f"{','.join(OPTIONAL_COLUMNS)}])")
    records = list(csv.reader([ln for _, ln in lines]))
    header_line = lines[0][0]
    header = [h.strip() for h in records[0]]
    unknown = [h for h in header if h not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]
    if unknown:
        raise CalibrationError(f"{p}:{header_line}: unknown column(s) {', '.join(repr(u) for u in unknown)} "
                               f"(columns: {', '.join(REQUIRED_COLUMNS + OPTIONAL_COLUMNS)})")
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise CalibrationError(f"{p}:{header_line}: header lacks column(s) {', '.join(missing)} "
                               f"(is the first non-comment line the header?)")
    if len(set(header)) != len(header):
        raise CalibrationError(f"{p}:{header_line}: a column is named twice")
    rows = []
    for (line, _), rec in zip(lines[1:], records[1:]):
        if len(rec) > len(header):
            raise CalibrationError(f"{p}:{line}: {len(rec)} fields, the header has {len(header)}")
        cell = dict(zip(header, (r.strip() for r in rec)))
        try:
            rows.append(_row(cell, line, f"{p}:{line}"))
        except CalibrationError as e:
            raise CalibrationError(f"{p}:{line}: {e}") from None
    if not rows:
        raise CalibrationError(f"{p}: the table has a header but no rows")
    return rows


def _row(cell: dict[str, str], line: int, where: str) -> Row:
    for c in REQUIRED_COLUMNS:
        if not cell.get(c):
            raise CalibrationError(f"column '{c}' is empty")
    try:
        measured = float(cell["measured_ns"])
    except ValueError:
        raise CalibrationError(f"measured_ns '{cell['measured_ns']}' is not a number") from None
    if not (math.isfinite(measured) and measured > 0):
        raise CalibrationError(f"measured_ns must be a positive number, got {cell['measured_ns']}")
    chips = 0
    if cell.get("chips"):
        try:
            chips = int(cell["chips"])
        except ValueError:
            raise CalibrationError(f"chips '{cell['chips']}' is not an integer") from None
    bench = Bench(cell["kind"], parse_shape(cell["shape"]), cell["dtype"], chips, cell.get("algorithm", ""))
    return Row(line, bench, measured, cell.get("note", ""), where)


def write_table(path: str | Path, rows: Sequence[Row], comment: str = "") -> None:
    """Writes rows in the table format (``comment`` lines prefixed with ``#``)."""
    out = [f"# {c}".rstrip() for c in comment.splitlines()]
    out.append(",".join(REQUIRED_COLUMNS + OPTIONAL_COLUMNS))
    for r in rows:
        b = r.bench
        out.append(",".join([b.kind, "x".join(map(str, b.shape)), b.dtype, f"{r.measured_ns:.6g}",
                             str(b.chips) if b.chips else "", b.algorithm, r.note.replace(",", ";")]))
    Path(path).write_text("\n".join(out) + "\n")


# Fitting -------------------------------------------------------------------------------

@dataclass(frozen=True)
class RowResult:
    row: Row
    before_ns: float
    after_ns: float

    @property
    def residual_before(self) -> float:
        """simulated / measured - 1 with the starting target."""
        return self.before_ns / self.row.measured_ns - 1.0

    @property
    def residual_after(self) -> float:
        return self.after_ns / self.row.measured_ns - 1.0


@dataclass(frozen=True)
class ParameterResult:
    """``status``: ``fitted``, ``unconstrained`` (no row depends on it), ``degenerate``
    (only constrained together with fitted ones; held) or ``held`` (excluded by the caller
    or an integer too coarse to fit)."""

    name: str
    before: float
    after: float
    status: str
    why: str = ""
    #: A fitted constant's standard error (value units) from the residuals' scatter and
    #: the last Jacobian (linearised; ``nan`` with no more rows than fitted constants).
    stderr: float = float("nan")


@dataclass(frozen=True)
class Fit:
    target: Target
    rows: tuple[RowResult, ...]
    parameters: tuple[ParameterResult, ...]
    iterations: int
    converged: bool

    @property
    def geomean_error_before(self) -> float:
        return geomean_error([r.before_ns for r in self.rows], [r.row.measured_ns for r in self.rows])

    @property
    def geomean_error_after(self) -> float:
        return geomean_error([r.after_ns for r in self.rows], [r.row.measured_ns for r in self.rows])


def geomean_error(simulated: Sequence[float], measured: Sequence[float]) -> float:
    """``exp(mean |ln(simulated / measured)|) - 1``: the typical factor off, as a fraction."""
    logs = [abs(math.log(s / m)) for s, m in zip(simulated, measured)]
    return math.exp(sum(logs) / len(logs)) - 1.0 if logs else 0.0


class _Model:
    """Simulated log-times of every row for a vector of parameter values (cached)."""

    def __init__(self, start: Target, rows: Sequence[Row], params: Sequence[Parameter]) -> None:
        self.start, self.rows, self.params = start, list(rows), list(params)
        self.programs: list[Program] = [self._guard(i, build, r.bench, start) for i, r in enumerate(self.rows)]
        self.log_measured = np.log([r.measured_ns for r in self.rows])
        self._cache: dict[tuple[tuple[float, ...], int], float] = {}
        self._targets: dict[tuple[float, ...], Target] = {}
        self.evaluations = 0

    def _guard(self, i: int, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` for row ``i``: a simulator error names the row."""
        try:
            return fn(*args)
        except CalibrationError as e:
            msg = str(e)
            raise CalibrationError(msg if msg.startswith(self.rows[i].at) else f"{self.rows[i].at}: {msg}") from None
        except (SimulationError, TargetError) as e:  # a fitted value the schema refuses, too
            raise CalibrationError(f"{self.rows[i].at}: {self.rows[i].bench.label}: {e}") from None

    def target(self, values: Sequence[float]) -> Target:
        key = tuple(values)
        t = self._targets.get(key)
        if t is None:
            t = self._targets[key] = apply(self.start, {p.name: v for p, v in zip(self.params, values)})
        return t

    def log_time(self, values: Sequence[float], i: int) -> float:
        vals = tuple(p.clamp(v) for p, v in zip(self.params, values))
        key = (vals, i)
        t = self._cache.get(key)
        if t is None:
            self.evaluations += 1
            ns = self._guard(i, simulate, self.rows[i].bench, self.target(vals), self.programs[i])
            if not ns > 0:
                raise CalibrationError(f"{self.rows[i].at}: {self.rows[i].bench.label} simulates to {ns} ns")
            t = self._cache[key] = math.log(ns)
        return t

    def residuals(self, values: Sequence[float], which: Sequence[int] | None = None) -> np.ndarray:
        idx = range(len(self.rows)) if which is None else which
        return np.array([self.log_time(values, i) - self.log_measured[i] for i in idx])


class _Space:
    """Maps parameter values to fit coordinates: ``ln v`` for positive constants, ``v / s``
    (``s`` the starting magnitude) for the others."""

    def __init__(self, params: Sequence[Parameter], start: Sequence[float]) -> None:
        self.params = list(params)
        self.log = [p.log_space(v) for p, v in zip(params, start)]
        self.scale = [max(abs(v), 1.0) for v in start]

    def to_u(self, values: Sequence[float]) -> np.ndarray:
        return np.array([math.log(v) if lg else v / s for v, lg, s in zip(values, self.log, self.scale)])

    def to_values(self, u: np.ndarray) -> list[float]:
        return [p.clamp(math.exp(x) if lg else x * s)
                for p, x, lg, s in zip(self.params, u, self.log, self.scale)]


def _step_size(p: Parameter, value: float) -> float:
    """Finite-difference step in fit coordinates: 2 % (at least 2 units of an integer)."""
    if p.spec.type is int and value > 0:
        return max(0.02, math.log((value + 2) / value)) if p.log_space(value) else 2.0 / max(abs(value), 1.0)
    return 0.02


def _jacobian(model: _Model, space: _Space, u: np.ndarray, cols: Sequence[int],
              rows_of: dict[int, list[int]] | None = None) -> np.ndarray:
    """d residual / d u (central differences) for parameters ``cols`` (indices into
    model.params); ``rows_of[j]`` limits column j to the rows known to depend on it."""
    n = len(model.rows)
    J = np.zeros((n, len(cols)))
    for c, j in enumerate(cols):
        rows = list(range(n)) if rows_of is None else rows_of[j]
        if not rows:
            continue
        h = _step_size(model.params[j], space.to_values(u)[j])
        up, dn = u.copy(), u.copy()
        up[j] += h
        dn[j] -= h
        vu, vd = space.to_values(up), space.to_values(dn)
        du = (space.to_u(vu)[j] - space.to_u(vd)[j]) or 2 * h  # after rounding / clamping
        J[rows, c] = (model.residuals(vu, rows) - model.residuals(vd, rows)) / du
    return J


def _choose(J: np.ndarray, order: Sequence[int], names: Sequence[str],
            tol: float = 0.05) -> tuple[list[int], dict[int, str]]:
    """Greedy column selection: a parameter is fitted if its (normalised) column adds a
    direction to those already chosen, by more than ``tol`` of its length (a smaller
    unique part would be set by the measurement noise, not by the rows); otherwise the
    reason it is not."""
    chosen: list[int] = []
    why: dict[int, str] = {}
    for j in order:
        col = J[:, j]
        norm = float(np.linalg.norm(col))
        if norm < 1e-9:
            why[j] = "unconstrained"
            continue
        if chosen:
            A = J[:, chosen] / np.linalg.norm(J[:, chosen], axis=0)
            coef, *_ = np.linalg.lstsq(A, col / norm, rcond=None)
            rest = float(np.linalg.norm(col / norm - A @ coef))
            if rest < tol:
                big = [names[chosen[i]] for i in np.argsort(-np.abs(coef))[:3] if abs(coef[i]) > 1e-3]
                why[j] = "only constrained together with " + ", ".join(big)
                continue
        chosen.append(j)
    return chosen, why


def fit(target: Target, rows: Sequence[Row], *, only: Sequence[str] | None = None,
        hold: Sequence[str] = (), max_iterations: int = 40, tol: float = 1e-6,
        progress: Callable[[str], None] | None = None) -> Fit:
    """Least-squares fit of ``target``'s calibratable constants to ``rows``.

    ``only``: fit just these constants (names as :func:`parameters` gives them);
    ``hold``: never move these. Returns the fitted target, every row's simulated time
    before and after, and what happened to every constant."""
    all_params = parameters()
    names = [p.name for p in all_params]
    for n in list(only or ()) + list(hold):
        if n not in names:
            raise CalibrationError(f"'{n}' is not a calibratable constant (one of {', '.join(names)})")
    model = _Model(target, rows, all_params)
    start = [p.get(target) for p in all_params]
    space = _Space(all_params, start)
    u0 = space.to_u(start)
    r0 = model.residuals(start)
    held: dict[int, str] = {}
    candidates = []
    for j, p in enumerate(all_params):
        if p.name in hold or (only is not None and p.name not in only):
            held[j] = "by request"
        elif p.spec.type is int and 0 < abs(start[j]) < 100:
            held[j] = f"an integer at {int(start[j])}: one unit is more than 1 %"
        else:
            candidates.append(j)
    J0 = _jacobian(model, space, u0, candidates)
    Jfull = np.zeros((len(rows), len(all_params)))
    Jfull[:, candidates] = J0
    chosen, why = _choose(Jfull, candidates, names)
    # The rows each fitted constant moves (structure of the starting Jacobian).
    rows_of = {j: [i for i in range(len(rows)) if abs(Jfull[i, j]) > 1e-12] for j in chosen}
    u, r = u0.copy(), r0
    cost = float(r @ r)
    lam, it, converged = 1e-3, 0, not chosen
    while chosen and it < max_iterations:
        it += 1
        # The first iteration reuses the starting Jacobian.
        J = Jfull[:, chosen] if it == 1 else _jacobian(model, space, u, chosen, rows_of)
        g = J.T @ r
        A = J.T @ J
        improved = False
        for _ in range(12):
            step = np.linalg.lstsq(A + lam * np.diag(np.diag(A) + 1e-12), -g, rcond=None)[0]
            un = u.copy()
            un[chosen] += step
            vals = space.to_values(un)
            un = space.to_u(vals)
            rn = model.residuals(vals)
            cn = float(rn @ rn)
            if cn < cost:
                improved = True
                rel = (cost - cn) / max(cost, 1e-300)
                u, r, cost = un, rn, cn
                lam = max(lam / 10, 1e-9)
                break
            lam *= 10
        if progress:
            progress(f"iteration {it}: rms log residual {math.sqrt(cost / len(rows)):.4g}")
        if not improved or rel < tol or cost < 1e-20:
            converged = True
            break
    after = space.to_values(u)
    fitted = model.target(after)
    stderr = _stderr(J, r, len(rows), [space.log[j] for j in chosen], [space.scale[j] for j in chosen],
                     [after[j] for j in chosen]) if chosen else []
    err_of = dict(zip(chosen, stderr))
    row_results = tuple(RowResult(row, math.exp(model.log_measured[i] + r0[i]),
                                  math.exp(model.log_measured[i] + r[i])) for i, row in enumerate(rows))
    chosen_set = set(chosen)
    presults = []
    for j, p in enumerate(all_params):
        if j in chosen_set:
            status, reason = "fitted", ""
            presults.append(ParameterResult(p.name, start[j], after[j], status, reason, err_of[j]))
            continue
        elif j in held:
            status, reason = "held", held[j]
        else:
            reason = why.get(j, "")
            status = "unconstrained" if reason == "unconstrained" else "degenerate"
            reason = "no row depends on it" if status == "unconstrained" else reason
        presults.append(ParameterResult(p.name, start[j], after[j], status, reason))
    return Fit(fitted, row_results, tuple(presults), it, converged)


def _stderr(J: np.ndarray, r: np.ndarray, n: int, log: Sequence[bool], scale: Sequence[float],
            values: Sequence[float]) -> list[float]:
    """Standard errors of the fitted constants: ``sigma^2 (J^T J)^-1`` in fit coordinates,
    ``sigma^2`` the residual variance, mapped back to value units."""
    k = J.shape[1]
    if n <= k:
        return [float("nan")] * k
    cov = float(r @ r) / (n - k) * np.linalg.pinv(J.T @ J)
    su = np.sqrt(np.maximum(np.diag(cov), 0.0))
    return [float(x * v) if lg else float(x * sc) for x, lg, sc, v in zip(su, log, scale, values)]


def calibrated_description(target: Target, table: str | Path, fit_result: Fit) -> str:
    moved = [p.name for p in fit_result.parameters if p.status == "fitted"]
    return (f"{target.name} calibrated from {Path(table).name} by nova calibrate "
            f"({len(fit_result.rows)} rows; fitted {', '.join(moved) or 'nothing'}; geomean error "
            f"{100 * fit_result.geomean_error_before:.1f} % -> {100 * fit_result.geomean_error_after:.1f} %). "
            f"Was: {target.description}")
