"""Pipeline-parallel training: measured bubble fraction and step time.

A decoder-only ``nova.models.GPT`` (no vocabulary: activations in, an MSE
loss on the output) of 8 blocks, d_model --d, seq 16, micro-batches of
--mb sequences, cut into p balanced stages (8 / p blocks each; ``ln_f`` and
the loss go with the last), trained with AdamW under 1F1B (and GPipe with
--gpipe, Megatron's interleaved 1F1B with --interleaved V: V chunks of
8 / (p V) blocks per chip) for p = 2, 4 and m = 4, 8 on nova-t1. Per
configuration: the simulated step time, the measured bubble
(``PipelineTrainStep.bubble()``: ``1 - W_c / T`` averaged over the chips,
``W_c`` the time chip ``c`` takes for the same bodies with no
communication) next to ``(p - 1) / (v m + p - 1)`` (``v = 1`` without
interleaving), and the one-chip step of the same batch for comparison.

    python benchmarks/pipeline_train.py [--d 64] [--mb 2] [--gpipe] [--recompute]
                                        [--interleaved 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import torch  # noqa: E402

import nova  # noqa: E402
from nova.models import GPT  # noqa: E402
from nova.models.gpt import GPTConfig  # noqa: E402
from nova.training.pipeline_train import compile_pipeline_train_step  # noqa: E402


def mse(y, target):
    return ((y - target) ** 2).mean()


def measure(p: int, m: int, d: int, mb: int, schedule: str, target: str = "nova-t1",
            layers: int = 8, one_chip: bool = False, recompute: bool = False,
            virtual: int = 1) -> dict:
    cfg = GPTConfig(d_model=d, n_heads=4, n_layers=layers, seq_len=16)
    torch.manual_seed(0)
    model = GPT(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(m * mb, cfg.seq_len, d)
    y = torch.randn(m * mb, cfg.seq_len, d)
    t0 = time.perf_counter()
    step = compile_pipeline_train_step(model, mse, optimizer, x, y, stages=p, microbatches=m,
                                       schedule=schedule, target=target, recompute=recompute,
                                       virtual_stages=virtual)
    compile_s = time.perf_counter() - t0
    bubble = step.bubble()
    row = {"p": p, "m": m, "v": virtual, "schedule": schedule, "step_us": bubble["step_ns"] / 1e3,
           "bubble": bubble["measured"], "ideal": bubble["ideal"],
           "per_chip": bubble["per_chip"], "compile_s": compile_s}
    if one_chip:
        single = nova.compile_train_step(model, mse, optimizer, x, y, target=target)
        row["one_chip_us"] = single.time_step().time_ns / 1e3
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--mb", type=int, default=2, help="sequences per micro-batch")
    parser.add_argument("--gpipe", action="store_true", help="GPipe rows too")
    parser.add_argument("--recompute", action="store_true",
                        help="recompute each stage's forward in its backward")
    parser.add_argument("--interleaved", type=int, metavar="V", default=None,
                        help="interleaved 1F1B rows with V virtual stages (chunks) per chip")
    parser.add_argument("--stages", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--microbatches", type=int, nargs="+", default=[4, 8])
    args = parser.parse_args(argv)
    schedules = [("1f1b", 1)] + ([("gpipe", 1)] if args.gpipe else [])
    if args.interleaved:
        schedules.append(("1f1b", args.interleaved))
    print(f"GPT 8 blocks d {args.d} seq 16, {args.mb} sequences per micro-batch, AdamW, nova-t1, "
          f"{'recomputed' if args.recompute else 'saved'} activations")
    print(f"{'sched':>6} {'p':>2} {'v':>2} {'m':>2} {'step us':>10} {'1-chip us':>10} "
          f"{'bubble':>8} {'(p-1)/(vm+p-1)':>15} {'diff pp':>8} {'compile s':>9}  per chip")
    for schedule, v in schedules:
        for p in args.stages:
            for m in args.microbatches:
                r = measure(p, m, args.d, args.mb, schedule, recompute=args.recompute,
                            one_chip=schedule == "1f1b" and v == 1, virtual=v)
                one = f"{r['one_chip_us']:10.1f}" if "one_chip_us" in r else f"{'':>10}"
                chips = " ".join(f"{b:.3f}" for b in r["per_chip"])
                name = schedule if v == 1 else "interl"  # interleaved 1F1B
                print(f"{name:>6} {p:>2} {v:>2} {m:>2} {r['step_us']:10.1f} {one} "
                      f"{r['bubble']:8.1%} {r['ideal']:15.1%} "
                      f"{100 * (r['bubble'] - r['ideal']):+8.1f} {r['compile_s']:9.1f}  "
                      f"{chips}", flush=True)


if __name__ == "__main__":
    main()
