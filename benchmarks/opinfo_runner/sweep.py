"""The sweep loop over (op, dtype), the supervisor that survives native
crashes, and the JSON results: ``{"meta": ..., "results": {dtype: {op: [row]}}}``."""

from __future__ import annotations

import contextlib
import faulthandler
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch

from .ops import DTYPES, EXCLUDED, op_dtypes, op_key
from .run import first_line, run_sample
from .sample import Skip


def pick_samples(op, dtype: torch.dtype, samples: int):
    """The op's first ``samples`` sample inputs in ``dtype`` (seeded, so that
    every run and the test slice see the same numbers)."""
    torch.manual_seed(0)
    return list(itertools.islice(op.sample_inputs("cpu", dtype), samples))


def sweep_op(op, dtype_name: str, samples: int, timeout: int, rows: list[dict],
             inflight: Path | None) -> list[dict]:
    """Runs the samples after those already in ``rows``. While a sample runs,
    ``inflight`` says which one and at what stage, for the supervisor to
    record it should the process die (a native crash in torch-mlir)."""
    dtype = DTYPES[dtype_name]
    try:
        picked = pick_samples(op, dtype, samples)
    except Exception as error:  # noqa: BLE001
        return [{"sample": 0, "class": "skip", "error": f"sample_inputs fails: {first_line(error)}"}]
    rows = list(rows)
    for index in range(len(rows), len(picked)):
        def mark(stage, index=index):
            if inflight is not None:
                inflight.write_text(json.dumps({"op": op_key(op), "dtype": dtype_name,
                                                "sample": index, "stage": stage, "rows": rows,
                                                "samples": len(picked)}))

        mark("eager")
        start = time.monotonic()
        # A hang in native code never returns to Python for signal.alarm: the
        # watchdog thread ends the process and the supervisor records it.
        faulthandler.dump_traceback_later(2 * timeout + 30, exit=True, file=sys.__stderr__)
        try:
            row = run_sample(op, picked[index], dtype, timeout, mark)
        except Skip as why:
            row = {"class": "skip", "error": str(why)}
        finally:
            faulthandler.cancel_dump_traceback_later()
        rows.append({"sample": index, **row, "seconds": round(time.monotonic() - start, 2)})
    if inflight is not None and inflight.exists():
        inflight.unlink()
    return rows


def load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"meta": {}, "results": {}}


def save(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def record_death(out: Path, inflight: Path, returncode: int) -> str:
    """Writes the sample the worker died in into ``out`` as a result."""
    marker = json.loads(inflight.read_text())
    inflight.unlink()
    data = load(out)
    how = (f"killed by {signal.Signals(-returncode).name}" if returncode < 0
           else f"exit status {returncode} (a hang the watchdog ended, if 1)")
    # Before Nova's export the death is torch-mlir's default lowering (or eager).
    stage = marker["stage"]
    kind = ("notlowerable" if stage in ("eager", "lowerable") else
            "sim" if stage == "run" else "compile")
    row = {"sample": marker["sample"], "class": kind, "stage": stage,
           "error": f"process {how} in {stage}", "fatal": True}
    rows = marker["rows"] + [row]
    if len(rows) < marker["samples"]:
        rows[-1]["resume"] = True
    data["results"].setdefault(marker["dtype"], {})[marker["op"]] = rows
    save(out, data)
    return f"{marker['op']} {marker['dtype']} #{marker['sample']}: {row['error']}"


def supervise(script: str, argv: list[str], out: Path) -> int:
    """Runs the sweep in a worker process, again after every death, until done."""
    inflight = out.with_suffix(out.suffix + ".inflight")
    resume = ["--resume"] if "--resume" not in argv else []
    while True:
        worker = subprocess.run([sys.executable, script, *argv, *resume, "--worker"])
        if worker.returncode == 0 or not inflight.exists():
            return worker.returncode
        print(f"worker died: {record_death(out, inflight, worker.returncode)}; resuming",
              flush=True)
        resume = ["--resume"]


@contextlib.contextmanager
def quiet():
    """Silences file descriptors 1 and 2: torch-mlir's C++ diagnostics and
    torch.export print there on failures the results already record."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def run_worker(ops, dtypes: list[str], args, meta: dict) -> int:
    """The sweep proper, in the worker process; results rewritten after each (op, dtype)."""
    from nova.compiler.errors import NovaToolNotFoundError

    data = load(args.out) if args.resume else {"meta": {}, "results": {}}
    results = data["results"]
    meta = {**data.get("meta", {}), **meta}
    inflight = args.out.with_suffix(args.out.suffix + ".inflight")
    start = time.monotonic()
    for n, op in enumerate(ops, 1):
        name = op_key(op)
        for dtype_name in op_dtypes(op, dtypes):
            table = results.setdefault(dtype_name, {})
            done = table.get(name)
            if done and not done[-1].get("resume"):
                continue
            if name in EXCLUDED:
                table[name] = [{"sample": 0, "class": "skip",
                                "error": f"excluded: {EXCLUDED[name]}"}]
                continue
            if done:
                done[-1].pop("resume")
            op_start = time.monotonic()
            try:
                with quiet():
                    rows = sweep_op(op, dtype_name, args.samples, args.timeout, done or [],
                                    inflight)
            except NovaToolNotFoundError as error:
                # Tools missing (a rebuild under way?): stop; --resume goes on later.
                inflight.unlink(missing_ok=True)
                print(f"stopping at {name}: {first_line(error)}", file=sys.stderr)
                return 2
            table[name] = rows
            if not args.quiet:
                marks = " ".join(r["class"] for r in rows)
                print(f"[{n}/{len(ops)} {time.monotonic() - start:6.0f}s] {name:<36} "
                      f"{dtype_name:<8} {time.monotonic() - op_start:5.1f}s  {marks}", flush=True)
            meta["elapsed_s"] = round(meta.get("elapsed_s", 0) + time.monotonic() - op_start, 1)
            save(args.out, {"meta": meta, "results": results})
    save(args.out, {"meta": meta, "results": results})
    return 0


def merge(paths: list[Path]) -> dict:
    """The shards' results joined; the meta of the first, with every shard's command."""
    results: dict[str, dict] = {}
    commands, elapsed = [], 0.0
    meta = {}
    for path in paths:
        data = load(path)
        meta = meta or dict(data["meta"])
        for dtype_name, table in data["results"].items():
            results.setdefault(dtype_name, {}).update(table)
        commands.append(data["meta"].get("command", ""))
        elapsed = max(elapsed, data["meta"].get("elapsed_s", 0))
    meta["shard_commands"] = commands
    meta["elapsed_s"] = elapsed
    return {"meta": meta, "results": results}
