#!/usr/bin/env python3
"""Long run of the whole-pipeline fuzzer: random small PyTorch programs compiled
with Nova and compared with torch eager (the generator and the judging are
test/python/reliability/torch_programs.py; the suite runs a few of them in
test_fuzz_torch_programs.py).

Prints the count of each outcome: passed / rejected (a Nova error) / wrong
numbers / crash (a tool or the worker died) / raw (a non-Nova exception) / hang
(over the per-case timeout) / invalid (eager rejects the program: not counted),
then every case that is not passed or rejected, with its file. Case ``i`` of seed
``s`` is always the same program; its source is kept in ``--cases`` for the
failures.

    cd /work/main && PYTHONPATH=python NOVA_TOOLS_DIR=build-py/bin \\
        .venv/bin/python scripts/fuzz_torch_programs.py --count 2000 --seed 0 \\
        --out /tmp/fuzz.jsonl --jobs 2

``--resume`` keeps the results already in ``--out`` and runs the rest. Each job
is a worker process; a worker that dies (or hangs in native code past the
timeout) is restarted after the case it was on, which is recorded as a crash
(or hang).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "test" / "python" / "reliability"))

COUNTED = ("passed", "rejected", "wrong", "crash", "raw", "hang")


def case_source(seed: int, index: int) -> str:
    import torch_programs

    return torch_programs.generate(random.Random(f"{seed}:{index}"), seed=index)


class _Timeout(BaseException):
    """Not an Exception: the case runner's own handlers must not catch it."""


def _alarm(signum, frame):
    raise _Timeout()


def worker(args) -> int:
    """Runs cases ``start, start + jobs, ...`` below ``count``, appending one JSON
    line per case to ``out`` and writing the case in flight to ``out.inflight``."""
    import logging
    import warnings

    import torch_programs

    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)  # torch's guard and export chatter
    cases = Path(args.cases)
    cases.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    inflight = out.with_suffix(out.suffix + ".inflight")
    done = _done(out)
    signal.signal(signal.SIGALRM, _alarm)
    with out.open("a") as sink:
        for index in range(args.start, args.count, args.jobs):
            if index in done:
                continue
            source = case_source(args.seed, index)
            inflight.write_text(f"{index} {time.time()}")
            signal.alarm(args.timeout)
            started = time.time()
            try:
                outcome = torch_programs.run_case(source, cases / f"case{index}.py")
                kind, detail = outcome.kind, outcome.detail
            except _Timeout:
                kind, detail = "hang", f"over the {args.timeout} s timeout"
            finally:
                signal.alarm(0)
            sink.write(json.dumps({"case": index, "kind": kind, "detail": detail,
                                   "seconds": round(time.time() - started, 2)}) + "\n")
            sink.flush()
            inflight.unlink()
            if kind in ("passed", "rejected", "invalid"):
                (cases / f"case{index}.py").unlink(missing_ok=True)
    inflight.unlink(missing_ok=True)
    return 0


def _done(out: Path) -> dict[int, dict]:
    rows = {}
    if out.exists():
        for line in out.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            rows[row["case"]] = row
    return rows


def supervise(args) -> int:
    """One worker per job; a worker that dies or stalls is restarted after its case."""
    out = Path(args.out)
    if not args.resume:
        for job in range(args.jobs):
            for suffix in ("", ".inflight"):
                Path(f"{out}.{job}{suffix}").unlink(missing_ok=True)
    running: dict[int, subprocess.Popen] = {}

    def start(job: int) -> None:
        command = [sys.executable, __file__, "--worker", "--start", str(job),
                   "--jobs", str(args.jobs), "--count", str(args.count), "--seed", str(args.seed),
                   "--timeout", str(args.timeout), "--out", f"{out}.{job}", "--cases", args.cases]
        running[job] = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    for job in range(args.jobs):
        start(job)
    while running:
        time.sleep(2)
        for job, proc in list(running.items()):
            part = Path(f"{out}.{job}")
            inflight = Path(f"{part}.inflight")
            code = proc.poll()
            stalled = False
            if code is None and inflight.exists():
                try:
                    index, since = inflight.read_text().split()
                    stalled = time.time() - float(since) > args.timeout + 60
                except ValueError:
                    pass
                if stalled:
                    proc.kill()
                    proc.wait()
                    code = proc.returncode
            if code is None:
                continue
            del running[job]
            if inflight.exists():  # died (or was killed) inside a case
                index = int(inflight.read_text().split()[0])
                how = ("hang", f"no progress for {args.timeout + 60} s (native code)") if stalled \
                    else ("crash", f"worker died with status {code}" +
                          (f" ({signal.Signals(-code).name})" if code < 0 else ""))
                with part.open("a") as sink:
                    sink.write(json.dumps({"case": index, "kind": how[0], "detail": how[1]}) + "\n")
                inflight.unlink()
                start(job)
            elif code != 0:
                print(f"worker {job} failed with status {code}", file=sys.stderr)
    rows = {}
    for job in range(args.jobs):
        rows.update(_done(Path(f"{out}.{job}")))
    with out.open("w") as sink:
        for index in sorted(rows):
            sink.write(json.dumps(rows[index]) + "\n")
    summarize(rows, args)
    return 0


def summarize(rows: dict[int, dict], args) -> None:
    counts = collections.Counter(row["kind"] for row in rows.values())
    counted = sum(counts[k] for k in COUNTED)
    print(f"{counted} cases (seed {args.seed}; {counts['invalid']} invalid programs not counted)")
    for kind in COUNTED:
        print(f"  {kind:9s} {counts[kind]:6d}")
    reasons = collections.Counter(row["detail"].split(":", 2)[-1].strip()[:90]
                                  for row in rows.values() if row["kind"] == "rejected")
    if reasons:
        print("top rejections:")
        for reason, n in reasons.most_common(8):
            print(f"  {n:5d}  {reason}")
    bad = [row for row in rows.values() if row["kind"] in ("wrong", "crash", "raw", "hang")]
    for row in sorted(bad, key=lambda r: (r["kind"], r["case"])):
        print(f"{row['kind']:6s} case {row['case']}: {row['detail']}  ({args.cases}/case{row['case']}.py)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=int, default=120, help="seconds per case")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default="/tmp/nova-fuzz-torch.jsonl")
    parser.add_argument("--cases", default="/tmp/nova-fuzz-torch-cases")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.count < 1 or args.jobs < 1 or args.timeout < 1:
        parser.error("--count, --jobs and --timeout must be positive")
    os.environ.setdefault("NOVA_SIM_MAX_INSTRUCTIONS", str(10**8))
    return worker(args) if args.worker else supervise(args)


if __name__ == "__main__":
    sys.exit(main())
