"""Simulated time / roofline bound on nova-t1 for a big matmul and the GPT block.

Prints report.roofline_fraction (bound from the work / simulated time, the bound's
three terms and the actual HBM traffic beside the compulsory bytes) and its inverse
(how many times slower than the roofline the compiled program runs), plus the
compile and simulation wall times. A matmul size whose simulation would take
much longer than ~2 minutes on this machine can be skipped with --sizes.
GPT-2 small's forward (12 layers, d 768, 12 heads, seq 128) is measured at
each --gpt2-batches size in timing-only mode (its simulated time is the
functional run's, test_fast_timing.py). With --dtypes bf16 (default: f32 and
bf16) the matmuls and GPT-2 small run in bf16 too (weights and inputs bf16:
the matrix unit's bf16 rate, bound at the bf16 peak). Usage:
python benchmarks/roofline.py [--sizes 512 1024 2048] [--no-gpt] [--gpt2-batches 1 8] [--dtypes f32 bf16]
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
from nova import models  # noqa: E402


class MatMul(torch.nn.Module):
    """``x @ w`` with ``w`` a bound parameter."""

    def __init__(self, k: int, n: int) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(k, n) / k ** 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w


def measure(name: str, model: torch.nn.Module, x: torch.Tensor, timing_only: bool = False) -> None:
    t0 = time.perf_counter()
    program = nova.compile(model, x, target="nova-t1")
    t_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    program.run(x, timing_only=timing_only)
    t_sim = time.perf_counter() - t0
    r = program.report
    print(f"{name}: simulated {r.time_s * 1e6:.1f} us, roofline {r.roofline_ns / 1e3:.1f} us, "
          f"roofline_fraction {r.roofline_fraction:.3f} (sim / roofline = "
          f"{1 / r.roofline_fraction:.2f}x), {r.flops:.3e} FLOPs, {r.instructions} instructions; "
          f"compile {t_compile:.1f} s, simulate {t_sim:.1f} s wall", flush=True)
    b = r.bound()
    print(f"  bound from the work ({b.limiter}): matrix {b.matrix_ns / 1e3:.1f} us, vector "
          f"{b.vector_ns / 1e3:.1f} us, hbm {b.hbm_ns / 1e3:.1f} us ({b.compulsory_bytes / 1e6:.2f} MB "
          f"compulsory, {b.hbm_bytes / 1e6:.2f} MB moved = {b.hbm_bytes / b.compulsory_bytes:.2f}x)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[512, 1024, 2048])
    parser.add_argument("--no-gpt", action="store_true")
    parser.add_argument("--gpt2-batches", type=int, nargs="*", default=[1, 8])
    parser.add_argument("--dtypes", nargs="*", choices=["f32", "bf16"], default=["f32", "bf16"])
    args = parser.parse_args()
    torch.manual_seed(0)
    if not args.no_gpt:
        cfg = models.GPTConfig(d_model=256, n_heads=4, seq_len=64)
        measure(f"GPT block {cfg}", models.GPTBlock(cfg), torch.randn(1, cfg.seq_len, cfg.d_model))
    gpt2 = models.GPTConfig(d_model=768, n_heads=12, n_layers=12, seq_len=128)
    for name in args.dtypes:
        dtype = torch.float32 if name == "f32" else torch.bfloat16
        for n in args.sizes:
            measure(f"{name} matmul {n}x{n}x{n} (x @ w)", MatMul(n, n).to(dtype),
                    torch.randn(n, n).to(dtype), timing_only=dtype != torch.float32)
        for b in args.gpt2_batches:
            measure(f"{name} GPT-2 small forward, batch {b} x seq 128 (timing-only)",
                    models.GPT(gpt2).eval().to(dtype),
                    torch.randn(b, gpt2.seq_len, gpt2.d_model).to(dtype), timing_only=True)


if __name__ == "__main__":
    main()
