#!/usr/bin/env python3
"""Long fuzz run of Nova's binary loader, simulator and program archives.

    scripts/fuzz_binaries.py CASES SEED [--kind binary|archive|both] [--timeout S]
                             [--programs DIR]

Each case is a mutant derived deterministically from (SEED, kind, case index):
binaries (the test vectors and a compiled MLP) get byte flips, byte and word
overwrites and truncations with the CRC recomputed; archives (a saved 1-chip and a
2-chip program) get raw damage, truncation, dropped, recompressed or mutated members.
Mutants run in a worker process under a per-case timeout (``hang``) that is
restarted if it dies (``crash``) and may not allocate more than 8 GiB of address
space; see test/python/runtime/fuzzing.py for the outcomes. Prints the counts by
outcome per kind and the first failures; exits 1 if there was any failure.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "test" / "python" / "runtime"))

import fuzzing  # noqa: E402

ADDRESS_SPACE_LIMIT = 8 << 30


def _seeds(workdir: Path, programs_dir: Path | None
           ) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    names = ("mlp.nova", "mlp.novaprog", "mlp_tp2.novaprog")
    if programs_dir is not None and all((programs_dir / n).is_file() for n in names):
        programs = {n: programs_dir / n for n in names}  # compiled by an earlier run
    else:
        out = programs_dir or workdir
        out.mkdir(parents=True, exist_ok=True)
        programs = fuzzing.build_programs(out)
    binaries = [(p.name, p.read_bytes()) for p in sorted(fuzzing.VECTORS.glob("*.nova"))]
    binaries.append(("mlp.nova", programs["mlp.nova"].read_bytes()))
    archives = [(n, programs[n].read_bytes()) for n in ("mlp.novaprog", "mlp_tp2.novaprog")]
    return binaries, archives


def case(kind: str, seed: int, index: int, seeds: list[tuple[str, bytes]]) -> tuple[str, bytes, str]:
    rng = random.Random(f"{seed}:{kind}:{index}")
    name, data = seeds[rng.randrange(len(seeds))]
    mutate = fuzzing.mutate_binary if kind == "binary" else fuzzing.mutate_archive
    mutant, what = mutate(data, rng)
    return name, mutant, what


def _worker(conn, kind: str, seed: int, seeds: list[tuple[str, bytes]], workdir: str) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))
    references: dict[str, dict] = {}
    while True:
        index = conn.recv()
        if index is None:
            return
        name, mutant, what = case(kind, seed, index, seeds)
        if kind == "binary":
            if name not in references:
                references[name] = fuzzing.reference_outputs(dict(seeds)[name])
            outcome, detail = fuzzing.run_binary(mutant, references[name])
        else:
            outcome, detail = fuzzing.run_archive(mutant, Path(workdir))
        fault = detail.split(":")[0] if outcome == "faulted" else ""
        conn.send((index, outcome, f"{name}: {what}: {detail}"[:2000], fault))


class _Pool:
    """One worker process; restarted after a hang or a crash."""

    def __init__(self, *args) -> None:
        self.args = args
        self.start()

    def start(self) -> None:
        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child,) + self.args, daemon=True)
        self.proc.start()

    def run(self, index: int, timeout: float) -> tuple[str, str, str]:
        try:
            self.conn.send(index)
            if self.conn.poll(timeout):
                _, outcome, detail, fault = self.conn.recv()
                return outcome, detail, fault
            outcome, detail = "hang", f"case {index}: no answer in {timeout} s"
        except (EOFError, OSError, BrokenPipeError):
            outcome, detail = "crash", f"case {index}: worker died"
        self.proc.kill()
        self.proc.join()
        if outcome == "crash" or self.proc.exitcode not in (None, -9):
            detail += f" (exit code {self.proc.exitcode})"
        self.start()
        return outcome, detail, ""

    def close(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()


def fuzz(kind: str, cases: int, seed: int, seeds, timeout: float, workdir: Path) -> dict:
    pool = _Pool(kind, seed, seeds, str(workdir))
    counts: dict[str, int] = {}
    faults: dict[str, int] = {}
    failures: list[str] = []
    start = time.monotonic()
    try:
        for index in range(cases):
            outcome, detail, fault = pool.run(index, timeout)
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome in fuzzing.FAILURES:
                failures.append(f"[{kind} case {index}] {outcome}: {detail}")
            if fault:  # which Nova fault, for the breakdown
                faults[fault] = faults.get(fault, 0) + 1
            if (index + 1) % 1000 == 0:
                print(f"  {kind}: {index + 1}/{cases} ({time.monotonic() - start:.0f} s) {counts}",
                      file=sys.stderr, flush=True)
    finally:
        pool.close()
    return {"counts": counts, "faults": faults, "failures": failures,
            "seconds": time.monotonic() - start}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("cases", type=int, help="mutants per kind")
    parser.add_argument("seed", type=int)
    parser.add_argument("--kind", choices=("binary", "archive", "both"), default="both")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per case")
    parser.add_argument("--programs", type=Path, default=None,
                        help="folder to keep the compiled seed programs in (reused if present)")
    args = parser.parse_args(argv)
    os.environ.update(fuzzing.SIM_ENV)
    kinds = ("binary", "archive") if args.kind == "both" else (args.kind,)
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        binaries, archives = _seeds(Path(tmp), args.programs)
        for kind in kinds:
            seeds = binaries if kind == "binary" else archives
            result = fuzz(kind, args.cases, args.seed, seeds, args.timeout, Path(tmp))
            counts = result["counts"]
            print(f"{kind} mutants: {args.cases} (seed {args.seed}, "
                  f"{result['seconds']:.0f} s, seeds {', '.join(n for n, _ in seeds)})")
            order = ["rejected", "ran", "ran-differs", "faulted", *fuzzing.FAILURES]
            for outcome in order + sorted(set(counts) - set(order)):
                print(f"  {outcome:12s} {counts.get(outcome, 0)}")
            for fault, n in sorted(result["faults"].items(), key=lambda kv: -kv[1]):
                print(f"      faulted with {fault}: {n}")
            for line in result["failures"][:10]:
                print(line, file=sys.stderr)
            failed |= bool(result["failures"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
