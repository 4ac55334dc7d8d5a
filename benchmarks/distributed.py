"""torch.distributed on nova chips, against the in-process simulator.

1. All-reduce of float32 across 8 torchrun ranks of nova-t1-ring8 (1, 16, 256 MiB),
   timed with torch.nova Events in every rank, against the in-process simulator
   running one all-reduce instruction on the same 8 chips; and the same in two groups
   at once (even and odd ranks: concurrent groups sharing the ring's links, through
   the coordinator), against one instruction with both groups in the in-process
   simulator.
2. The DP2×TP2 training step of test/python/distributed/train_script.py (FSDP2 over
   dp, DTensor TP over tp) under torchrun: its step time, and its collectives as the
   ranks agreed on them against one run of them all in the in-process flow model
   from the same starts (``nova merge-traces``).
3. DDP on nova-t1-2node (two torchrun launches, one rendezvous) against the same
   four chips as one node.

    python benchmarks/distributed.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "test" / "python" / "distributed"
TORCHRUN = str(Path(sys.executable).with_name("torchrun"))


def env(target: str) -> dict[str, str]:
    return {**os.environ, "NOVA_DEVICE_TARGET": target, "NOVA_DEVICE_FALLBACK": "error", "OMP_NUM_THREADS": "1"}


def run(cmd: list[str], environ: dict[str, str]) -> str:
    done = subprocess.run(cmd, env=environ, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stdout[-2000:] + done.stderr[-4000:])
    return done.stdout


def _from_tests():
    """The tests' in-process all-reduce and one-node target (one copy of each)."""
    sys.path.insert(0, str(TESTS))
    import test_torchrun
    return test_torchrun.machine_all_reduce_ns, test_torchrun.one_node


def main() -> None:
    machine_all_reduce_ns, one_node = _from_tests()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        (out / "ar").mkdir()
        run([TORCHRUN, "--standalone", "--nproc-per-node=8", str(TESTS / "allreduce_script.py"),
             str(out / "ar"), "1", "16", "256", "split16", "split256"], env("nova-t1-ring8"))
        ranks = [json.loads((out / "ar" / f"rank{r}.json").read_text()) for r in range(8)]
        print("all-reduce, 8 ranks of nova-t1-ring8 (float32)")
        print(f"{'MiB':>5} {'torchrun us':>13} {'in-process us':>14} {'diff':>8} {'ranks agree':>12}")
        for mib in (1, 16, 256):
            got = ranks[0][str(float(mib))] * 1e3
            want = machine_all_reduce_ns("nova-t1-ring8", 8, mib << 20) / 1e3
            agree = all(r[str(float(mib))] == ranks[0][str(float(mib))] for r in ranks)
            print(f"{mib:>5} {got:>13.3f} {want:>14.3f} {100 * (got / want - 1):>+7.3f}% {str(agree):>12}")
        evens, odds = [0, 2, 4, 6], [1, 3, 5, 7]
        print("\nall-reduce in two groups at once (ranks 0,2,4,6 and 1,3,5,7), nova-t1-ring8")
        print(f"{'MiB':>5} {'torchrun us':>13} {'in-process us':>14} {'diff':>8} {'one group alone us':>19}")
        for mib in (16, 256):
            got = ranks[0][f"split{float(mib)}"] * 1e3
            want = machine_all_reduce_ns("nova-t1-ring8", 8, mib << 20, [evens, odds]) / 1e3
            alone = machine_all_reduce_ns("nova-t1-ring8", 8, mib << 20, [evens] + [[r] for r in odds]) / 1e3
            print(f"{mib:>5} {got:>13.3f} {want:>14.3f} {100 * (got / want - 1):>+7.3f}% {alone:>19.3f}")

        (out / "dptp").mkdir()
        run([TORCHRUN, "--standalone", "--nproc-per-node=4", str(TESTS / "train_script.py"), "dp_tp",
             str(out / "dptp")], env("nova-t1-ring8"))
        step = json.loads((out / "dptp" / "rank0.json").read_text())["step_ms"]
        merged = run([sys.executable, "-m", "nova", "merge-traces", str(out / "all.json"),
                      *map(str, sorted((out / "dptp").glob("trace*.json")))], os.environ)
        print(f"\nDP2×TP2 step (FSDP2 × DTensor TP, 4 ranks of nova-t1-ring8): "
              f"{', '.join(f'{t * 1e3:.3f}' for t in step)} us simulated")
        print(merged.strip().splitlines()[-1])

        for name, launches in (("two", 2), ("one", 1)):
            (out / name).mkdir()
        port = 29400 + os.getpid() % 200
        procs = [subprocess.Popen(
            [TORCHRUN, "--nnodes=2", "--nproc-per-node=2", "--rdzv-backend=c10d",
             f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=bench", str(TESTS / "train_script.py"), "ddp",
             str(out / "two")], env=env("nova-t1-2node"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(2)]
        for p in procs:
            if p.wait():
                raise SystemExit("the two-node launch failed")
        run([TORCHRUN, "--standalone", "--nproc-per-node=4", str(TESTS / "train_script.py"), "ddp",
             str(out / "one")], env(str(one_node(out))))
        two = json.loads((out / "two" / "rank0.json").read_text())["step_ms"]
        one = json.loads((out / "one" / "rank0.json").read_text())["step_ms"]
        print(f"\nDDP, 4 ranks: 2 nodes of nova-t1-2node {two[-1] * 1e3:.3f} us per step, "
              f"the same chips as one node {one[-1] * 1e3:.3f} us")


if __name__ == "__main__":
    main()
