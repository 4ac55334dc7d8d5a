"""Timing-only mode at GPT-2 small's real size: Hugging Face GPT2LMHeadModel
(124M parameters, random weights) from 1 x 1024 token ids on one nova-t1 chip,
functional vs timing-only wall time (warm runs, best of --repeat, one run of
this script), and the same model data parallel on 8 chips at batch 8 x 1024
in timing-only mode only (its functional run would need ~8 GB of simulated
HBM and minutes), with its wall time and the process's peak RSS.

    python benchmarks/timing_only_scale.py [--repeat 3] [--skip-functional]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch  # noqa: E402

import nova  # noqa: E402
from nova.parallel import Mesh, compile_parallel, data_parallel_plan  # noqa: E402
from nova.sim import fast_timing  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from yardstick import best_of  # noqa: E402


def gpt2_small():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(use_cache=False)).eval()


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-functional", action="store_true")
    args = parser.parse_args()
    print(f"event loop for timing-only runs: {'compiled' if fast_timing.available() else 'Python'}")
    model = gpt2_small()
    ids = torch.randint(0, model.config.vocab_size, (1, 1024))

    t0 = time.perf_counter()
    program = nova.compile(model, ids, target="nova-t1")
    print(f"1 chip: compiled in {time.perf_counter() - t0:.1f} s", flush=True)
    program.run(timing_only=True)  # decode + walk the streams
    program.run(timing_only=True)  # prepare them for the compiled loop
    t_timing = best_of(lambda: program.run(timing_only=True), args.repeat)
    rt = program.report
    print(f"1 chip timing-only: {t_timing:.3f} s wall (best of {args.repeat}), {rt.time_s * 1e3:.3f} ms "
          f"simulated, {rt.instructions} dynamic instructions")
    if not args.skip_functional:
        program(ids)  # uploads the weights
        t_sim = best_of(lambda: program(ids), args.repeat)
        rf = program.report
        same = rf.time_ns == rt.time_ns
        print(f"1 chip functional: {t_sim:.2f} s wall (best of {args.repeat}), "
              f"{'identical' if same else 'DIFFERENT'} simulated time; timing-only is "
              f"{t_sim / t_timing:.1f}x faster (target >= 20x)")

    batch = torch.randint(0, model.config.vocab_size, (8, 1024))
    t0 = time.perf_counter()
    dp = compile_parallel(model, batch, mesh=Mesh((8,), ("dp",)), plan=data_parallel_plan("dp"),
                          target="nova-t1")
    print(f"8 chips DP: compiled in {time.perf_counter() - t0:.1f} s", flush=True)
    t0 = time.perf_counter()
    dp.run(timing_only=True)
    t_dp = time.perf_counter() - t0
    r8 = dp.report
    print(f"8 chips DP timing-only (batch 8 x 1024): {t_dp:.2f} s wall (first run), "
          f"{r8.time_s * 1e3:.3f} ms simulated, {r8.instructions} dynamic instructions, "
          f"peak RSS {peak_rss_gb():.2f} GB")


if __name__ == "__main__":
    main()
