"""Fidelity of Nova's timing model: matrix engine vs SCALE-Sim, collectives vs alpha-beta.

    .venv/bin/python benchmarks/fidelity.py              # tables as in docs/validation.md
    .venv/bin/python benchmarks/fidelity.py --refresh    # re-run SCALE-Sim (minutes, ~8 GB RAM)
    .venv/bin/python benchmarks/fidelity.py --write-example   # benchmarks/data/calibration-example.csv

GEMMs: SCALE-Sim 3.0.0 (GEMM mode, a 128x128 weight-stationary array: K on the rows,
N on the columns, M streamed in time -- the mapping of Nova's matrix unit) gives the
compute cycles of each shape; Nova gives the matrix-engine cycles of the same GEMM in
bf16 (nova.sim.microbench: the GEMM cut into the array's tiles, timing only), with the
target's weight-load overlap off (every tile loads its weights, as SCALE-Sim charges
them) and on. SCALE-Sim needs numpy < 2, so it runs in its own venv
(benchmarks/.venv-scalesim, made on first use with pip); its cycle counts are cached
in benchmarks/data/scalesim_ws128.csv with the command that produced them.

Collectives: every algorithm (ring, biring, direct, rhd) forced in turn
(timing.collective_algorithm) for all_reduce, all_gather and reduce_scatter on the
switch (nova-t1) and ring (nova-t1-ring8) targets, against the alpha-beta formula of
that algorithm on that topology written out below (independent of the simulator's own
step code), with the collective's reduction charge off and on.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from nova.sim.microbench import Bench, simulate  # noqa: E402
from nova.sim.target import Target, load_target  # noqa: E402

VENV = ROOT / "benchmarks" / ".venv-scalesim"
CACHE = ROOT / "benchmarks" / "data" / "scalesim_ws128.csv"
EXAMPLE = ROOT / "benchmarks" / "data" / "calibration-example.csv"
SCALESIM = "scalesim==3.0.0"

#: (M, K, N): partial tiles in K, N and M, square and skinny shapes, up to 2048^3.
GEMMS = [(128, 12, 128), (128, 128, 12), (12, 128, 128), (128, 128, 128), (512, 128, 128),
         (256, 256, 256), (1000, 200, 300), (512, 512, 512), (2048, 128, 128), (64, 2048, 2048),
         (1024, 1024, 1024), (2048, 2048, 2048)]

SCALESIM_CFG = """[general]
run_name = nova_ws

[architecture_presets]
ArrayHeight:    128
ArrayWidth:     128
IfmapSramSzkB:  65536
FilterSramSzkB: 65536
OfmapSramSzkB:  65536
IfmapOffset:    0
FilterOffset:   100000000
OfmapOffset:    200000000
Bandwidth : 10000
Dataflow : ws
MemoryBanks: 1
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: 10
IfmapSRAMBankNum: 10
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: 10
FilterSRAMBankNum: 10
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: CALC
UseRamulatorTrace: False
"""

RUNNER = """import sys
from scalesim.scale_sim import scalesim
s = scalesim(save_disk_space=True, verbose=False, config=sys.argv[1], topology=sys.argv[2],
             layout=sys.argv[3], input_type_gemm=True)
s.run_scale(top_path=sys.argv[4])
"""


# SCALE-Sim --------------------------------------------------------------------------

def ensure_venv() -> Path:
    """The SCALE-Sim venv's python, made (python -m venv + pip) if missing."""
    py = VENV / "bin" / "python"
    if not py.exists():
        print(f"fidelity: creating {VENV} with {SCALESIM} and numpy<2 ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", SCALESIM, "numpy<2"], check=True)
    return py


def _limit_memory() -> None:
    # SCALE-Sim keeps per-cycle operand matrices: 2048^3 needs ~8 GB. Cap it so a
    # larger shape fails instead of starving the machine.
    resource.setrlimit(resource.RLIMIT_AS, (14 << 30, 14 << 30))


def run_scalesim(py: Path, m: int, k: int, n: int) -> tuple[int, int]:
    """(compute cycles, total cycles with prefetch) of one GEMM on the 128x128 WS array."""
    with tempfile.TemporaryDirectory() as d:
        dd = Path(d)
        (dd / "ws.cfg").write_text(SCALESIM_CFG)
        # SCALE-Sim's GEMM topology rows: name, M, N, K (trailing comma required).
        (dd / "topo.csv").write_text(f"Layer, M, N, K,\ng, {m}, {n}, {k},\n")
        (dd / "layout.csv").write_text("Layer,\n")
        (dd / "run.py").write_text(RUNNER)
        subprocess.run([str(py), str(dd / "run.py"), str(dd / "ws.cfg"), str(dd / "topo.csv"),
                        str(dd / "layout.csv"), str(dd / "out")], check=True, cwd=d,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_limit_memory)
        with open(dd / "out" / "nova_ws" / "COMPUTE_REPORT.csv") as f:
            rows = list(csv.reader(f))
        # LayerID, Total Cycles (incl. prefetch), Total Cycles, Stall Cycles, ...
        return int(rows[1][2]), int(rows[1][1])


