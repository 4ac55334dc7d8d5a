"""Wall time of each compile stage for the GPT block and the 2-layer GPT, plus instruction counts.

Stages: torch export (torch-mlir, linalg), nova-opt --nova-lower-to-tiles, nova-opt
--nova-tiles-to-isa, nova-translate --nova-to-binary. Times are from one run each,
after a warm-up export of a tiny model (torch-mlir's import is not counted).
Usage: python benchmarks/compile_time.py [--d-model 256] [--heads 4] [--seq 64]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import torch  # noqa: E402

from nova import models  # noqa: E402
from nova.compiler import pipeline  # noqa: E402
from nova.compiler.driver import run_opt, run_translate  # noqa: E402
from nova.compiler.options import TargetOptions  # noqa: E402
from nova.frontend import import_model  # noqa: E402
from nova.binary.format import load_binary  # noqa: E402


def measure(name: str, model: torch.nn.Module, x: torch.Tensor, target: TargetOptions) -> None:
    times = {}
    t0 = time.perf_counter()
    linalg = import_model(model.eval(), x).mlir
    times["export (torch-mlir)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    tiles = run_opt(linalg, pipeline.lower_to_tiles(target))
    times["nova-opt tiles"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    isa = run_opt(tiles, pipeline.tiles_to_isa())
    times["nova-opt isa"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    binary = run_translate(isa, pipeline.isa_to_binary())
    times["nova-translate"] = time.perf_counter() - t0
    program = load_binary(binary)
    static = sum(len(p) for p in program.programs)
    total = sum(times.values())
    print(f"{name}: {static} static instructions, {len(binary)} byte binary, "
          f"{total:.2f} s in all")
    for stage, seconds in times.items():
        print(f"  {stage:22s} {seconds:8.3f} s  ({100 * seconds / total:5.1f}%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    args = parser.parse_args()
    torch.manual_seed(0)
    target = TargetOptions(name="nova-t1", chips=1)
    # Warm-up: the first export pays torch-mlir's import and torch.export's one-off setup.
    import_model(models.GELU(), torch.randn(4, 8))
    cfg = models.GPTConfig(d_model=args.d_model, n_heads=args.heads, seq_len=args.seq)
    x = torch.randn(1, cfg.seq_len, cfg.d_model)
    measure(f"GPT block {cfg}", models.GPTBlock(cfg), x, target)
    measure(f"GPT {cfg.n_layers} layers", models.GPT(cfg), x, target)


if __name__ == "__main__":
    main()
