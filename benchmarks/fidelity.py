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
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if "nova" not in sys.modules:  # run as a script: the source tree's package (tests import it themselves)
    sys.path.insert(0, str(ROOT / "python"))

from nova.sim.microbench import Bench, simulate  # noqa: E402
from nova.sim.target import Target, load_target  # noqa: E402

VENV = ROOT / "benchmarks" / ".venv-scalesim"
CACHE = ROOT / "benchmarks" / "data" / "scalesim_ws128.csv"
EXAMPLE = ROOT / "benchmarks" / "data" / "calibration-example.csv"
EXAMPLE_START = ROOT / "benchmarks" / "data" / "nova-t1-ws-ab.json"
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


def ab_steps(op: str, algorithm: str, topology: str, p: int, S: float) -> list[tuple[int, float, float, tuple]]:
    """The steps of one collective as the alpha-beta model sees them, written out per
    algorithm and topology: ``(hops, bytes on the busiest link, bytes through the
    busiest chip's memory port (read what it sends + write what it receives),
    (chunks, bytes per chunk) reduced at a receiver or ())``. ``S`` = input bytes per chip.

    On the switch every route is one hop and a chip's port carries all it sends; on the
    ring a route crosses d links, a recursive halving/doubling step at xor distance d
    puts d messages on its busiest link and a direct step sum(d <= p/2) messages.
    """
    c = S / p  # a chunk
    lg = int(math.log2(p))
    ring = topology == "ring"
    reducing = op != "all_gather"
    steps = []
    if algorithm in ("ring", "biring"):
        per = S if op == "all_gather" else c
        two = algorithm == "biring"
        link = per / 2 if two and ring else per  # on a switch both halves leave one port
        red = ((2, per / 2) if two else (1, per)) if reducing else ()
        n = p - 1
        steps += [(1, link, 2 * per, red)] * n
        if op == "all_reduce":
            steps += [(1, link, 2 * per, ())] * n
    elif algorithm == "direct":
        per = S if op == "all_gather" else c
        hops, load = (p // 2, _ring_direct_load(p)) if ring else (1, p - 1)
        steps.append((hops, load * per, 2 * (p - 1) * per, (p - 1, per) if reducing else ()))
        if op == "all_reduce":
            steps.append((hops, load * per, 2 * (p - 1) * per, ()))
    elif algorithm == "rhd":
        def at(d: int, nbytes: float, red: tuple) -> tuple:
            return (d if ring else 1, (d if ring else 1) * nbytes, 2 * nbytes, red)
        halving = [at(p >> (j + 1), S / 2 ** (j + 1), (1, S / 2 ** (j + 1))) for j in range(lg)]
        if op == "all_gather":
            steps += [at(1 << j, S * (1 << j), ()) for j in range(lg)]
        else:
            steps += halving
            if op == "all_reduce":
                steps += [at(1 << j, c * (1 << j), ()) for j in range(lg)]
    else:
        raise ValueError(algorithm)
    return steps


def alpha_beta(op: str, algorithm: str, t: Target, S: float, ports: bool = False,
               reduction: bool = False) -> float:
    """The alpha-beta time (ns) of one collective on ``t``'s interconnect (alpha =
    link_latency_ns per hop, beta = 1 / link_gbps): sum over steps of hops x alpha + the
    busiest link's bytes x beta. ``ports``: a step's bandwidth term is the larger of the
    link's and the memory port's (bytes / hbm_gbps); ``reduction``: a reducing step adds
    the receiver's reduction of ``j`` chunks of ``b`` bytes, the larger of its vector
    time (vector_overhead_cycles + ceil(E / lanes) x vector_elementwise_factor cycles,
    E = j b / 4 f32 elements) and its memory traffic ((j + 2) b / hbm_gbps)."""
    tm = t.timing
    total = 0.0
    for hops, link, port, red in ab_steps(op, algorithm, t.topology, t.chips, S):
        bw = link / t.link_gbps
        if ports:
            bw = max(bw, port / t.hbm_gbps)
        total += hops * t.link_latency_ns + bw
        if reduction and red:
            j, b = red
            vec = (tm["vector_overhead_cycles"] + math.ceil(j * b / 4 / t.vector_lanes)
                   * tm["vector_elementwise_factor"]) * t.cycle_ns
            total += max(vec, (j + 2) * b / t.hbm_gbps)
    return total


def collective_table(targets: list[Target]) -> tuple[str, float, float]:
    sizes = [64 << 10, 16 << 20]
    lines = ["| target | op | algorithm | bytes/chip | alpha-beta (links) | + memory ports | Nova, no reduction "
             "| ratio | + reduction | Nova, reduction charged | ratio |", "|" + "---|" * 11]
    worst = worst_ring = 0.0
    for t in targets:
        p = t.chips
        for op in ("all_reduce", "reduce_scatter", "all_gather"):
            for alg in ("ring", "biring", "direct", "rhd"):
                for S in sizes:
                    b = Bench(op, (S // 4,), "f32", chips=p, algorithm=alg)
                    links = alpha_beta(op, alg, t, float(S))
                    ports = alpha_beta(op, alg, t, float(S), ports=True)
                    full_ab = alpha_beta(op, alg, t, float(S), ports=True, reduction=True)
                    bare = simulate(b, t.with_changes(timing={"collective_reduce_on_vector": False}))
                    full = simulate(b, t.with_changes(timing={"collective_reduce_on_vector": True}))
                    r1, r2 = bare / ports, full / full_ab
                    staggered = t.topology == "ring" and alg == "direct"
                    if staggered:
                        worst_ring = max(worst_ring, abs(r1 - 1), abs(r2 - 1))
                    else:
                        worst = max(worst, abs(r1 - 1), abs(r2 - 1))
                    lines.append(f"| {t.name} | {op} | {alg} | {S} | {links:.1f} | {ports:.1f} | {bare:.1f} | "
                                 f"{r1:.5f} | {full_ab:.1f} | {full:.1f} | {r2:.5f} |")
    lines.append("")
    lines.append(f"largest |Nova / alpha-beta - 1| (with memory ports, and with the reduction): "
                 f"{100 * worst:.3f} %, except direct on the ring: {100 * worst_ring:.2f} %")
    return "\n".join(lines), worst, worst_ring


# The example calibration table -------------------------------------------------------

#: The synthetic "hardware" of the example table (stated in its header).
EX_CLOCK_MHZ = 1400
EX_DMA_ALPHA_NS, EX_HBM_GBPS = 60.0, 1000.0
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
    ex = load_target(ROOT / "targets" / "nova-t1.json").with_changes(
        chips=8, topology="switch", link_latency_ns=int(EX_LINK_ALPHA_NS), link_gbps=int(EX_LINK_GBPS))
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
            t = alpha_beta(op, alg, ex, float(S))
            rows.append(f"{op},{S // 4},f32,{t:.6g},8,{alg},alpha-beta")
    EXAMPLE.write_text("\n".join(rows) + "\n")
    print(f"wrote {EXAMPLE}")
    # The structure of that synthetic machine as a starting target: every tile loads
    # its weights (SCALE-Sim) and collectives charge no reduction (alpha-beta).
    t1 = load_target(ROOT / "targets" / "nova-t1.json")
    start = t1.with_changes(
        name="nova-t1-ws-ab", timing={"matmul_weight_overlap": False, "collective_reduce_on_vector": False},
        description="nova-t1 with the structure of benchmarks/data/calibration-example.csv's synthetic "
                    "machine: no weight-load overlap (as SCALE-Sim's weight-stationary array), no "
                    "reduction charge in collectives (as the alpha-beta model); constants as nova-t1.")
    EXAMPLE_START.write_text(json.dumps(start.as_dict(), indent=2) + "\n")
    print(f"wrote {EXAMPLE_START}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--refresh", action="store_true", help="re-run SCALE-Sim for every shape")
    ap.add_argument("--only", choices=("gemm", "collectives"), help="one of the two comparisons")
    ap.add_argument("--write-example", action="store_true",
                    help="write benchmarks/data/calibration-example.csv and nova-t1-ws-ab.json")
    args = ap.parse_args()
    if args.write_example:
        write_example(args.refresh)
        return 0
    t1 = load_target(ROOT / "targets" / "nova-t1.json")
    ring8 = load_target(ROOT / "targets" / "nova-t1-ring8.json")
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "python/nova/sim", "targets"],
                           capture_output=True, text=True).stdout
    changed = ", ".join(line[3:] for line in dirty.splitlines() if line.strip())
    print(f"Nova at {commit}" + (f" (modified in the working tree: {changed})" if changed else ""))
    if args.only in (None, "gemm"):
        text, _, _ = gemm_table(t1, args.refresh)
        print("\nGEMM, bf16, matrix-engine cycles: Nova vs SCALE-Sim 3.0.0 (128x128 weight stationary)\n")
        print(text)
    if args.only in (None, "collectives"):
        text, _, _ = collective_table([t1, ring8])
        print("\nCollectives on 8 chips: Nova vs the alpha-beta formula of each algorithm\n")
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
