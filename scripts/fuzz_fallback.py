#!/usr/bin/env python3
"""Long run of the fuzzer of torch.compile(backend="nova")'s per-op fallback in
training (the generator and the judging are test/python/dynamo/fallback_programs.py;
the suite runs a few cases in test_fuzz_fallback.py).

Prints the count of passed and failed cases, by where the ops Nova cannot lower
sit (forward, backward, both), then each failure with its program.

    PYTHONPATH=python NOVA_TOOLS_DIR=... .venv/bin/python scripts/fuzz_fallback.py --cases 2000
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "python" / "dynamo"))

from fallback_programs import check, make_case  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="first case index")
    args = parser.parse_args()
    counts: collections.Counter[str] = collections.Counter()
    failures = []
    began = time.time()
    for index in range(args.start, args.start + args.cases):
        case = make_case(args.seed, index)
        where = "+".join(sorted(case.placement))
        problem = check(case, index)
        counts["passed" if problem is None else "failed"] += 1
        counts[f"{where}: {'passed' if problem is None else 'failed'}"] += 1
        if problem is not None:
            failures.append((index, problem, case.describe()))
            print(f"case {index} FAILED: {problem}\n  {case.describe()}", flush=True)
        if (index - args.start + 1) % 50 == 0:
            print(f"{index - args.start + 1} cases, {counts['failed']} failed, "
                  f"{time.time() - began:.0f} s", flush=True)
    print(f"\n{args.cases} cases (seed {args.seed}, from {args.start}) in "
          f"{time.time() - began:.0f} s")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