def scalesim_cycles(refresh: bool) -> dict[tuple[int, int, int], int]:
    """Compute cycles per (M, K, N), from the cache unless refreshing or missing."""
    cached: dict[tuple[int, int, int], int] = {}
    if CACHE.exists() and not refresh:
        for line in CACHE.read_text().splitlines():
            if line.startswith("#") or line.startswith("M,"):
                continue
            m, k, n, c, _ = line.split(",")
            cached[(int(m), int(k), int(n))] = int(c)
    todo = [s for s in GEMMS if s not in cached]
    if todo:
        py = ensure_venv()
        full: dict[tuple[int, int, int], tuple[int, int]] = {}
        for s in todo:
            print(f"fidelity: SCALE-Sim {s[0]}x{s[1]}x{s[2]} ...", file=sys.stderr, flush=True)
            full[s] = run_scalesim(py, *s)
        old = {}
        if CACHE.exists() and not refresh:
            for line in CACHE.read_text().splitlines():
                if not line.startswith("#") and not line.startswith("M,"):
                    m, k, n, c, t = line.split(",")
                    old[(int(m), int(k), int(n))] = (int(c), int(t))
        old.update(full)
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        lines = ["# SCALE-Sim 3.0.0 (pip install scalesim==3.0.0 'numpy<2'), GEMM mode, 128x128 array,",
                 "# weight stationary (config in benchmarks/fidelity.py: SCALESIM_CFG), one GEMM per run.",
                 "# Produced by: .venv/bin/python benchmarks/fidelity.py --refresh",
                 "# compute_cycles = COMPUTE_REPORT 'Total Cycles'; total_with_prefetch = 'Total Cycles (incl. prefetch)'.",
                 "M,K,N,compute_cycles,total_with_prefetch"]
        lines += [f"{m},{k},{n},{c},{t}" for (m, k, n), (c, t) in sorted(old.items())]
        CACHE.write_text("\n".join(lines) + "\n")
        cached.update({s: v[0] for s, v in full.items()})
    return cached


# GEMMs ----------------------------------------------------------------------------------

