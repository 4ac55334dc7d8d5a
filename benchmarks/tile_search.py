"""Tile-size search against nova-tile's fixed limits, on nova-t1.

For each workload: the simulated time with nova-tile's defaults (max-rows
512, max-cols 512) and with every candidate of nova.compiler.tile_search
(timing-only runs), the limits the search keeps (the defaults unless a
candidate is 1 % faster) and the search's wall time. One run; no cache
(a fresh NOVA_CACHE_DIR). Usage: python benchmarks/tile_search.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "benchmarks")]
os.environ["NOVA_CACHE_DIR"] = tempfile.mkdtemp(prefix="nova-tile-search-")

import torch  # noqa: E402

from nova import models  # noqa: E402
from nova.compiler.compile import lower  # noqa: E402
from nova.compiler.options import TargetOptions  # noqa: E402
from nova.compiler.tile_search import DEFAULT, search  # noqa: E402
from nova.frontend import import_model  # noqa: E402
from roofline import MatMul  # noqa: E402  (x @ w, benchmarks/roofline.py)


def workloads():
    gpt = models.GPTConfig(d_model=256, n_heads=4, seq_len=64)
    small = models.GPTConfig(d_model=768, n_heads=12, n_layers=12, seq_len=128)
    return [
        ("matmul 512x4096x512", MatMul(4096, 512), torch.randn(512, 4096)),
        ("MLP 2048x768x3072", models.MLP(768, 3072), torch.randn(2048, 768)),
        ("GELU 64x8192", torch.nn.GELU(), torch.randn(64, 8192)),
        ("LayerNorm 4x256x1024", torch.nn.LayerNorm(1024), torch.randn(4, 256, 1024)),
        ("softmax 8x512x2048", torch.nn.Softmax(-1), torch.randn(8, 512, 2048)),
        ("GPT block (d 256, seq 64)", models.GPTBlock(gpt), torch.randn(1, gpt.seq_len, gpt.d_model)),
        ("GPT-2 small forward, batch 1", models.GPT(small), torch.randn(1, 128, 768)),
        ("GPT-2 small forward, batch 8", models.GPT(small), torch.randn(8, 128, 768)),
    ]


def main() -> None:
    torch.manual_seed(0)
    target = TargetOptions(name="nova-t1", chips=1)
    print("| workload | default (us) | best candidate | best (us) | kept | gain | search wall |")
    print("|---|---:|---|---:|---|---:|---:|")
    for name, model, x in workloads():
        linalg = import_model(model.eval(), x).mlir
        t0 = time.perf_counter()
        result = search(linalg, target, lambda tile: lower(linalg, target, True, tile)[3])
        wall = time.perf_counter() - t0
        best = min(result.times, key=result.times.__getitem__)
        default = result.times[DEFAULT]
        kept = result.times[result.tile]
        print(f"| {name} | {default * 1e6:.1f} | {best} | {result.times[best] * 1e6:.1f} | "
              f"{result.tile} | {default / kept:.3f}x | {wall:.1f} s |", flush=True)


if __name__ == "__main__":
    main()
