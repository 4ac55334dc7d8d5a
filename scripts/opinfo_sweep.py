#!/usr/bin/env python3
"""Long sweep of PyTorch's OpInfo database through Nova (float32, CPU samples).

Not part of the test suite: it measures what Nova compiles today. For every
OpInfo whose dtypes on CPU include float32 and each of its first few sample
inputs, the op is wrapped in a small module taking the sample's tensors as
inputs (every other argument baked in), exported, compiled with Nova for
``nova-t1``, run on the simulator and compared with eager. Each sample lands
in one class:

  pass         matches eager (floats: rtol 1e-4 / atol 1e-5, NaN where eager has
               NaN; integers and bool: exact)
  wrong        runs and mismatches: every one is a bug
  export       torch.export or the torch-mlir import fails (not Nova's fault)
  unsupported  a clear Nova error (NovaError, ProgramInputError, ...): the first
               line of its message is recorded
  crash        nova-opt / nova-translate killed by a signal, a simulator fault, a
               Python exception of no Nova error type, or a timeout

Samples that cannot be a Nova program at all (outputs other than tensors,
sparse inputs, arguments with no constant form) and ops with no eager
reference (random, uninitialized: ``EXCLUDED``) are ``skip`` and not counted.

    cd /work/main && PYTHONPATH=python NOVA_TOOLS_DIR=build-py/bin \\
        .venv/bin/python scripts/opinfo_sweep.py --out /tmp/opinfo.json

Options: ``--ops add,mul`` (OpInfo names, ``name.variant`` for variants),
``--limit N`` (first N OpInfos), ``--every K`` (every K-th OpInfo),
``--samples K`` (samples per op, 3), ``--timeout S`` (per sample, 60),
``--shard I/N`` (the I-th of N interleaved slices, to run N processes side by
side; ``--merge a.json b.json`` joins their outputs). Results are rewritten
to ``--out`` after each op, and ``--resume`` skips the ops already in it.
Needs ``expecttest`` (the test extras).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import faulthandler
import itertools
import json
import math
import os
import re
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path

import torch
import torch.utils._pytree as pytree

# Ops excluded from the sweep: eager itself gives no reference to compare with.
EXCLUDED = {
    # Random: every call draws new numbers (and Nova's RNG is not torch's).
    "bernoulli": "random",
    "cauchy": "random",
    "exponential": "random",
    "geometric": "random",
    "log_normal": "random",
    "multinomial": "random",
    "normal": "random",
    "normal.number_mean": "random",
    "normal.in_place": "random",
    "uniform": "random",
    "rand_like": "random",
    "randint": "random",
    "randint_like": "random",
    "randn": "random",
    "randn_like": "random",
    "nn.functional.dropout": "random",
    "nn.functional.dropout2d": "random",
    "nn.functional.dropout3d": "random",
    "nn.functional.alpha_dropout": "random",
    "nn.functional.feature_alpha_dropout.with_train": "random",
    "nn.functional.feature_alpha_dropout.without_train": "random",
    "nn.functional.rrelu": "random (training mode samples a slope)",
    "nn.functional.gumbel_softmax": "random",
    # Uninitialized memory: the values are whatever was there.
    "empty": "uninitialized",
    "empty_like": "uninitialized",
    "empty_strided": "uninitialized",
    "empty_permuted": "uninitialized",
    "new_empty": "uninitialized",
    "new_empty_strided": "uninitialized",
}

CLASSES = ("pass", "wrong", "export", "unsupported", "crash")


class SampleTimeout(Exception):
    pass


class Skip(Exception):
    pass


def _on_alarm(signum, frame):
    raise SampleTimeout()


def op_key(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


class OpModule(torch.nn.Module):
    """Calls ``fn`` on the sample's arguments, with the tensors as inputs."""

    def __init__(self, fn, leaves, spec, tensor_slots):
        super().__init__()
        self.fn = fn
        self.leaves = leaves
        self.spec = spec
        self.tensor_slots = tensor_slots

    def forward(self, *tensors):
        leaves = list(self.leaves)
        for slot, tensor in zip(self.tensor_slots, tensors):
            leaves[slot] = tensor
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        out = self.fn(*args, **kwargs)
        flat, _ = pytree.tree_flatten(out)
        return tuple(flat)


