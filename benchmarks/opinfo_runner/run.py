"""One sample: torch-mlir's default lowering decides whether it is lowerable;
a lowerable one goes through Nova's export, the compiler and the simulator and
is compared with eager. Its class is one of ``CLASSES``."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import tempfile
import traceback
from pathlib import Path

import torch
import torch.utils._pytree as pytree

from .compare import compare
from .ops import tolerance
from .sample import Skip, clones, describe, make_module

#: pass: matches eager; wrong: runs and mismatches (every one a bug);
#: compile: Nova's export, import or compiler fails (a Nova error, a tool
#: crash or a timeout); sim: the simulator or runtime fails; notlowerable:
#: torch-mlir's own export_and_import (its default decompositions) cannot
#: lower the sample to linalg-on-tensors, so it does not count against Nova.
CLASSES = ("pass", "wrong", "compile", "sim", "notlowerable")
#: The stages of a sample, in order (the supervisor's record of a death names one).
STAGES = ("eager", "lowerable", "export", "import", "compile", "run", "compare")


class SampleTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise SampleTimeout()


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


def op_named(message: str) -> str | None:
    """The first MLIR or ATen op a message names (``math.acos``, ``aten.addmv``)."""
    found = re.search(r"\b((?:torch\.)?(?:aten|prims|linalg|tensor|math|arith|scf|tm_tensor|"
                      r"nova|memref|complex|cf|func|ml_program|torch_c)\.[\w.]*\w)", message)
    return found[1] if found else None


@contextlib.contextmanager
def capture_fd2():
    """Captures file descriptor 2 (torch-mlir prints its diagnostics there, not
    into the exception it raises); yields a function returning the text."""
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


def lowerable(module, tensors) -> str | None:
    """None when torch-mlir's ``export_and_import`` with its default
    decomposition table lowers the sample to linalg-on-tensors, else why not.
    Independent of Nova's frontend (its own decompositions and checks)."""
    from torch_mlir import fx

    with capture_fd2() as diagnostics:
        try:
            fx.export_and_import(module, *clones(tensors), output_type="linalg-on-tensors")
        except SampleTimeout:
            raise
        except Exception as error:  # noqa: BLE001 - torch.export or torch-mlir
            why = first_diagnostic(diagnostics()) or first_line(error)
            return f"{type(error).__name__}: {why}"
    return None


def _classify_compile_error(error, stage: str) -> dict:
    message = first_diagnostic(error.stderr) or error.args[0].splitlines()[0]
    if error.returncode < 0 or re.search(r"Assertion|LLVM ERROR|Stack dump|UNREACHABLE",
                                         error.stderr):
        lines = [ln for ln in error.stderr.splitlines()
                 if re.search(r"Assertion|LLVM ERROR|UNREACHABLE|error:", ln)]
        message = (f"{Path(error.command[0]).name} exit {error.returncode}: "
                   + (lines[0].strip() if lines else message))
    return {"class": "compile", "stage": stage, "error": message}


def run_sample(op, sample, dtype: torch.dtype, timeout: int = 60, mark=lambda stage: None,
               check_lowerable: bool = True) -> dict:
    """One sample's class and details (``error``, ``op`` the error names,
    ``stage``). ``check_lowerable=False`` skips torch-mlir's default lowering
    (the fast slice of the tests knows its samples lower)."""
    from nova.compiler.compile import compile_linalg
    from nova.compiler.errors import NovaCompileError, NovaError, NovaToolNotFoundError
    from nova.compiler.options import TargetOptions
    from nova.frontend.export import export, import_exported
    from nova.frontend.state import param_arrays
    from nova.runtime.errors import NovaRuntimeError
    from nova.runtime.program import CompiledProgram
    from nova.sim.errors import SimulationError

    module, tensors = make_module(op, sample)
    result = {"inputs": describe(tensors)}
    try:
        want = module(*clones(tensors))
    except Exception as error:  # noqa: BLE001 - eager itself rejects the sample
        raise Skip(f"eager fails: {first_line(error)}") from None
    if not want or not all(isinstance(w, torch.Tensor) for w in want):
        raise Skip("output is not tensors")
    if any(w.layout != torch.strided for w in want):
        raise Skip("non-strided output")

    stage = "lowerable"
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(timeout)
    try:
        if check_lowerable:
            mark(stage)
            why = lowerable(module, tensors)
            if why is not None:
                return {**result, "class": "notlowerable", "stage": stage, "error": why,
                        "op": op_named(why)}
        stage = "export"
        mark(stage)
        with capture_fd2() as diagnostics:
            try:
                exported = export(module, tuple(clones(tensors)))
                drawn = random_op(exported.graph)
                if drawn is not None:
                    # Dropout inside the op (sdpa's dropout_p, MHA's
                    # training=True): a draw from torch's generator, which no
                    # compiler reproduces; the random ops are excluded by
                    # name likewise.
                    return {**result, "class": "skip",
                            "error": f"random: draws from torch's generator ({drawn})"}
                stage = "import"
                mark(stage)
                imported = import_exported(exported)
            except (NovaError, NovaRuntimeError, SampleTimeout):
                raise
            except Exception as error:  # noqa: BLE001 - torch.export / torch-mlir
                # Lowerable by torch-mlir's defaults, so Nova's own export is at fault.
                why = first_diagnostic(diagnostics()) or first_line(error)
                raise _ExportFailure(f"{type(error).__name__}: {why}") from error
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
        kind = "sim" if stage == "run" else "compile"
        return {**result, "class": kind, "stage": stage, "error": f"timeout after {timeout} s"}
    except NovaToolNotFoundError:
        raise  # the environment, not the op: the sweep stops
    except NovaCompileError as error:
        row = _classify_compile_error(error, stage)
        return {**result, **row, "op": op_named(row["error"])}
    except _ExportFailure as error:
        return {**result, "class": "compile", "stage": stage, "error": str(error),
                "op": op_named(str(error))}
    except (SimulationError, NovaRuntimeError, NovaError) as error:
        kind = "sim" if stage == "run" else "compile"
        message = f"{type(error).__name__}: {first_line(error)}"
        return {**result, "class": kind, "stage": stage, "error": message,
                "op": op_named(message)}
    except Exception as error:  # noqa: BLE001 - a Python error inside Nova
        tb = traceback.extract_tb(error.__traceback__)
        where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
        kind = "sim" if stage == "run" else "compile"
        return {**result, "class": kind, "stage": stage,
                "error": f"{type(error).__name__}: {first_line(error)} ({where})"}
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)

    if isinstance(got, torch.Tensor):
        got = (got,)
    got = tuple(pytree.tree_flatten(got)[0])
    ok, why = compare(got, want, tolerance(op, dtype), dtype)
    if ok:
        return {**result, "class": "pass"}
    row = {**result, "class": "wrong", "stage": "compare", "error": why}
    if ties_only(tensors, got, want):
        row["error"] += ("; indices differ only between equal elements "
                         "(ties: which comes first is the kernel's choice)")
        return row
    if dtype == torch.bfloat16:
        if _matches_float32_reference(module, tensors, got, op, dtype):
            row["error"] += ("; matches eager run in float32 and rounded to bfloat16 "
                             "(eager rounds intermediates to bfloat16)")
        errors = float64_errors(module, tensors, got, want)
        if errors is not None:
            row["rmse_vs_float64"] = {"nova": errors[0], "eager": errors[1]}
            if errors[0] <= errors[1] and errors[1] > 0:
                row["error"] += (f"; closer to float64 than eager (RMSE {errors[0]:.3g} "
                                 f"vs eager's {errors[1]:.3g})")
    return row


