"""Simulator wall time for a GPT-2-small-sized forward vs numpy doing the same matmuls.

GPT-2 small shapes: d_model 768, 12 heads, seq 128, batch 1, 12 layers (fewer with
--layers; the 12-layer numbers are then extrapolated linearly and labelled so).
The model is compiled once; only the simulator run (Program.run, including the
Simulator's set-up) is timed. numpy runs the forward's matmuls directly (qkv,
per-head q@k^T and att@v, proj, fc1, fc2 per layer), best of --repeat runs.
Both sides use one BLAS thread. Usage: python benchmarks/gpt2_sim_speed.py [--layers 12]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import nova  # noqa: E402
from nova import models  # noqa: E402

FULL_LAYERS = 12


def numpy_matmuls(cfg: models.GPTConfig, layers: int, rng: np.random.Generator) -> float:
    """Wall time of the forward's matmuls in numpy (f32), one call."""
    t, d, h = cfg.seq_len, cfg.d_model, cfg.n_heads
    dh, f = d // h, cfg.mlp_ratio * d
    x = rng.standard_normal((t, d)).astype(np.float32)

    def weight(k: int, n: int) -> np.ndarray:
        return (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)

    w = [(weight(d, 3 * d), weight(d, d), weight(d, f), weight(f, d)) for _ in range(layers)]
    start = time.perf_counter()
    for qkv_w, proj_w, fc1_w, fc2_w in w:
        qkv = x @ qkv_w
        q, k, v = (qkv[:, i * d:(i + 1) * d].reshape(t, h, dh).transpose(1, 0, 2) for i in range(3))
        # Scaled like softmax rows (sum 1) so values stay finite over 12 layers.
        att = (q @ k.transpose(0, 2, 1)) * np.float32(1 / (np.sqrt(dh) * t))
        y = (att @ v).transpose(1, 0, 2).reshape(t, d)
        x = y @ proj_w
        x = (x @ fc1_w) @ fc2_w
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=FULL_LAYERS)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=5, help="numpy runs (the best counts)")
    args = parser.parse_args()
    cfg = models.GPTConfig(d_model=768, n_heads=12, n_layers=args.layers, seq_len=args.seq)
    torch.manual_seed(0)
    model = models.GPT(cfg).eval()
    x = torch.randn(1, cfg.seq_len, cfg.d_model)
    t0 = time.perf_counter()
    program = nova.compile(model, x, target="nova-t1")
    t_compile = time.perf_counter() - t0
    print(f"compiled {args.layers} layer(s) of GPT-2 small in {t_compile:.1f} s", flush=True)

    # The first run also uploads the weights into the simulated HBM (they stay
    # resident, as on a device); the ratio uses a warm run, as numpy's does.
    t0 = time.perf_counter()
    program(x)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    y = program(x)
    t_sim = time.perf_counter() - t0
    print(f"first run (also decodes the binary and uploads the weights to HBM): {t_first:.2f} s wall")
    with torch.no_grad():
        error = (y - model(x)).abs().max().item()
    r = program.report
    print(f"simulator: {t_sim:.2f} s wall for {r.instructions} dynamic instructions "
          f"({r.time_s * 1e3:.3f} ms simulated, {r.flops:.3e} FLOPs, "
          f"{100 * r.roofline_fraction:.1f}% of roofline; max |error| vs torch {error:.2e})")

    rng = np.random.default_rng(0)
    t_np = min(numpy_matmuls(cfg, args.layers, rng) for _ in range(args.repeat))
    print(f"numpy matmuls: {t_np * 1e3:.2f} ms (best of {args.repeat})")
    print(f"ratio simulator / numpy, {args.layers} layer(s): {t_sim / t_np:.2f}x (target <= 3x)")
    if args.layers != FULL_LAYERS:
        scale = FULL_LAYERS / args.layers
        print(f"EXTRAPOLATED to {FULL_LAYERS} layers (x{scale:g}, linear in layers): "
              f"simulator ~{t_sim * scale:.2f} s, numpy ~{t_np * scale * 1e3:.2f} ms, "
              f"ratio unchanged {t_sim / t_np:.2f}x, compile ~{t_compile * scale:.0f} s")


if __name__ == "__main__":
    main()