def make_module(op, sample):
    """The module and its tensor inputs (none for factories: ``arange``, ``ones``)."""
    structure = ((sample.input, *sample.args), dict(sample.kwargs))
    leaves, spec = pytree.tree_flatten(structure)
    tensor_slots = []
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, torch.Tensor):
            if leaf.layout != torch.strided or leaf.device.type != "cpu":
                raise Skip(f"{leaf.layout} tensor")
            tensor_slots.append(i)
        elif not (leaf is None or isinstance(leaf, (bool, int, float, complex, str,
                                                    torch.dtype, torch.device,
                                                    torch.memory_format, torch.layout,
                                                    torch.Size, slice, type(Ellipsis)))):
            raise Skip(f"argument of type {type(leaf).__name__}")
    tensors = [leaves[i] for i in tensor_slots]
    baked = [None if i in tensor_slots else leaf for i, leaf in enumerate(leaves)]
    return OpModule(op.op, baked, spec, tensor_slots), tensors


def clones(tensors):
    return [t.detach().clone() for t in tensors]


def compare(got, want) -> tuple[bool, str]:
    """Whether Nova's outputs match eager's; a short reason when not."""
    if len(got) != len(want):
        return False, f"{len(got)} outputs, eager has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(g, torch.Tensor):
            return False, f"output {i} is {type(g).__name__}, eager has a tensor"
        if tuple(g.shape) != tuple(w.shape):
            return False, f"output {i} shape {tuple(g.shape)}, eager {tuple(w.shape)}"
        if g.dtype != w.dtype:
            same = torch.equal(g.to(w.dtype), w)
            return False, (f"output {i} dtype {g.dtype}, eager {w.dtype} "
                           f"(values {'equal' if same else 'differ'} as {w.dtype})")
        if w.numel() == 0:
            continue
        if w.is_complex():
            g, w = torch.view_as_real(g), torch.view_as_real(w)
        if w.is_floating_point():
            g64, w64 = g.double(), w.double()
            nan_g, nan_w = torch.isnan(g64), torch.isnan(w64)
            if not torch.equal(nan_g, nan_w):
                return False, (f"output {i} NaN at {int(nan_g.sum())} places, "
                               f"eager at {int(nan_w.sum())}")
            ok = ~nan_w
            g64, w64 = g64[ok], w64[ok]
            inf = torch.isinf(w64)
            if not torch.equal(g64[inf], w64[inf]):
                return False, f"output {i} infinities differ"
            g64, w64 = g64[~inf], w64[~inf]
            if g64.numel() == 0:
                continue
            err = (g64 - w64).abs()
            bad = err > 1e-5 + 1e-4 * w64.abs()
            if bool(bad.any()):
                j = int(err.argmax())
                return False, (f"output {i}: {int(bad.sum())}/{w.numel()} elements off, max abs "
                               f"err {float(err.max()):.3g} (got {float(g64[j]):.6g}, "
                               f"eager {float(w64[j]):.6g})")
        elif not torch.equal(g, w):
            bad = g != w
            j = int(bad.flatten().nonzero()[0])
            return False, (f"output {i}: {int(bad.sum())}/{w.numel()} elements differ "
                           f"(got {g.flatten()[j].item()}, eager {w.flatten()[j].item()})")
    return True, ""


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def first_diagnostic(text: str) -> str | None:
    """The first ``error:`` of MLIR diagnostics, without its location, the op
    it names shortened to its name (``'torch.aten.addmv'``)."""
    for line in text.splitlines():
        _, sep, message = line.partition("error: ")
        if not sep:
            continue
        generic = re.search(r'<\{name = "([\w.]+)"', message)
        if generic:
            message = re.sub(r"'torch\.operator'", f"'{generic[1]}'", message)
        return re.sub(r"(: %[\w#:]+ = .*|: \"[\w.]+\"\(.*)$", "", message).strip()
    return None


