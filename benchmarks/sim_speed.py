"""Simulator wall time vs numpy doing the same matmuls (a tiled f32 GEMM on one chip).

Prints dynamic instructions, simulated time, % of roofline and the ratio
simulator wall time / numpy wall time for the same tile matmuls and bias adds.
Usage: python benchmarks/sim_speed.py [M K N T]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "test" / "python" / "sim")]

# One BLAS thread for both sides: on a loaded 2-core machine threaded BLAS on 128^3
# tiles thrashes (30 ms instead of 0.05 ms) and the ratio would measure that.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from asm import target  # noqa: E402
from nova.sim import Simulator  # noqa: E402
from test_matmul import tiled_matmul_bias  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from yardstick import check_all  # noqa: E402


def main(M: int, K: int, N: int, T: int) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    prog = tiled_matmul_bias(M, K, N, T).program(target("nova-t1", chips=1))
    t0 = time.perf_counter()
    out, rep = Simulator(prog).run({"a": a, "b": b, "bias": bias})
    t_sim = time.perf_counter() - t0
    assert np.allclose(out["c"], a @ b + bias, rtol=1e-3, atol=1e-3)

    t0 = time.perf_counter()
    c = np.empty((M, N), np.float32)
    for i in range(0, M, T):
        for j in range(0, N, T):
            acc = np.zeros((T, T), np.float32)
            for k in range(0, K, T):
                acc += a[i:i + T, k:k + T] @ b[k:k + T, j:j + T]
            c[i:i + T, j:j + T] = acc + bias[j:j + T]
    t_np = time.perf_counter() - t0
    check_all([("a", a), ("b", b), ("bias", bias), ("numpy c", c)])  # float32, normal magnitudes
    assert np.allclose(c, out["c"], rtol=1e-3, atol=1e-3)
    print(f"GEMM {M}x{K}x{N}, tiles {T}: {rep.instructions} dynamic instructions, "
          f"simulated {rep.time_ns / 1e3:.1f} us ({100 * rep.roofline_fraction:.1f}% of roofline)")
    print(f"simulator wall {t_sim:.3f} s, numpy same tile matmuls {t_np:.3f} s, ratio {t_sim / t_np:.2f}x, "
          f"{rep.instructions / t_sim / 1e3:.0f}k instructions/s")


if __name__ == "__main__":
    args = [int(x) for x in sys.argv[1:]] or [1024, 1024, 1024, 128]
    main(*args)
