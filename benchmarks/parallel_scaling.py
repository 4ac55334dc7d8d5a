"""Simulated step time of a GPT forward pass on 1 to 8 chips under data
parallelism (``nova.parallel.data_parallel_plan``), with speedup and
parallel efficiency against one chip. The global batch is fixed (strong
scaling); outputs are checked against torch.

Tensor parallelism of the whole GPT is not measured: MLIR 22's
sharding-propagation stops at the GPT's tensor.collapse_shape/expand_shape
(no ShardingInterface) and LayerNorm's keep-dim reduction.

Usage: python benchmarks/parallel_scaling.py [target ...]   (default nova-t1 nova-t1-ring8)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "python")]

import torch  # noqa: E402

from nova.models.gpt import GPT, GPTConfig  # noqa: E402
from nova.parallel import Mesh, compile_parallel, data_parallel_plan  # noqa: E402

CONFIG = GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16)
BATCH = 8
CHIPS = (1, 2, 4, 8)


def main(targets: list[str]) -> None:
    torch.manual_seed(0)
    model = GPT(CONFIG).eval()
    x = torch.randn(BATCH, CONFIG.seq_len, CONFIG.d_model)
    with torch.no_grad():
        expected = model(x)
    print(f"GPT {CONFIG}, global batch {BATCH}, forward, data parallel")
    for target in targets:
        print(f"\n{target}")
        print("| chips | local batch | simulated step (us) | speedup | efficiency |")
        print("|---:|---:|---:|---:|---:|")
        base = None
        for chips in CHIPS:
            start = time.perf_counter()
            # A ring needs two chips: one chip alone is the same on every target.
            alone = "nova-t1" if chips == 1 else target
            program = compile_parallel(model, x, mesh=Mesh((chips,), ("dp",)),
                                       plan=data_parallel_plan("dp"), target=alone)
            got = program(x)
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
            step = program.report.time_s
            base = base or step
            print(f"| {chips} | {BATCH // chips} | {step * 1e6:.2f} | {base / step:.2f}x "
                  f"| {100 * base / step / chips:.0f}% |   "
                  f"(compile+run {time.perf_counter() - start:.1f} s)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["nova-t1", "nova-t1-ring8"])
