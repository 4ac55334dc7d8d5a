"""torch.distributed on nova chips under torchrun: DDP, FSDP2, DTensor TP (alone and
with DP) and 1F1B pipelining train like one process on the whole batch; ranks agree
on simulated time; a collective costs what the in-process simulator says; faults
end in clear errors. Each test launches real processes (torchrun, or plain
processes where torchrun's own teardown would hide the error under test)."""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
TORCHRUN = str(Path(sys.executable).with_name("torchrun"))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One op cache for every launch (and every xdist worker): the ranks compile
    each device op once, the others wait on its lock and load it."""
    return tmp_path_factory.getbasetemp().parent / "nova-distributed-cache"


def env(cache: Path, target: str = "nova-t1-ring8", **extra: str) -> dict[str, str]:
    return {**os.environ, "NOVA_DEVICE_TARGET": target, "NOVA_DEVICE_FALLBACK": "error",
            "NOVA_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1", **extra}


def torchrun(script: str, args: list[str], nproc: int, environ: dict[str, str],
             extra: list[str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    cmd = [TORCHRUN, f"--nproc-per-node={nproc}", *(extra or ["--standalone"]), str(HERE / script), *args]
    done = subprocess.run(cmd, env=environ, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return done


def results(out: Path, ranks: int) -> list[dict]:
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(ranks)]


def reference(with_grads: bool = False):
    sys.path.insert(0, str(HERE))
    try:
        import train_script
    finally:
        sys.path.remove(str(HERE))
    return train_script.reference(with_grads)


@pytest.mark.parametrize("mode,nproc", [("ddp", 4), ("fsdp", 4), ("tp", 2), ("dp_tp", 4), ("pp", 2)])
def test_training_matches_one_process(mode: str, nproc: int, cache: Path, tmp_path: Path) -> None:
    torchrun("train_script.py", [mode, str(tmp_path)], nproc, env(cache))
    ranks = results(tmp_path, nproc)
    want, want_grads = reference(with_grads=True)
    for r, got in enumerate(ranks):
        assert got["losses"] == pytest.approx(want, rel=1e-4), (mode, r)
    # Every parameter's gradient of the first step equals one process's on the whole
    # batch (each pipeline rank holds its stage's).
    seen = set()
    for r, got in enumerate(ranks):
        for name, g in got["grads"].items():
            seen.add(name)
            expect = torch.tensor(want_grads[name])
            torch.testing.assert_close(torch.tensor(g), expect, rtol=1e-4,
                                       atol=1e-6 * max(1.0, expect.abs().max().item()),
                                       msg=lambda m: f"{mode} rank {r} {name}: {m}")
    assert seen == set(want_grads), (seen, set(want_grads))
    if mode in ("ddp", "fsdp", "tp", "dp_tp"):
        # Every rank does the same work: the simulated step times are bit-identical.
        assert all(got["step_ms"] == ranks[0]["step_ms"] for got in ranks), [g["step_ms"] for g in ranks]
    if mode == "dp_tp":
        # The coordinator priced the groups' collectives together while the ranks ran;
        # merge-traces runs them all at once in the in-process machine's flow model,
        # from the same starts: the same times, collective by collective.
        merged = subprocess.run([sys.executable, "-m", "nova", "merge-traces", str(tmp_path / "all.json"),
                                 *map(str, sorted(tmp_path.glob("trace*.json")))],
                                capture_output=True, text=True, check=True).stdout
        largest = re.search(r"largest difference of one ([0-9.]+) %", merged)
        assert largest and float(largest.group(1)) < 0.01, merged
        rows = {e["pid"] for e in json.loads((tmp_path / "all.json").read_text())["traceEvents"]
                if e["ph"] == "X"}
        assert rows == {f"rank {r}" for r in range(nproc)}
    if mode != "ddp":  # (DDP rebuilds its buckets in its second step: one more collective)
        # Steps after the first repeat the same simulated work.
        assert all(got["step_ms"][1] == got["step_ms"][2] for got in ranks)


def spawn(script: str, args: list[str], world: int, environ: dict[str, str],
          timeout: float, hung: int | None = None) -> list[tuple[int, str, float]]:
    """``world`` plain processes on one rendezvous: (exit code, output, seconds) each;
    rank ``hung`` is killed once the others have finished."""
    port = str(29600 + os.getpid() % 300)
    procs = [subprocess.Popen([sys.executable, str(HERE / script), *args],
                              env={**environ, "RANK": str(r), "WORLD_SIZE": str(world),
                                   "LOCAL_RANK": str(r), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    start = time.monotonic()
    order = [r for r in range(world) if r != hung] + ([hung] if hung is not None else [])
    out: list = [None] * world
    for r in order:
        p = procs[r]
        if r == hung:
            p.kill()
        try:
            text, _ = p.communicate(timeout=max(1.0, timeout - (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            p.kill()
            text, _ = p.communicate()
        out[r] = (p.returncode, text, time.monotonic() - start)
    return out


def test_a_rank_that_exits_gives_the_others_a_clear_error(cache: Path) -> None:
    ranks = spawn("fault_script.py", ["exit"], 3, env(cache, PG_TIMEOUT="30"), timeout=120)
    for r in (0, 2):
        code, text, seconds = ranks[r]
        assert code == 3, text[-3000:]
        assert "ERROR PeerFailure" in text and "peer rank exited" in text, text[-3000:]
        assert seconds < 60


def test_a_rank_that_hangs_gives_the_others_a_clear_error(cache: Path) -> None:
    ranks = spawn("fault_script.py", ["hang"], 2, env(cache, PG_TIMEOUT="10"), timeout=90, hung=1)
    code, text, seconds = ranks[0]
    assert code == 3, text[-3000:]
    assert "ERROR PeerFailure" in text, text[-3000:]
    assert seconds < 60


def test_mismatched_shapes_are_reported_with_both_calls(cache: Path) -> None:
    ranks = spawn("fault_script.py", ["shape"], 2, env(cache), timeout=120)
    for code, text, _ in ranks:
        assert code == 3, text[-3000:]
        assert "CollectiveMismatch" in text
        assert "all_reduce(float32[4], op=SUM)" in text and "all_reduce(float32[8], op=SUM)" in text, text
        assert "global rank 0" in text and "global rank 1" in text


def machine_all_reduce_ns(target: str, chips: int, nbytes: int, groups: list[list[int]] | None = None) -> float:
    """The in-process simulator running one all-reduce instruction on every chip of
    ``target`` (its first ``chips`` in one group, or ``groups``, all at once): the
    longest collective's time."""
    sys.path.insert(0, str(HERE.parent / "sim"))
    try:
        from asm import Asm, target as load
    finally:
        sys.path.remove(str(HERE.parent / "sim"))
    from nova.sim import Simulator
    s = Asm()
    tile = s.tile("hbm", "f32", [nbytes // 4])
    s.li(1, 0)
    s.li(2, 1 << 30)
    s.all_reduce("sum", 1, tile, 2, tile, groups or [list(range(chips))], signal=[0])
    s.sem_wait([0])
    _, report = Simulator(s.program(load(target)), functional=False).run()
    return max(c[2] for c in report.collectives)


def test_all_reduce_time_agrees_across_ranks_and_with_the_in_process_simulator(
        cache: Path, tmp_path: Path) -> None:
    torchrun("allreduce_script.py", [str(tmp_path), "1", "16", "split16"], 8, env(cache))
    ranks = results(tmp_path, 8)
    assert all(r == ranks[0] for r in ranks)
    for mib in (1, 16):
        want = machine_all_reduce_ns("nova-t1-ring8", 8, mib * 2**20) / 1e6
        assert ranks[0][str(float(mib))] == pytest.approx(want, rel=0.01)
    # Two groups at once (even and odd ranks) share the ring's links, as one instruction
    # with both groups does in the in-process simulator: slower than either alone.
    evens, odds = [0, 2, 4, 6], [1, 3, 5, 7]
    together = machine_all_reduce_ns("nova-t1-ring8", 8, 16 * 2**20, [evens, odds]) / 1e6
    alone = machine_all_reduce_ns("nova-t1-ring8", 8, 16 * 2**20, [evens] + [[r] for r in odds]) / 1e6
    assert ranks[0]["split16.0"] == pytest.approx(together, rel=0.01)
    assert together > 1.2 * alone
    # nova merge-traces: one row per rank.
    merged = tmp_path / "all.json"
    subprocess.run([sys.executable, "-m", "nova", "merge-traces", str(merged),
                    *map(str, sorted(tmp_path.glob("trace*.json")))], check=True)
    rows = {e["pid"] for e in json.loads(merged.read_text())["traceEvents"] if e["ph"] == "X"}
    assert rows == {f"rank {r}" for r in range(8)}


@pytest.mark.parametrize("backend", ["nova", "cpu:gloo,nova:nova"])
def test_every_collective_gives_torchs_values(backend: str, cache: Path) -> None:
    done = torchrun("collectives_script.py", [backend], 4, env(cache))
    assert done.stdout.count("CHECKED") == 4, done.stdout


def one_node(tmp_path: Path) -> Path:
    """nova-t1-2node's four chips and switch as one node (no NICs)."""
    from nova.binary.targets import load_target_dict, target_file
    d = load_target_dict(target_file("nova-t1-2node"))
    for key in ("chips_per_node", "nics_per_node", "nic_gbps", "nic_latency_ns"):
        d.pop(key)
    d["name"] = "nova-t1-1node4"
    path = tmp_path / "one-node.json"
    path.write_text(json.dumps(d))
    return path


def test_ddp_across_two_torchrun_nodes(cache: Path, tmp_path: Path) -> None:
    """Two torchrun launches (the two hosts) meet at one rendezvous endpoint; DDP on
    the 2-node target trains as one process and pays for the network's links."""
    out2, out1 = tmp_path / "two", tmp_path / "one"
    out2.mkdir()
    out1.mkdir()
    port = 29400 + os.getpid() % 200
    launches = [subprocess.Popen(
        [TORCHRUN, "--nnodes=2", "--nproc-per-node=2", "--rdzv-backend=c10d",
         f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=nova-two-nodes", f"--node-rank={n}",
         str(HERE / "train_script.py"), "ddp", str(out2)],
        env=env(cache, "nova-t1-2node"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for n in range(2)]
    for p in launches:
        text, _ = p.communicate(timeout=600)
        assert p.returncode == 0, text[-6000:]
    two = results(out2, 4)
    want = reference()
    for got in two:
        assert got["losses"] == pytest.approx(want, rel=1e-4)
        assert got["step_ms"] == two[0]["step_ms"]
    torchrun("train_script.py", ["ddp", str(out1)], 4, env(cache, str(one_node(tmp_path))))
    one = results(out1, 4)
    # Same chips, same switch inside the node: the gradients' all-reduce crossing the
    # NICs is what makes the two-node step slower.
    assert two[0]["step_ms"][2] > one[0]["step_ms"][2]
