#!/usr/bin/env python3
"""Long run of the IR fuzzer (nova.compiler.fuzz_ir): mutated lit-suite IR
through nova-opt, counts by outcome, and every finding with its reproducer.

    scripts/fuzz_ir.py [--cases 10000] [--seed 0] [--jobs 2] [--timeout 20] [--out DIR]

Exit status 1 when any case crashed, hung or failed silently. Findings (the
mutated input, the nova-opt arguments and stderr) are written to --out.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from nova.compiler.fuzz_ir import OK, corpus, mutate, run_ir  # noqa: E402
from nova.compiler.tools import find_tool  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--out", type=Path, default=Path("fuzz-ir-findings"))
    a = ap.parse_args()
    tool = find_tool("nova-opt")
    seeds = corpus(ROOT / "test")
    counts: collections.Counter[str] = collections.Counter()
    signatures: collections.Counter[str] = collections.Counter()
    t0 = time.time()

    def case(i: int):
        rng = random.Random(a.seed * 1_000_003 + i)
        seed = seeds[rng.randrange(len(seeds))]
        text, what = mutate(seed.text, rng)
        kind, rc, err = run_ir(tool, text, seed.args, a.timeout)
        return i, seed, text, what, kind, rc, err

    with ThreadPoolExecutor(a.jobs) as pool:
        for i, seed, text, what, kind, rc, err in pool.map(case, range(a.cases)):
            counts[kind] += 1
            if kind not in OK:
                line = next((l for l in err.splitlines() if "Assertion" in l or "error" in l.lower()),
                            err.strip().splitlines()[0] if err.strip() else f"rc={rc}")
                signatures[f"{kind}: {line[:160]}"] += 1
                a.out.mkdir(parents=True, exist_ok=True)
                (a.out / f"case{i}.mlir").write_text(
                    f"// {kind} rc={rc} seed={seed.source} mutation={what}\n"
                    f"// nova-opt {' '.join(seed.args)}\n{text}\n// stderr:\n"
                    + "".join(f"// {l}\n" for l in err.splitlines()[:40]))
            if (i + 1) % 500 == 0:
                print(f"{i + 1} cases, {time.time() - t0:.0f} s: {dict(counts)}", flush=True)
    print(f"\n{a.cases} cases in {time.time() - t0:.0f} s (seed {a.seed}, {len(seeds)} corpus inputs)")
    for k in ("accepted", "rejected", "crash", "silent", "hang"):
        print(f"  {k:9s} {counts[k]}")
    for sig, n in signatures.most_common(30):
        print(f"  {n:5d}  {sig}")
    return 0 if all(counts[k] == 0 for k in ("crash", "silent", "hang")) else 1


if __name__ == "__main__":
    sys.exit(main())