@contextlib.contextmanager
def _capture_fd2():
    """Captures file descriptor 2 (torch-mlir prints its diagnostics there, not
    into the exception it raises); yields a function returning the text."""
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as capture:
        os.dup2(capture.fileno(), 2)

        def text() -> str:
            capture.seek(0)
            return capture.read().decode(errors="replace")
        try:
            yield text
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def run_sample(op, sample, timeout: int, mark=lambda stage: None) -> dict:
    """One sample through export, compile and the simulator; its class and details."""
    from nova.compiler.compile import compile_linalg
    from nova.compiler.errors import NovaCompileError, NovaError, NovaToolNotFoundError
    from nova.compiler.options import TargetOptions
    from nova.frontend.export import export, import_exported
    from nova.frontend.state import param_arrays
    from nova.runtime.errors import NovaRuntimeError
    from nova.runtime.program import CompiledProgram
    from nova.sim.errors import SimulationError

    module, tensors = make_module(op, sample)
    result = {"inputs": [f"{t.dtype}{list(t.shape)}".replace("torch.", "") for t in tensors]}
    try:
        want = module(*clones(tensors))
    except Exception as error:  # noqa: BLE001 - eager itself rejects the sample
        raise Skip(f"eager fails: {first_line(error)}") from None
    if not want or not all(isinstance(w, torch.Tensor) for w in want):
        raise Skip("output is not tensors")
    if any(w.layout != torch.strided for w in want):
        raise Skip("non-strided output")

    stage = "export"
    mark(stage)
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(timeout)
    try:
        with _capture_fd2() as diagnostics:
            try:
                exported = export(module, tuple(clones(tensors)))
                stage = "import"
                mark(stage)
                imported = import_exported(exported)
            except (NovaError, NovaRuntimeError, SampleTimeout):
                raise
            except Exception as error:  # noqa: BLE001 - torch.export / torch-mlir
                why = first_diagnostic(diagnostics()) or first_line(error)
                return {**result, "class": "export", "stage": stage,
                        "error": f"{type(error).__name__}: {why}"}
        stage = "compile"
        mark(stage)
        compiled = compile_linalg(imported.mlir, TargetOptions(name="nova-t1", chips=1))
        program = CompiledProgram(compiled.binary, param_arrays(imported),
                                  stages=compiled.stages, binding=imported.binding)
        stage = "run"
        mark(stage)
        got = program(*clones(tensors))
        signal.alarm(0)
    except SampleTimeout:
        return {**result, "class": "crash", "stage": stage, "error": f"timeout after {timeout} s"}
    except NovaToolNotFoundError:
        raise  # the environment, not the op: main() stops the sweep
    except NovaCompileError as error:
        # Not the message's lead (diagnostics.first_error): it misses errors
        # located at '<unknown>:0:' and then shows the first remark instead.
        message = first_diagnostic(error.stderr) or error.args[0].splitlines()[0]
        if error.returncode < 0 or re.search(r"Assertion|LLVM ERROR|Stack dump|UNREACHABLE",
                                             error.stderr):
            lines = [ln for ln in error.stderr.splitlines()
                     if re.search(r"Assertion|LLVM ERROR|UNREACHABLE|error:", ln)]
            return {**result, "class": "crash", "stage": stage,
                    "error": f"{Path(error.command[0]).name} exit {error.returncode}: "
                             + (lines[0].strip() if lines else message)}
        return {**result, "class": "unsupported", "stage": stage, "error": message}
    except (NovaError, NovaRuntimeError) as error:
        return {**result, "class": "unsupported", "stage": stage,
                "error": f"{type(error).__name__}: {first_line(error)}"}
    except SimulationError as error:
        return {**result, "class": "crash", "stage": stage,
                "error": f"simulator {type(error).__name__}: {first_line(error)}"}
    except Exception as error:  # noqa: BLE001 - anything else is a crash
        tb = traceback.extract_tb(error.__traceback__)
        where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
        return {**result, "class": "crash", "stage": stage,
                "error": f"{type(error).__name__}: {first_line(error)} ({where})"}
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)

    if isinstance(got, torch.Tensor):
        got = (got,)
    got = tuple(pytree.tree_flatten(got)[0])
    ok, why = compare(got, want)
    if ok:
        return {**result, "class": "pass"}
    return {**result, "class": "wrong", "stage": "compare", "error": why}


def sweep_op(op, samples: int, timeout: int, rows: list[dict], inflight: Path | None) -> list[dict]:
    """Runs the op's samples after those already in ``rows``. While a sample
    runs, ``inflight`` says which one and at what stage, for the supervisor to
    record it should the process die (a native crash in torch-mlir)."""
    try:
        generator = op.sample_inputs("cpu", torch.float32)
        picked = list(itertools.islice(generator, samples))
    except Exception as error:  # noqa: BLE001
        return [{"sample": 0, "class": "skip", "error": f"sample_inputs fails: {first_line(error)}"}]
    rows = list(rows)
    for index in range(len(rows), len(picked)):
        sample = picked[index]

        def mark(stage, index=index):
            if inflight is not None:
                inflight.write_text(json.dumps({"op": op_key(op), "sample": index,
                                                "stage": stage, "rows": rows,
                                                "samples": len(picked)}))

        mark("eager")
        start = time.monotonic()
        # A hang in native code never returns to Python for signal.alarm: the
        # watchdog thread ends the process and the supervisor records it.
        faulthandler.dump_traceback_later(2 * timeout + 30, exit=True, file=sys.__stderr__)
        try:
            row = run_sample(op, sample, timeout, mark)
        except Skip as why:
            row = {"class": "skip", "error": str(why)}
        finally:
            faulthandler.cancel_dump_traceback_later()
        row = {"sample": index, **row, "seconds": round(time.monotonic() - start, 2)}
        rows.append(row)
    if inflight is not None and inflight.exists():
        inflight.unlink()
    return rows