def ties_only(tensors, got, want) -> bool:
    """Whether Nova's outputs equal eager's except integer index outputs that
    pick, along some dimension of the first input, elements equal to those
    eager's indices pick (sort, argsort, topk, kthvalue among ties)."""
    source = next((t for t in tensors if isinstance(t, torch.Tensor)), None)
    if source is None or source.dim() == 0:
        return False
    differing = False
    for g, w in zip(got, want):
        if g.shape != w.shape or g.dtype != w.dtype:
            return False
        if torch.equal(g, w):
            continue
        # Full-rank indices (sort, topk) or one dim reduced (kthvalue, mode).
        if w.dtype != torch.int64 or g.dim() not in (source.dim(), source.dim() - 1):
            return False
        picks_equal = False
        for d in range(source.dim()):
            gi, wi = (g, w) if g.dim() == source.dim() else (g.unsqueeze(d), w.unsqueeze(d))
            try:
                same = torch.equal(torch.gather(source, d, gi), torch.gather(source, d, wi))
            except (RuntimeError, IndexError):
                continue
            picks_equal |= same
        if not picks_equal:
            return False
        differing = True
    return differing


def float64_errors(module, tensors, got, want) -> tuple[float, float] | None:
    """RMSE of Nova's and of eager's low-precision float outputs against eager
    run on the inputs upcast to float64 (torch.compile's accuracy check,
    ``torch._dynamo.utils.same(..., fp64_ref=...)``, measures the same)."""
    try:
        upcast = [t.double() if t.is_floating_point() else t for t in clones(tensors)]
        ref = module(*upcast)
    except Exception:  # noqa: BLE001 - the op refuses float64
        return None
    sq_nova = sq_eager = 0.0
    count = 0
    for g, w, r in zip(got, want, ref):
        if not (w.is_floating_point() and r.is_floating_point()) or w.numel() == 0:
            continue
        finite = torch.isfinite(r) & torch.isfinite(w.double()) & torch.isfinite(g.double())
        sq_nova += float(((g.double() - r)[finite] ** 2).sum())
        sq_eager += float(((w.double() - r)[finite] ** 2).sum())
        count += int(finite.sum())
    if count == 0:
        return None
    return (sq_nova / count) ** 0.5, (sq_eager / count) ** 0.5


def _matches_float32_reference(module, tensors, got, op, dtype) -> bool:
    """Whether ``got`` matches eager computed on the inputs upcast to float32,
    its float results rounded back to ``dtype``: a low-precision mismatch
    then comes from eager rounding each intermediate, not from Nova."""
    try:
        upcast = [t.float() if t.dtype == dtype else t for t in clones(tensors)]
        ref = tuple(w.to(dtype) if w.dtype == torch.float32 else w for w in module(*upcast))
    except Exception:  # noqa: BLE001 - the op refuses float32 inputs mixed in
        return False
    return compare(got, ref, tolerance(op, dtype), dtype)[0]


def random_op(graph) -> str | None:
    """The first op of ``graph`` that draws from torch's generator."""
    for node in graph.nodes:
        if node.op == "call_function" and \
                torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ()):
            return str(node.target)
    return None


class _ExportFailure(Exception):
    """torch.export or torch-mlir failing inside Nova's export path."""