def tiles(m: int, k: int, n: int, t: Target) -> int:
    return math.ceil(k / t.matrix_rows) * math.ceil(n / t.matrix_cols) * math.ceil(
        m / min(m, t.acc_bytes // (4 * min(n, t.matrix_cols))))


def hidden_by_overlap(m: int, k: int, n: int, t: Target) -> float:
    """Cycles the weight-load overlap hides, from the target's constants: every tile after
    the first loads its weights (R x matmul_weight_row_cycles) while the previous one
    streams, and its fill/drain (R + C + matmul_fill_drain_cycles) overlaps the next
    tile; a tile then costs max(stream, load) instead of load + stream + fill/drain."""
    tm = t.timing
    load = t.matrix_rows * tm["matmul_weight_row_cycles"]
    fill = t.matrix_rows + t.matrix_cols + tm["matmul_fill_drain_cycles"]
    mt = min(m, t.acc_bytes // (4 * min(n, t.matrix_cols)))
    stream = mt * tm["matmul_row_cycles"]
    return (tiles(m, k, n, t) - 1) * (load + stream + fill - max(stream, load))


def gemm_table(t1: Target, refresh: bool) -> tuple[str, float, float]:
    ss = scalesim_cycles(refresh)
    off = t1.with_changes(timing={"matmul_weight_overlap": False})
    on = t1.with_changes(timing={"matmul_weight_overlap": True})
    head = ("| M x K x N | tiles | SCALE-Sim cycles | Nova off | off / SS | Nova on | on / SS "
            "| SS - on | hidden by overlap |")
    lines = [head, "|" + "---|" * 9]
    logs_off, logs_on = [], []
    for (m, k, n) in GEMMS:
        b = Bench("matmul", (m, k, n), "bf16")
        c_off = simulate(b, off) / off.cycle_ns
        c_on = simulate(b, on) / on.cycle_ns
        s = ss[(m, k, n)]
        nt = tiles(m, k, n, t1)
        logs_off.append(abs(math.log(c_off / s)))
        logs_on.append(abs(math.log(c_on / s)))
        lines.append(f"| {m}x{k}x{n} | {nt} | {s} | {c_off:.0f} | {c_off / s:.4f} | {c_on:.0f} | "
                     f"{c_on / s:.4f} | {s - c_on:.0f} | {hidden_by_overlap(m, k, n, on):.0f} |")
    g_off = math.exp(sum(logs_off) / len(logs_off)) - 1
    g_on = math.exp(sum(logs_on) / len(logs_on)) - 1
    lines.append("")
    lines.append(f"geomean |error| vs SCALE-Sim: overlap off {100 * g_off:.2f} %, overlap on {100 * g_on:.2f} % "
                 f"(max off {100 * (math.exp(max(logs_off)) - 1):.2f} %)")
    return "\n".join(lines), g_off, g_on


# Collectives ------------------------------------------------------------------------

def _ring_direct_load(p: int) -> int:
    """Messages on the busiest directed link when every chip sends one message to every
    other along the shortest way round a bidirectional ring (a tie goes forward)."""
    return sum(d for d in range(1, p) if d <= p - d)


def alpha_beta(op: str, algorithm: str, topology: str, p: int, S: float, alpha: float, B: float) -> float:
    """The alpha-beta time (ns) of one collective: ``S`` input bytes per chip, ``alpha``
    ns per link hop, ``B`` bytes/ns per link direction.

    Each algorithm is a sequence of steps; a step costs its longest route's latency plus
    its busiest link's bytes over B. On the switch every route is one hop and a chip's
    port carries all it sends; on the ring a route crosses d links and the busiest link
    carries d messages of a recursive-halving/doubling step at distance d, and
    sum(d <= p/2) messages of a direct step.
    """
    c = S / p  # a chunk
    lg = int(math.log2(p))
    ring = topology == "ring"

    def step(hops: float, link_bytes: float) -> float:
        return hops * alpha + link_bytes / B

    if algorithm in ("ring", "biring"):
        # Around the ring: each step every chip sends one chunk to its neighbour. biring
        # sends half each way: on a ring the two halves use different links; on a
        # switch both leave through the one port.
        per = c if op != "all_gather" else S
        if algorithm == "biring" and ring:
            per /= 2
        n = {"all_reduce": 2 * (p - 1), "all_gather": p - 1, "reduce_scatter": p - 1}[op]
        return n * step(1, per)
    if algorithm == "direct":
        per = c if op != "all_gather" else S
        hops, load = (p // 2, _ring_direct_load(p)) if ring else (1, p - 1)
        n = 2 if op == "all_reduce" else 1
        return n * step(hops, load * per)
    if algorithm == "rhd":
        # Halving: distances p/2, p/4, .. 1 with S/2, S/4, .. bytes; doubling: 1, 2, ..
        # p/2 with c, 2c, .. bytes (xor partners; on the ring distance d = d hops and d
        # messages on the busiest link).
        halving = sum(step(d if ring else 1, (d if ring else 1) * S / 2 ** (i + 1))
                      for i, d in enumerate(p >> (j + 1) for j in range(lg)))
        doubling = sum(step(d if ring else 1, (d if ring else 1) * c * d)
                       for d in (1 << j for j in range(lg)))
        gather = sum(step(d if ring else 1, (d if ring else 1) * S * d) for d in (1 << j for j in range(lg)))
        return {"all_reduce": halving + doubling, "reduce_scatter": halving, "all_gather": gather}[op]
    raise ValueError(algorithm)


def collective_table(targets: list[Target]) -> tuple[str, float]:
    sizes = [64 << 10, 16 << 20]
    lines = ["| target | op | algorithm | bytes/chip | alpha-beta ns | Nova, no reduction | ratio "
             "| Nova, reduction charged | charged extra |", "|" + "---|" * 9]
    worst = 0.0
    for t in targets:
        p = t.chips
        for op in ("all_reduce", "reduce_scatter", "all_gather"):
            for alg in ("ring", "biring", "direct", "rhd"):
                for S in sizes:
                    shape = (S // 4,) if op != "all_gather" else (S // 4,)
                    b = Bench(op, shape, "f32", chips=p, algorithm=alg)
                    ab = alpha_beta(op, alg, t.topology, p, float(S), float(t.link_latency_ns), float(t.link_gbps))
                    bare = simulate(b, t.with_changes(timing={"collective_reduce_on_vector": False}))
                    full = simulate(b, t.with_changes(timing={"collective_reduce_on_vector": True}))
                    worst = max(worst, abs(bare / ab - 1))
                    lines.append(f"| {t.name} | {op} | {alg} | {S} | {ab:.1f} | {bare:.1f} | {bare / ab:.5f} "
                                 f"| {full:.1f} | {full - bare:+.1f} |")
    lines.append("")
    lines.append(f"largest |Nova without reduction / alpha-beta - 1|: {100 * worst:.3f} %")
    return "\n".join(lines), worst


# The example calibration table -------------------------------------------------------

#: The synthetic "hardware" of the example table (stated in its header).
EX_CLOCK_MHZ = 1400
EX_DMA_ALPHA_NS, EX_HBM_GBPS = 60.0, 700.0
EX_LINK_ALPHA_NS, EX_LINK_GBPS = 800.0, 400.0


def write_example(refresh: bool) -> None:
    ss = scalesim_cycles(refresh)
    rows = ["# SYNTHETIC calibration table (not measured on hardware), written by",
            "#   .venv/bin/python benchmarks/fidelity.py --write-example",
            f"# matmul rows: SCALE-Sim 3.0.0 weight-stationary compute cycles of the GEMM on a 128x128",
            f"#   array (benchmarks/data/scalesim_ws128.csv) at {EX_CLOCK_MHZ} MHz;",
            f"# dma rows: alpha-beta with alpha = {EX_DMA_ALPHA_NS:g} ns, beta = 1 / ({EX_HBM_GBPS:g} GB/s);",
            f"# dma.peer and collective rows: alpha-beta per algorithm (benchmarks/fidelity.py alpha_beta) on",
            f"#   an 8-chip switch with alpha = {EX_LINK_ALPHA_NS:g} ns per hop, beta = 1 / ({EX_LINK_GBPS:g} GB/s);",
            "#   a peer copy is one hop: alpha + dma alpha + bytes / link bandwidth.",
            "kind,shape,dtype,measured_ns,chips,algorithm,note"]
    cyc = 1e3 / EX_CLOCK_MHZ
    for (m, k, n) in GEMMS:
        if m * k * n <= 512 ** 3:
            rows.append(f"matmul,{m}x{k}x{n},bf16,{ss[(m, k, n)] * cyc:.6g},,,SCALE-Sim WS cycles")
    for r, c in ((1, 64), (16, 256), (256, 256), (1024, 1024), (2048, 2048)):
        nbytes = r * c * 2
        rows.append(f"dma.hbm-sram,{r}x{c},bf16,{EX_DMA_ALPHA_NS + nbytes / EX_HBM_GBPS:.6g},,,alpha-beta")
    for r, c in ((1, 64), (256, 256), (1024, 1024)):
        nbytes = r * c * 2
        rows.append(f"dma.peer,{r}x{c},bf16,{EX_DMA_ALPHA_NS + EX_LINK_ALPHA_NS + nbytes / EX_LINK_GBPS:.6g},"
                    f"2,,alpha-beta one hop")
    for op, alg in (("all_reduce", "ring"), ("all_reduce", "direct"), ("all_gather", "ring"),
                    ("reduce_scatter", "rhd")):
        for S in (64 << 10, 4 << 20):
            t = alpha_beta(op, alg, "switch", 8, float(S), EX_LINK_ALPHA_NS, EX_LINK_GBPS)
            rows.append(f"{op},{S // 4},f32,{t:.6g},8,{alg},alpha-beta")
    EXAMPLE.write_text("\n".join(rows) + "\n")
    print(f"wrote {EXAMPLE}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--refresh", action="store_true", help="re-run SCALE-Sim for every shape")
    ap.add_argument("--only", choices=("gemm", "collectives"), help="one of the two comparisons")
    ap.add_argument("--write-example", action="store_true", help="write benchmarks/data/calibration-example.csv")
    args = ap.parse_args()
    if args.write_example:
        write_example(args.refresh)
        return 0
    t1 = load_target(ROOT / "targets" / "nova-t1.json")
    ring8 = load_target(ROOT / "targets" / "nova-t1-ring8.json")
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "python/nova/sim", "targets"],
                           capture_output=True, text=True).stdout.strip()
    print(f"Nova at {commit}{' (simulator or targets modified in the working tree)' if dirty else ''}")
    if args.only in (None, "gemm"):
        text, _, _ = gemm_table(t1, args.refresh)
        print("\nGEMM, bf16, matrix-engine cycles: Nova vs SCALE-Sim 3.0.0 (128x128 weight stationary)\n")
        print(text)
    if args.only in (None, "collectives"):
        text, _ = collective_table([t1, ring8])
        print("\nCollectives on 8 chips: Nova vs the alpha-beta formula of each algorithm\n")
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
