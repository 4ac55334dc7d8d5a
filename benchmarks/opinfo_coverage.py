#!/usr/bin/env python3
"""OpInfo conformance: PyTorch's OpInfo database through Nova, against eager.

Every OpInfo of ``torch.testing._internal.common_methods_invocations.op_db``,
in float32 and, where its CPU dtypes include them, bfloat16, int64 and bool;
its first ``--samples`` sample inputs each become a small module taking the
sample's tensors as inputs (every other argument baked in). A sample is
first lowered by torch-mlir's own ``fx.export_and_import(...,
output_type="linalg-on-tensors")`` with its default decompositions: when that
fails the sample is ``notlowerable`` and not counted against Nova. Otherwise
it goes through Nova's export, is compiled for ``nova-t1``, run on the
simulator and compared with eager (the OpInfo's own tolerances for the dtype
where it sets them, else rtol 1e-4 / atol 1e-5 for float32 and torch's
defaults for bfloat16; integers and bool exactly). Classes: pass, wrong
(numbers), compile (Nova's export or compiler), sim (simulator or runtime),
notlowerable; samples that cannot be a program (non-tensor outputs, sparse
inputs) and random or uninitialized ops are ``skip``.

    PYTHONPATH=python NOVA_TOOLS_DIR=build-py/bin .venv/bin/python \\
        benchmarks/opinfo_coverage.py --shard 0/2 --out /tmp/opinfo0.json &
    ... --shard 1/2 --out /tmp/opinfo1.json; wait
    ... benchmarks/opinfo_coverage.py --merge /tmp/opinfo0.json /tmp/opinfo1.json \\
        --out /tmp/opinfo.json --doc docs/coverage.md

Options: ``--ops add,mul`` (OpInfo names, ``name.variant`` for variants),
``--dtypes float32,int64``, ``--limit N``, ``--every K``, ``--samples K`` (3),
``--timeout S`` (per sample, 60), ``--shard I/N`` (the I-th of N interleaved
slices of the ops), ``--merge`` (join shards), ``--resume`` (skip what --out
already holds), ``--doc PATH`` (write the generated part of the coverage page).
Results are rewritten to ``--out`` after each op and dtype. Needs ``expecttest``.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from opinfo_runner import ops as opsmod  # noqa: E402
from opinfo_runner import report, sweep  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _commit() -> str:
    def git(*args):
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True,
                              text=True).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "python", "benchmarks")
    return commit + ("+uncommitted changes" if dirty else "")


def _command(argv: list[str]) -> str:
    kept = [a for a in argv if a not in ("--worker", "--resume")]
    return "benchmarks/opinfo_coverage.py " + " ".join(shlex.quote(a) for a in kept)


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results")
    parser.add_argument("--ops", help="comma-separated OpInfo names")
    parser.add_argument("--dtypes", default=",".join(opsmod.DTYPES),
                        help="comma-separated, of " + ", ".join(opsmod.DTYPES))
    parser.add_argument("--limit", type=int, help="number of OpInfos")
    parser.add_argument("--every", type=int, default=1, help="every K-th OpInfo")
    parser.add_argument("--samples", type=int, default=3, help="samples per OpInfo and dtype")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per sample")
    parser.add_argument("--shard", help="I/N: the I-th of N interleaved slices of the ops")
    parser.add_argument("--resume", action="store_true", help="skip ops already in --out")
    parser.add_argument("--merge", nargs="+", type=Path, help="join these outputs into --out")
    parser.add_argument("--doc", type=Path, help="write the coverage page (docs/coverage.md)")
    parser.add_argument("-q", "--quiet", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    bad = set(args.dtypes.split(",")) - set(opsmod.DTYPES)
    if bad:
        parser.error(f"unknown dtypes {sorted(bad)}; choose from {list(opsmod.DTYPES)}")
    return args


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)

    if args.merge:
        data = sweep.merge(args.merge)
        data["meta"]["merge_command"] = _command(argv)
        if args.out:
            sweep.save(args.out, data)
        report.summarize(data["results"])
        if args.doc:
            report.write_doc(args.doc, data["results"], data["meta"])
        return 0

    if args.out is None:
        args.out = Path("/tmp/opinfo_coverage.json")
        argv += ["--out", str(args.out)]
    if not args.worker:
        # The sweep runs in one worker process (no process per sample); a
        # native crash (torch-mlir's SIGFPE on some zero-size samples) kills
        # it, and the supervisor records the sample and starts it again.
        code = sweep.supervise(str(Path(__file__).resolve()), argv, args.out)
        if code == 0 and args.out.exists():
            data = sweep.load(args.out)
            report.summarize(data["results"])
            if args.doc:
                report.write_doc(args.doc, data["results"], data["meta"])
        return code

    import torch

    warnings.simplefilter("ignore")
    ops = opsmod.select(opsmod.all_ops(), args.ops, args.every, args.shard, args.limit)
    meta = {"torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
            "commit": _commit(), "samples_per_op": args.samples, "timeout_s": args.timeout,
            "dtypes": args.dtypes.split(","), "command": _command(argv),
            "excluded": opsmod.EXCLUDED}
    return sweep.run_worker(ops, args.dtypes.split(","), args, meta)


if __name__ == "__main__":
    sys.exit(main())
