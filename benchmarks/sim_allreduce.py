"""All-reduce bus bandwidth on the simulated interconnect, as a fraction of link bandwidth.

busbw = algbw * 2(n-1)/n with algbw = bytes / simulated time of the all_reduce (NCCL's
definition). Sizes up to 1 MiB move real data (functional simulation); larger sizes
run the timing model only. Usage: python benchmarks/sim_allreduce.py [target ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "test" / "python" / "sim")]

import numpy as np  # noqa: E402

from asm import Asm  # noqa: E402  (test-side assembler)
from nova.sim import Simulator, load_target  # noqa: E402

SIZES = [1 << k for k in range(10, 29, 2)]  # 1 KiB .. 256 MiB


def busbw(target_name: str, chips: int, nbytes: int) -> tuple[float, str]:
    tg = load_target(ROOT / "targets" / f"{target_name}.json").with_changes(chips=chips)
    s = Asm()
    n = nbytes // 4
    t = s.tile("hbm", "f32", [n])
    functional = nbytes <= 1 << 20
    if functional:
        s.input(0, "x", "f32", [n], 0)
    s.li(1, nbytes)
    s.all_reduce("sum", 0, t, 1, t, [list(range(chips))], signal=[0])
    s.sem_wait([0])
    s.halt()
    sim = Simulator(s.program(tg), functional=functional)
    _, rep = sim.run({"x": np.ones(n, np.float32)} if functional else {})
    t_ns = rep.busy("collective", chip=0)
    algo = rep.collectives[0][1]
    return nbytes / t_ns * 2 * (chips - 1) / chips / tg.link_gbps, algo


def main(targets: list[str]) -> None:
    for name in targets:
        tg = load_target(ROOT / "targets" / f"{name}.json")
        print(f"\n{name}: topology {tg.topology}, link {tg.link_gbps} GB/s/direction, "
              f"latency {tg.link_latency_ns} ns — busbw / link bandwidth (algorithm)")
        print(f"{'size':>10s}" + "".join(f"{f'{c} chips':>20s}" for c in (2, 4, 8)))
        t0 = time.perf_counter()
        for nb in SIZES:
            row = f"{nb / 1024:>8.0f}Ki" if nb < 1 << 20 else f"{nb >> 20:>8d}Mi"
            for c in (2, 4, 8):
                f, algo = busbw(name, c, nb)
                row += f"{f:>12.3f} {algo:>7s}"
            print(row)
        print(f"(wall {time.perf_counter() - t0:.2f} s)")


if __name__ == "__main__":
    main(sys.argv[1:] or ["nova-t1", "nova-t1-ring8", "nova-t1-pcie4", "nova-t1-torus16"])
