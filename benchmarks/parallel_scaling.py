"""Simulated step time of a GPT forward pass on 1 to 8 chips under data
parallelism (``data_parallel_plan``), Megatron tensor parallelism
(``megatron_transformer_plan``) and one DP x TP mesh, with speedup and
parallel efficiency against one chip. The model and the global batch are
fixed (strong scaling) and the same for every row, so the tables compare.

Every plan goes through the shard dialect: the host runtime splits the
inputs and puts the outputs back together, the program each chip runs is
the partitioned SPMD program (with its all-reduces for tensor parallelism).
Every run is checked against torch eager (rtol 1e-4, atol 1e-5); that is a
correctness check, nothing here asserts on time.

The "chip 0 busy" columns are the busy time of chip 0's engine queues
(``Report.busy``; dma sums the dma queues). Engines overlap, so they do not
add up to the step; all chips of an SPMD run are (nearly) alike.

Usage: python benchmarks/parallel_scaling.py [--target T ...]
       (default: nova-t1 (switch) and nova-t1-ring8 (ring))
       [--d-model 768 --heads 16 --layers 4 --seq 128 --batch 8 --chips 8 --tables dp sp]
       (issue 16's sizing: d 768, 16 heads, 4 layers, batch 8 x seq 128, 8 chips,
       data parallelism and TP with sequence parallelism only)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "python")]

import torch  # noqa: E402

import nova  # noqa: E402
from nova.models.gpt import GPT, GPTConfig  # noqa: E402
from nova.parallel import (Mesh, compile_parallel, data_parallel_plan,  # noqa: E402
                           megatron_transformer_plan)

CONFIG = GPTConfig(d_model=256, n_heads=8, n_layers=2, seq_len=64)
BATCH = 8
CHIPS = (1, 2, 4, 8)
RTOL, ATOL = 1e-4, 1e-5

HEADER = ("| chips | mesh | simulated step (us) | speedup | efficiency | all-reduces "
          "| max err vs torch | chip 0 busy (us): matrix / vector / dma / collective |\n"
          "|---:|---|---:|---:|---:|---:|---:|---|")


class Run:
    """One compiled and simulated configuration."""

    def __init__(self, program, got: torch.Tensor, expected: torch.Tensor, seconds: float):
        report = program.report
        self.step_s = report.time_s
        self.all_reduces = program.stages["nova"].count("nova.all_reduce")
        self.max_err = (got - expected).abs().max().item()
        self.busy = [report.busy(engine, 0) for engine in ("matrix", "vector", "dma", "collective")]
        self.seconds = seconds

    def row(self, chips: int, mesh: str, base: float) -> str:
        speedup = base / self.step_s
        busy = " / ".join(f"{b * 1e-3:.1f}" for b in self.busy)
        return (f"| {chips} | {mesh} | {self.step_s * 1e6:.2f} | {speedup:.2f}x "
                f"| {100 * speedup / chips:.0f}% | {self.all_reduces} | {self.max_err:.1e} "
                f"| {busy} |")


def run(model, x, expected, *, shape, names, plan, target) -> Run:
    start = time.perf_counter()
    program = compile_parallel(model, x, mesh=Mesh(shape, names), plan=plan, target=target)
    got = program(x)
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    return Run(program, got, expected, time.perf_counter() - start)


TABLES = ("dp", "tp", "sp", "dptp")


def main(targets: list[str], config: GPTConfig = CONFIG, batch: int = BATCH,
         chip_counts: tuple[int, ...] = CHIPS[1:], tables_run: tuple[str, ...] = TABLES) -> None:
    wall = time.perf_counter()
    torch.manual_seed(0)
    model = GPT(config).eval()
    x = torch.randn(batch, config.seq_len, config.d_model)
    with torch.no_grad():
        expected = model(x)
    print(f"GPT {config}, global batch {batch}, forward pass, strong scaling")

    # One chip: the same on every target (a ring needs two chips), so it is
    # measured once, on nova-t1, and is the baseline of every table.
    single = nova.compile(model, x, target="nova-t1")
    got = single(x)
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    one = run(model, x, expected, shape=(1,), names=("dp",), plan=data_parallel_plan("dp"),
              target="nova-t1")
    print(f"1 chip: nova.compile {single.report.time_s * 1e6:.2f} us, compile_parallel on "
          f"Mesh((1,), ('dp',)) {one.step_s * 1e6:.2f} us; the tables use the latter")
    base = one.step_s

    failures: list[str] = []
    for target in targets:
        tables = {
            "data parallel (data_parallel_plan('dp'))": ("dp", [
                ((chips,), ("dp",), data_parallel_plan("dp")) for chips in chip_counts]),
            "tensor parallel (megatron_transformer_plan(model, axis='tp'))": ("tp", [
                ((chips,), ("tp",), megatron_transformer_plan(model, axis="tp"))
                for chips in chip_counts]),
            "TP + sequence parallelism (megatron_transformer_plan(model, axis='tp', "
            "sequence_parallel=True))": ("sp", [
                ((chips,), ("tp",),
                 megatron_transformer_plan(model, axis="tp", sequence_parallel=True))
                for chips in chip_counts]),
            "DP x TP (megatron_transformer_plan(model, axis='tp', batch_axis='dp'))": ("dptp", [
                ((2, 4), ("dp", "tp"),
                 megatron_transformer_plan(model, axis="tp", batch_axis="dp"))]),
        }
        tables = {title: configs for title, (key, configs) in tables.items()
                  if key in tables_run}
        for title, configs in tables.items():
            print(f"\n{target}: {title}")
            print(HEADER)
            if "DP x TP" not in title:
                print(one.row(1, "1 (nova-t1)", base))
            for shape, names, plan in configs:
                chips = 1
                for n in shape:
                    chips *= n
                mesh = " x ".join(f"{n} {a}" for n, a in zip(shape, names))
                try:
                    result = run(model, x, expected, shape=shape, names=names, plan=plan,
                                 target=target)
                except AssertionError:  # a wrong result is an error, not a missing row
                    raise
                except Exception as error:  # a configuration that does not compile
                    message = f"{target} {title} {mesh}: {type(error).__name__}: {error}"
                    failures.append(message)
                    print(f"| {chips} | {mesh} | failed: see below | | | | | |", flush=True)
                    continue
                print(f"{result.row(chips, mesh, base)}   (compile+run {result.seconds:.1f} s)",
                      flush=True)
    for message in failures:
        print(f"\nFAILED {message}")
    print(f"\nwall time {time.perf_counter() - wall:.1f} s")
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", action="append", dest="targets",
                        help="nova-t1 (switch) or nova-t1-ring8 (ring); repeatable")
    parser.add_argument("--d-model", type=int, default=CONFIG.d_model)
    parser.add_argument("--heads", type=int, default=CONFIG.n_heads)
    parser.add_argument("--layers", type=int, default=CONFIG.n_layers)
    parser.add_argument("--seq", type=int, default=CONFIG.seq_len)
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--chips", type=int, nargs="*", default=list(CHIPS[1:]))
    parser.add_argument("--tables", nargs="*", choices=TABLES, default=list(TABLES))
    args = parser.parse_args()
    cfg = GPTConfig(d_model=args.d_model, n_heads=args.heads, n_layers=args.layers,
                    seq_len=args.seq)
    main(args.targets or ["nova-t1", "nova-t1-ring8"], cfg, args.batch, tuple(args.chips),
         tuple(args.tables))
