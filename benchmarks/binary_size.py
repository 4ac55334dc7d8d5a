"""Binary size, static instruction count, compile time and simulated time of the
GPT forward at 1, 2, 4 and 12 layers, with identical layers sharing their code
(nova-roll-layers, the default) and without it (``NOVA_ROLL_LAYERS=0``).

GPT-2 small's shape as the other benchmarks measure it (benchmarks/roofline.py,
benchmarks/gpt2_sim_speed.py): ``models.GPT``, d_model 768, 12 heads, seq 128,
batch 1, activations in and out, on nova-t1. Simulated time is a timing-only run
(the numbers are checked against torch eager in test/python/compiler/test_roll_layers.py).
With ``--hf`` it also compiles Hugging Face ``GPT2LMHeadModel`` at GPT-2 small's
width from a small config (vocabulary 1024, 64 positions, seq 64) at the same depths.

Usage: python benchmarks/binary_size.py [--layers 1 2 4 12] [--no-baseline] [--hf]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import torch  # noqa: E402

import nova  # noqa: E402
from nova import models  # noqa: E402


def measure(model: torch.nn.Module, x: torch.Tensor, roll: bool) -> dict[str, float]:
    os.environ["NOVA_ROLL_LAYERS"] = "1" if roll else "0"
    t0 = time.perf_counter()
    program = nova.compile(model, x, target="nova-t1")
    compile_s = time.perf_counter() - t0
    binary = program.binary
    program.run(x, timing_only=True)
    return {"bytes": len(program.stages["binary"]),
            "instructions": sum(len(p) for p in binary.programs),
            "compile_s": compile_s,
            "sim_us": program.report.time_s * 1e6}


def gpt(layers: int) -> tuple[torch.nn.Module, torch.Tensor]:
    cfg = models.GPTConfig(d_model=768, n_heads=12, n_layers=layers, seq_len=128)
    torch.manual_seed(0)
    return models.GPT(cfg).eval(), torch.randn(1, cfg.seq_len, cfg.d_model)


def hf_gpt2(layers: int) -> tuple[torch.nn.Module, torch.Tensor]:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=layers, n_embd=768, n_head=12, vocab_size=1024,
                        n_positions=64, attn_implementation="eager")
    model = GPT2LMHeadModel(config).eval()
    return model, torch.randint(0, config.vocab_size, (1, 64))


def table(title: str, build, layer_counts: list[int], baseline: bool) -> None:
    print(f"{title}", flush=True)
    print("| layers | binary bytes | instructions | compile s | simulated us "
          "| straight-line bytes | instructions | compile s | simulated us |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rolled = {}
    for n in layer_counts:
        model, x = build(n)
        r = measure(model, x, roll=True)
        rolled[n] = r
        row = (f"| {n} | {r['bytes']} | {r['instructions']} | {r['compile_s']:.1f} "
               f"| {r['sim_us']:.1f} |")
        if baseline:
            s = measure(model, x, roll=False)
            row += (f" {s['bytes']} | {s['instructions']} | {s['compile_s']:.1f} "
                    f"| {s['sim_us']:.1f} |")
        else:
            row += " | | | |"
        print(row, flush=True)
    lo, hi = min(layer_counts), max(layer_counts)
    print(f"binary bytes {hi} layers / {lo} layer(s): "
          f"{rolled[hi]['bytes'] / rolled[lo]['bytes']:.2f}x; instructions "
          f"{rolled[hi]['instructions'] / rolled[lo]['instructions']:.2f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="*", default=[1, 2, 4, 12])
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the straight-line (NOVA_ROLL_LAYERS=0) compiles")
    parser.add_argument("--hf", action="store_true",
                        help="also Hugging Face GPT2LMHeadModel from a small config")
    args = parser.parse_args()
    table("models.GPT, d_model 768, 12 heads, seq 128 (GPT-2 small's shape), nova-t1",
          gpt, args.layers, not args.no_baseline)
    if args.hf:
        table("Hugging Face GPT2LMHeadModel, n_embd 768, 12 heads, vocab 1024, seq 64",
              hf_gpt2, args.layers, not args.no_baseline)


if __name__ == "__main__":
    main()