def record_death(out: Path, inflight: Path, returncode: int) -> str:
    """Writes the sample the worker died in into ``out`` as a result."""
    marker = json.loads(inflight.read_text())
    inflight.unlink()
    data = json.loads(out.read_text()) if out.exists() else {"meta": {}, "results": {}}
    how = (f"killed by {signal.Signals(-returncode).name}" if returncode < 0
           else f"exit status {returncode} (a hang the watchdog ended, if 1)")
    # torch.export and the torch-mlir import are not Nova: a death there is theirs.
    kind = "export" if marker["stage"] in ("eager", "export", "import") else "crash"
    row = {"sample": marker["sample"], "class": kind, "stage": marker["stage"],
           "error": f"process {how} in {marker['stage']}", "fatal": True}
    rows = marker["rows"] + [row]
    if len(rows) < marker["samples"]:
        rows[-1]["resume"] = True
    data["results"][marker["op"]] = rows
    out.write_text(json.dumps(data, indent=1))
    return f"{marker['op']} #{marker['sample']}: {row['error']}"


def supervise(argv: list[str], out: Path) -> int:
    """Runs the sweep in a worker process, again after every death, until done."""
    import subprocess

    inflight = out.with_suffix(out.suffix + ".inflight")
    resume = ["--resume"] if "--resume" not in argv else []
    while True:
        worker = subprocess.run([sys.executable, __file__, *argv, *resume, "--worker"])
        if worker.returncode == 0 or not inflight.exists():
            return worker.returncode
        print(f"worker died: {record_death(out, inflight, worker.returncode)}; resuming",
              flush=True)
        resume = ["--resume"]


def pattern(message: str) -> str:
    """A message with its specifics (numbers, types, names) blanked, to group causes."""
    text = message.removeprefix("cannot compile the model: ")
    text = re.sub(r": %[\w#:]+ = .*$", "", text)  # the op's printed form
    # Payload ops name the cause's family: 'math.atan2' and 'math.acos' group.
    text = re.sub(r"'(math|arith|complex|torch\.aten)\.[\w.]+'", r"'\1.*'", text)
    text = re.sub(r"(tensor|memref|vector)<(?:[^<>]|<[^<>]*>)*>", "<type>", text)
    text = re.sub(r"%[\w#]+", "%v", text)
    text = re.sub(r"\b\d+(\.\d+)?\b", "N", text)
    text = re.sub(r"'[^']*'", lambda m: m.group(0) if len(m.group(0)) < 40 else "'…'", text)
    return text[:160]


def summarize(results: dict, out=sys.stdout) -> None:
    counts = collections.Counter()
    causes = collections.defaultdict(set)
    cause_count = collections.Counter()
    worst = collections.defaultdict(list)
    for name, rows in results.items():
        for row in rows:
            counts[row["class"]] += 1
            if row["class"] in ("unsupported", "export"):
                key = (row["class"], pattern(row["error"]))
                causes[key].add(name)
                cause_count[key] += 1
            if row["class"] in ("wrong", "crash"):
                worst[row["class"]].append((name, row))
    counted = sum(counts[c] for c in CLASSES)
    op_class = collections.Counter()
    for rows in results.values():
        classes = {r["class"] for r in rows} - {"skip"}
        if classes:
            best = next(c for c in ("wrong", "crash", "unsupported", "export", "pass")
                        if c in classes) if classes != {"pass"} else "pass"
            op_class[best] += 1
    print(f"\nOpInfos: {len(results)}; samples counted: {counted} "
          f"(skipped: {counts['skip']})", file=out)
    print(f"{'class':<12} {'samples':>8} {'%':>6} {'ops (worst class)':>18}", file=out)
    for c in CLASSES:
        share = 100.0 * counts[c] / counted if counted else 0.0
        print(f"{c:<12} {counts[c]:>8} {share:>6.1f} {op_class[c]:>18}", file=out)
    lowered = counted - counts["export"]
    if lowered:
        print(f"pass rate of the samples torch-mlir lowers: "
              f"{100.0 * counts['pass'] / lowered:.1f} %", file=out)
    for kind, top in (("unsupported", 20), ("export", 10)):
        print(f"\nTop {kind} causes (samples, ops):", file=out)
        ranked = [(key, n) for key, n in cause_count.most_common() if key[0] == kind]
        for key, n in ranked[:top]:
            ops = sorted(causes[key])
            shown = ", ".join(ops[:8]) + (f", +{len(ops) - 8}" if len(ops) > 8 else "")
            print(f"  {n:>4}  {key[1]}\n        [{shown}]", file=out)
    for c in ("wrong", "crash"):
        print(f"\n{c} ({len(worst[c])} samples):", file=out)
        for name, row in worst[c]:
            print(f"  {name} #{row['sample']} {row.get('inputs')} [{row.get('stage')}]: "
                  f"{row['error']}", file=out)


