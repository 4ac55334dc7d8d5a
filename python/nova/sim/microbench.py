"""Microbenchmarks: the small program that times one measured operation on the simulator.

A :class:`Bench` names one operation the way a measurement table does (see
``docs/validation.md``, "Calibration table"): its kind, shape, element type and, for
collectives, the group size and the algorithm. :func:`build` turns it into a
:class:`~nova.sim.program.Program` for a target; :func:`simulate` runs that program in
timing-only mode and returns its simulated time in ns, which is what the row's
``measured_ns`` is compared against.

Kinds (shapes are sizes joined by ``x``):

* ``matmul`` ``MxKxN``: ``C[M,N] = A[M,K] @ B[K,N]`` with A and B whole in SRAM,
  cut into the matrix unit's tiles as the compiler does (K by ``matrix_rows``,
  N by ``matrix_cols``, M by what one accumulator tile of f32 holds), every K
  tile after the first accumulating.
* ``dma.SRC-DST`` (``hbm-sram``, ``sram-hbm``, ``hbm-hbm``, ``sram-sram``) and
  ``dma.peer`` (HBM of chip 0 to HBM of chip 1), optionally ``.strided``: the
  source is read transposed (element stride ``shape[-2]`` along the last dim,
  i.e. the row-major tile of the reversed shape read column by column).
* ``vector.KIND``: one elementwise instruction over the shape (``KIND`` a unary or
  binary elementwise kind of docs/isa.md 2.4, e.g. ``vector.add``, ``vector.exp``),
  operands in SRAM.
* ``all_reduce``, ``all_gather``, ``reduce_scatter``: one collective (sum) over a
  group of ``chips`` chips (default: the target's) of the per-chip input ``shape``
  (for ``reduce_scatter`` the first size must divide by ``chips``), in HBM.
  ``algorithm`` (``ring``, ``biring``, ``direct``, ``rhd``) forces the algorithm the
  row was measured with (``timing.collective_algorithm``); without it the target's
  setting applies (``auto``: the fastest priced on the topology).

A row's time is its program's simulated time, from the first instruction fetch to
the last completion (so it includes the sequencer's few cycles of ``li`` before the
first dispatch, as a measured kernel includes its launch).

The programs are timing-only: operand addresses are laid out without overlap where
the memories allow (A and B in SRAM) and output tiles of a matmul reuse one
accumulator tile, which changes no cost (costs do not depend on addresses or data).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from nova.binary import opcodes as oc
from .errors import SimulationError
from .program import ChipCode, Instr, Program, TileDesc
from .target import Target

COLLECTIVE_KINDS = {"all_reduce": oc.ALL_REDUCE, "all_gather": oc.ALL_GATHER,
                    "reduce_scatter": oc.REDUCE_SCATTER}
DMA_ROUTES = {"hbm-sram": (oc.HBM, oc.SRAM), "sram-hbm": (oc.SRAM, oc.HBM),
              "hbm-hbm": (oc.HBM, oc.HBM), "sram-sram": (oc.SRAM, oc.SRAM), "peer": (oc.HBM, oc.HBM)}
ALGORITHMS = ("ring", "biring", "direct", "rhd")
MATMUL_DTYPES = ("bf16", "f16", "f32")


class CalibrationError(SimulationError):
    """A calibration table, one of its rows or a microbenchmark is unusable."""


@dataclass(frozen=True)
class Bench:
    """One operation to time: ``kind``, ``shape``, ``dtype`` as in a table row; ``chips`` the
    group size of a collective (0: the target's); ``algorithm`` a collective's algorithm
    ("" when not given)."""

    kind: str
    shape: tuple[int, ...]
    dtype: str
    chips: int = 0
    algorithm: str = ""

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem:
            raise CalibrationError(problem)

    def problem(self) -> str | None:
        """What is wrong with this operation, or ``None``."""
        kind, shape = self.kind, self.shape
        if not shape or any(not isinstance(s, int) or s <= 0 for s in shape):
            return f"shape must be positive sizes, got {list(shape)}"
        if self.dtype not in oc.DTYPE_NAMES:
            return f"unknown dtype '{self.dtype}' (one of {', '.join(oc.DTYPE_NAMES)})"
        if kind == "matmul":
            if len(shape) != 3:
                return f"matmul shape must be MxKxN, got {'x'.join(map(str, shape))}"
            if self.dtype not in MATMUL_DTYPES:
                return f"matmul dtype must be one of {', '.join(MATMUL_DTYPES)}, got '{self.dtype}'"
        elif kind.startswith("dma."):
            parts = kind[4:].split(".")
            if parts[0] not in DMA_ROUTES or parts[1:] not in ([], ["strided"]):
                return (f"unknown dma kind '{kind}' (dma.ROUTE or dma.ROUTE.strided, ROUTE one of "
                        f"{', '.join(DMA_ROUTES)})")
            if parts[1:] and len(shape) < 2:
                return f"a strided dma needs a shape of rank >= 2, got {'x'.join(map(str, shape))}"
        elif kind.startswith("vector."):
            name = kind[7:]
            if name not in oc.KIND_CODES:
                return f"unknown vector kind '{name}' (an elementwise kind of docs/isa.md 2.4)"
        elif kind in COLLECTIVE_KINDS:
            if self.algorithm and self.algorithm not in ALGORITHMS:
                return f"unknown algorithm '{self.algorithm}' (one of {', '.join(ALGORITHMS)})"
        else:
            return (f"unknown kind '{kind}' (matmul, dma.ROUTE[.strided], vector.KIND, "
                    f"{', '.join(COLLECTIVE_KINDS)})")
        if len(shape) > 4:
            return f"shape has rank {len(shape)}; tiles have rank 1..4"
        if kind not in COLLECTIVE_KINDS and self.algorithm:
            return f"only collectives take an algorithm, {kind} got '{self.algorithm}'"
        if self.chips and not self.multichip:
            return f"only collectives and dma.peer take chips, {kind} got {self.chips}"
        if self.chips < 0 or self.chips == 1:
            return f"chips must be >= 2 (or left empty: the target's), got {self.chips}"
        return None

    @property
    def multichip(self) -> bool:
        """A collective or a peer DMA: runs on a system of ``chips`` chips."""
        return self.kind in COLLECTIVE_KINDS or self.kind.startswith("dma.peer")

    @property
    def label(self) -> str:
        s = f"{self.kind} {'x'.join(map(str, self.shape))} {self.dtype}"
        if self.multichip:
            s += f" chips={self.chips or 'target'}"
        return s + (f" {self.algorithm}" if self.algorithm else "")


def parse_shape(text: str) -> tuple[int, ...]:
    """``"128x64"`` -> ``(128, 64)``; a :class:`CalibrationError` for anything else."""
    parts = text.strip().lower().split("x")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise CalibrationError(f"shape '{text}' is not sizes joined by 'x' (e.g. 128x64)") from None
    if any(s <= 0 for s in shape):
        raise CalibrationError(f"shape '{text}' has a size <= 0")
    return shape


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


class _Code:
    """A straight-line chip program under construction."""

    def __init__(self) -> None:
        self.code: list[Instr] = []
        self.tiles: list[TileDesc] = []
        self.groups: list[tuple[tuple[int, ...], ...]] = []

    def tile(self, space: int, dtype: str, shape: tuple[int, ...], strides: tuple[int, ...] | None = None) -> int:
        t = TileDesc(space, oc.DTYPE_NAMES.index(dtype), tuple(shape), tuple(strides or _row_major(shape)))
        if t not in self.tiles:
            self.tiles.append(t)
        return self.tiles.index(t)

    def li(self, reg: int, value: int) -> None:
        self.code.append(Instr(oc.LI, oc.SCALAR, rd=reg, imm0=value))

    def emit(self, opcode: int, engine: int, **kw: int) -> None:
        self.code.append(Instr(opcode, engine, **kw))

    def chip(self) -> ChipCode:
        self.code.append(Instr(oc.HALT, oc.SCALAR))
        return ChipCode(tuple(self.code), tuple(self.tiles), tuple(self.groups))


def _chips(b: Bench, target: Target) -> int:
    n = b.chips or target.chips
    if b.multichip:
        if n < 2:
            raise CalibrationError(f"{b.label}: needs >= 2 chips, target '{target.name}' has {target.chips}")
        return n
    return 1


@functools.lru_cache(maxsize=1024)  # a fit simulates each row on many targets
def system(b: Bench, target: Target) -> Target:
    """The target the operation runs on: ``target`` with the operation's chip count and,
    for a collective with an algorithm, ``timing.collective_algorithm`` forced to it."""
    changes: dict = {}
    n = _chips(b, target)
    if n != target.chips:
        changes["chips"] = n
    if b.algorithm and target.timing["collective_algorithm"] != b.algorithm:
        changes["timing"] = {"collective_algorithm": b.algorithm}
    return target.with_changes(**changes) if changes else target


def _check_fits(b: Bench, target: Target, space: int, nbytes: int, what: str) -> None:
    cap = target.capacity(space)
    if nbytes > cap:
        raise CalibrationError(f"{b.label}: {nbytes} bytes of {oc.SPACE_NAMES[space]} for {what}, "
                               f"target '{target.name}' has {cap}")


def _matmul(b: Bench, target: Target) -> ChipCode:
    m, k, n = b.shape
    eb = oc.ELT_BYTES[oc.DTYPE_NAMES.index(b.dtype)]
    kt, nt = target.matrix_rows, target.matrix_cols
    mt = min(m, target.acc_bytes // (4 * min(n, nt)))
    if mt < 1:
        raise CalibrationError(f"{b.label}: one accumulator row of {min(n, nt)} f32 does not fit "
                               f"the {target.acc_bytes}-byte accumulator")
    a_bytes, b_bytes = m * k * eb, k * n * eb
    _check_fits(b, target, oc.SRAM, a_bytes + b_bytes, "A and B")
    c = _Code()
    for n0 in range(0, n, nt):
        nn = min(nt, n - n0)
        for m0 in range(0, m, mt):
            mm = min(mt, m - m0)
            for k0 in range(0, k, kt):
                kk = min(kt, k - k0)
                ta = c.tile(oc.SRAM, b.dtype, (mm, kk), (k, 1))
                tb = c.tile(oc.SRAM, b.dtype, (kk, nn), (n, 1))
                td = c.tile(oc.ACC, "f32", (mm, nn))
                c.li(1, (m0 * k + k0) * eb)
                c.li(2, a_bytes + (k0 * n + n0) * eb)
                c.emit(oc.MATMUL, oc.MATRIX, ra=1, a=ta, rb=2, b=tb, rdst=0, d=td,
                       flags=oc.F_ACCUMULATE if k0 else 0)
    return c.chip()


def _dma(b: Bench, target: Target) -> ChipCode:
    parts = b.kind[4:].split(".")
    route, strided = parts[0], parts[1:] == ["strided"]
    src_space, dst_space = DMA_ROUTES[route]
    shape = b.shape
    nbytes = math.prod(shape) * oc.ELT_BYTES[oc.DTYPE_NAMES.index(b.dtype)]
    c = _Code()
    if strided:
        # The row-major tile of the shape with its last two sizes swapped, read transposed.
        st = list(_row_major(shape[:-2] + (shape[-1], shape[-2])))
        st[-2], st[-1] = st[-1], st[-2]
        ts = c.tile(src_space, b.dtype, shape, tuple(st))
    else:
        ts = c.tile(src_space, b.dtype, shape)
    td = c.tile(dst_space, b.dtype, shape)
    same = src_space == dst_space and route != "peer"
    _check_fits(b, target, src_space, 2 * nbytes if same else nbytes, "the source and destination")
    _check_fits(b, target, dst_space, nbytes, "the destination")
    c.li(1, 0)
    c.li(2, nbytes if same else 0)
    if route == "peer":
        # Chip 0 copies to chip 1; the other chips only halt.
        c.emit(oc.CHIP_ID, oc.SCALAR, rd=3)
        c.li(4, 0)
        c.emit(oc.SALU, oc.SCALAR, kind=oc.S_EQ, rd=5, ra=3, rb=4)
        c.li(6, 1)
        at = len(c.code)
        c.emit(oc.IF, oc.SCALAR, ra=5)
        c.emit(oc.DMA_COPY, oc.DMA, ra=1, a=ts, rdst=2, d=td, flags=oc.F_PEER, rc=6)
        c.code[at] = replace(c.code[at], target=len(c.code))
        c.emit(oc.ENDIF, oc.SCALAR)
    else:
        c.emit(oc.DMA_COPY, oc.DMA, ra=1, a=ts, rdst=2, d=td)
    return c.chip()


def _vector(b: Bench, target: Target) -> ChipCode:
    kind = oc.KIND_CODES[b.kind[7:]]
    nbytes = math.prod(b.shape) * oc.ELT_BYTES[oc.DTYPE_NAMES.index(b.dtype)]
    binary = kind in oc.BINARY_KINDS
    _check_fits(b, target, oc.SRAM, (3 if binary else 2) * nbytes, "the operands")
    c = _Code()
    t = c.tile(oc.SRAM, b.dtype, b.shape)
    out = c.tile(oc.SRAM, "i1" if kind in oc.COMPARISONS else b.dtype, b.shape)
    c.li(1, 0)
    c.li(2, nbytes)
    c.li(3, 2 * nbytes)
    if binary:
        c.emit(oc.VBINARY, oc.VECTOR, kind=kind, ra=1, a=t, rb=2, b=t, rdst=3, d=out)
    else:
        c.emit(oc.VUNARY, oc.VECTOR, kind=kind, ra=1, a=t, rdst=2, d=out)
    return c.chip()


def _collective(b: Bench, target: Target) -> ChipCode:
    op = COLLECTIVE_KINDS[b.kind]
    p = _chips(b, target)
    shape = b.shape
    if op == oc.ALL_GATHER:
        out = (shape[0] * p,) + shape[1:]
    elif op == oc.REDUCE_SCATTER:
        if shape[0] % p:
            raise CalibrationError(f"{b.label}: reduce_scatter's first size {shape[0]} does not divide "
                                   f"by the {p} chips")
        out = (shape[0] // p,) + shape[1:]
    else:
        out = shape
    eb = oc.ELT_BYTES[oc.DTYPE_NAMES.index(b.dtype)]
    in_bytes = math.prod(shape) * eb
    _check_fits(b, target, oc.HBM, in_bytes + math.prod(out) * eb, "input and output")
    c = _Code()
    c.groups.append((tuple(range(p)),))
    ti, to = c.tile(oc.HBM, b.dtype, shape), c.tile(oc.HBM, b.dtype, out)
    c.li(1, 0)
    c.li(2, in_bytes)
    c.emit(op, oc.COLLECTIVE, kind=oc.R_SUM if op != oc.ALL_GATHER else 0, ra=1, a=ti, rdst=2, d=to,
           group=0)
    return c.chip()


def build(b: Bench, target: Target) -> Program:
    """The program that times ``b`` on ``target`` (on :func:`system` of it)."""
    tg = system(b, target)
    if b.kind == "matmul":
        code = _matmul(b, tg)
    elif b.kind.startswith("dma."):
        code = _dma(b, tg)
    elif b.kind.startswith("vector."):
        code = _vector(b, tg)
    else:
        code = _collective(b, tg)
    return Program(tg, (code,))


def simulate(b: Bench, target: Target, program: Program | None = None) -> float:
    """Simulated ns of ``b`` on ``target`` (timing-only). ``program``: a program from
    :func:`build` for a target of the same structure, reused with ``target``'s timing."""
    from .simulator import Simulator

    tg = system(b, target)
    prog = build(b, target) if program is None else Program(tg, program.chips, program.io, program.constants)
    sim = Simulator(prog, functional=False)
    _, report = sim.run()
    if b.algorithm and report.collectives and report.collectives[0][1] != b.algorithm:
        raise CalibrationError(f"{b.label}: the simulator ran this collective as "
                               f"'{report.collectives[0][1]}', not '{b.algorithm}'")
    return float(report.time_ns)
