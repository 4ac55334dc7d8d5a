"""Pipeline parallelism of the GPT: simulated time on 1 chip vs PP=2 x M.

    PYTHONPATH=python NOVA_TOOLS_DIR=build/bin python benchmarks/pipeline_parallel.py

Prints, per target, the 1-chip simulated time of the whole batch, the PP=2
time with M microbatches (GPipe forward), the speedup, and max |err| vs torch.
"""

from __future__ import annotations

import argparse

import torch

import nova
from nova.models.gpt import GPT, GPTConfig
from nova.parallel.pipeline import compile_pipeline, split_gpt


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--targets", nargs="+", default=["nova-t1", "nova-t1-ring8"])
    args = parser.parse_args()
    torch.manual_seed(0)
    cfg = GPTConfig(d_model=args.d_model, n_heads=4, n_layers=args.layers, seq_len=args.seq)
    model = GPT(cfg).eval()
    m = args.microbatches
    x = torch.randn(m, args.seq, args.d_model)
    with torch.no_grad():
        expected = model(x)
    for target in args.targets:
        # A ring needs 2+ chips: the 1-chip baseline then runs the whole model
        # on each chip (SPMD copies, no communication): one chip's time.
        single = nova.compile(model, x, target=target, chips=2 if "ring" in target else 1)
        single(x)
        t1 = single.report.time_s
        program = compile_pipeline(split_gpt(model), x, microbatches=m, target=target)
        y = program(x)
        tp = program.report.time_s
        err = (y - expected).abs().max().item()
        print(f"{target:14s} layers={args.layers} batch={m}: 1 chip {t1 * 1e6:9.2f} us | "
              f"PP=2 x M={m} {tp * 1e6:9.2f} us | speedup {t1 / tp:4.2f}x | max|err| {err:.2e}")


if __name__ == "__main__":
    main()