@contextlib.contextmanager
def _quiet():
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


def select_ops(args):
    from torch.testing._internal.common_methods_invocations import op_db

    ops = [op for op in op_db if torch.float32 in op.supported_dtypes("cpu")]
    if args.ops:
        wanted = set(args.ops.split(","))
        ops = [op for op in ops if op_key(op) in wanted or op.name in wanted]
    ops = ops[::args.every]
    if args.shard:
        i, n = (int(x) for x in args.shard.split("/"))
        ops = ops[i::n]
    if args.limit:
        ops = ops[:args.limit]
    return ops


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON results")
    parser.add_argument("--ops", help="comma-separated OpInfo names")
    parser.add_argument("--limit", type=int, help="number of OpInfos")
    parser.add_argument("--every", type=int, default=1, help="every K-th OpInfo")
    parser.add_argument("--samples", type=int, default=3, help="samples per OpInfo")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per sample")
    parser.add_argument("--shard", help="I/N: the I-th of N interleaved slices of the ops")
    parser.add_argument("--resume", action="store_true", help="skip ops already in --out")
    parser.add_argument("--merge", nargs="+", type=Path, help="join these outputs into --out")
    parser.add_argument("-q", "--quiet", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.merge:
        results = {}
        for path in args.merge:
            results.update(json.loads(path.read_text())["results"])
        meta = json.loads(args.merge[0].read_text())["meta"]
        if args.out:
            args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
        summarize(results)
        return 0

    if not args.worker:
        # The sweep runs in one worker process (no process per sample); a
        # native crash (torch-mlir's SIGFPE on some zero-size samples) kills
        # it, and the supervisor records the sample and starts it again.
        if args.out is None:
            args.out = Path("/tmp/opinfo_sweep.json")
        argv = [a for a in sys.argv[1:]]
        if "--out" not in argv:
            argv += ["--out", str(args.out)]
        code = supervise(argv, args.out)
        if code == 0 and args.out.exists():
            summarize(json.loads(args.out.read_text())["results"])
        return code

    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    ops = select_ops(args)
    results: dict[str, list[dict]] = {}
    previous = {}
    if args.resume and args.out.exists():
        previous = json.loads(args.out.read_text())
        results = previous["results"]
    meta = {**previous.get("meta", {}), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
            "samples_per_op": args.samples, "timeout_s": args.timeout,
            "argv": [a for a in sys.argv[1:] if a not in ("--worker", "--resume")], "excluded": EXCLUDED}
    start = time.monotonic()
    inflight = args.out.with_suffix(args.out.suffix + ".inflight")
    for n, op in enumerate(ops, 1):
        name = op_key(op)
        done = results.get(name)
        if done and not done[-1].get("resume"):
            continue
        if name in EXCLUDED:
            results[name] = [{"sample": 0, "class": "skip", "error": f"excluded: {EXCLUDED[name]}"}]
            continue
        op_start = time.monotonic()
        if done:
            done[-1].pop("resume")
        from nova.compiler.errors import NovaToolNotFoundError
        try:
            with _quiet():
                rows = sweep_op(op, args.samples, args.timeout, done or [], inflight)
        except NovaToolNotFoundError as error:
            # Tools missing (a rebuild under way?): stop; --resume goes on later.
            inflight.unlink(missing_ok=True)
            print(f"stopping at {name}: {first_line(error)}", file=sys.stderr)
            return 2
        results[name] = rows
        if not args.quiet:
            marks = " ".join(r["class"] for r in rows)
            print(f"[{n}/{len(ops)} {time.monotonic() - start:6.0f}s] {name:<40} "
                  f"{time.monotonic() - op_start:5.1f}s  {marks}", flush=True)
        meta["elapsed_s"] = round(meta.get("elapsed_s", 0) + time.monotonic() - op_start, 1)
        args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
