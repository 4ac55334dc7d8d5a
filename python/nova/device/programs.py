"""One ATen call as a Nova program: exported, compiled by the one compile driver,
cached in memory and on disk by signature and target.

The program is the op's functional form: a mutated argument (``self`` of
``add_``, ``out=``) is cloned in the exported function and returned, and the
kernel writes the result back into the tensor's memory.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator

import torch

from nova.binary.targets import load_target_dict, target_file
from nova.device.scalar_forms import form_of
from nova.device.signature import Signature, TensorSlot, mutated_positions, rebuild
from nova.errors import NovaError, NovaModelCompileError
from nova.version import __version__


class OpModule(torch.nn.Module):
    """``forward(*tensors)`` performs the call functionally and returns the values
    of the mutated arguments (in schema order) and then the fresh results."""

    def __init__(self, sig: Signature) -> None:
        super().__init__()
        self.sig = sig
        self.mutated = mutated_positions(sig.op)
        self.fresh = [i for i, r in enumerate(sig.op._schema.returns)
                      if r.alias_info is None]

    def forward(self, *tensors: torch.Tensor) -> tuple:
        args, kwargs = rebuild(self.sig, list(tensors))
        args = list(args)
        schema = self.sig.op._schema.arguments
        written = []
        for position in self.mutated:
            name = schema[position].name
            if position < len(args):
                args[position] = _clone(args[position])
                written.append(args[position])
            elif name in kwargs:
                kwargs[name] = _clone(kwargs[name])
                written.append(kwargs[name])
        if self.sig.lifted is not None:
            # The tensor form of the op (its out= / self is written with the result).
            result = form_of(self.sig.op)(tuple(args), kwargs)
            return (result.to(written[0].dtype) if written else result,)
        if self.sig.op is torch.ops.aten._index_put_impl_.default:
            # x[mask] = v reaches the device as the in-place impl; its functional
            # form is what the frontend computes without a data-dependent size.
            self_, indices, values = args[:3]
            accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
            return (torch.ops.aten.index_put.default(self_, indices, values, accumulate),)
        result = self.sig.op(*args, **kwargs)
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        out: list[torch.Tensor] = []
        for value in written:
            out.extend(value if isinstance(value, (list, tuple)) else [value])
        for i in self.fresh:
            value = results[i]
            out.extend(value if isinstance(value, (list, tuple)) else [value])
        return tuple(out)


def _clone(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [v.clone() for v in value]
    return value.clone()


def example(slot: TensorSlot) -> torch.Tensor:
    return torch.zeros(slot.shape, dtype=slot.dtype)


class NoKernel(NovaError):
    """The op has no Nova program (the reason says why); the kernel may fall back."""


def compile_op(sig: Signature, target: str) -> Any:
    """The signature's program for ``target`` (one chip), compiled on a thread of
    its own: an op may reach the device while the caller's thread is inside a
    tracer (Dynamo running a compiled frame, aot_autograd, a fake mode), whose
    thread-local state torch.export must not see."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="nova-compile") as pool:
        return pool.submit(_compile_op, sig, target).result()


def _compile_op(sig: Signature, target: str) -> Any:
    # The compiler and the exporter load on the first op, not at ``import torch``
    # (PyTorch's device autoload imports this package while torch itself loads).
    from nova.compiler.build import build_program
    from nova.compiler.errors import NovaOptionError, NovaToolNotFoundError
    from nova.compiler.options import TargetOptions
    from nova.frontend import import_model
    from nova.frontend.io_names import named_mlir
    from nova.frontend.state import param_arrays

    module: torch.nn.Module
    examples = [example(s) for s in sig.slots if isinstance(s, TensorSlot)]
    if sig.drawn:
        from nova.device.random_forms import RandomOpModule

        module = RandomOpModule(sig)
        examples.insert(0, torch.zeros((), dtype=torch.int64))  # the key
    else:
        module = OpModule(sig)
    try:
        imported = import_model(module, *examples)
        return build_program(named_mlir(imported, forward=module.forward),
                             TargetOptions(name=target, chips=1), params=param_arrays(imported),
                             binding=imported.binding)
    except (NovaToolNotFoundError, NovaOptionError):
        raise  # the installation or the settings, not the op: never cached as "no kernel"
    except NovaModelCompileError as e:
        raise NoKernel(_first_line(e)) from e


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


class ProgramCache:
    """Programs by signature and target: in memory, and on disk (``NOVA_CACHE_DIR``,
    default ``~/.cache/nova``) so a second process does not compile again. Disk
    entries are written to a temporary file and renamed into place, so processes
    writing the cache at once never read half a file."""

    def __init__(self) -> None:
        self.programs: dict[tuple[str, str], Any] = {}
        self.compiles = 0
        self.disk_hits = 0
        self.compile_seconds = 0.0

    def folder(self) -> Path:
        root = os.environ.get("NOVA_CACHE_DIR") or Path.home() / ".cache" / "nova"
        return Path(root) / "device-ops" / __version__

    def get(self, sig: Signature, target: str) -> Any:
        key = (sig.key, target)
        found = self.programs.get(key)
        if found is not None:
            if isinstance(found, NoKernel):
                raise found
            return found
        chip = chip_key(target)
        digest = hashlib.sha256(f"{chip}|{sig.key}".encode()).hexdigest()[:32]
        path = self.folder() / chip / f"{digest}.novaprog"
        with _compiling(path):  # one process compiles an op; the others wait and load it
            program = self._from_disk_or_compile(sig, target, path)
        self.programs[key] = program
        if isinstance(program, NoKernel):
            raise program
        return program

    def _from_disk_or_compile(self, sig: Signature, target: str, path: Path) -> Any:
        missing = path.with_suffix(".nokernel")
        program: Any = None
        if path.is_file():
            from nova.runtime.archive import load

            try:
                program = load(path)
                self.disk_hits += 1
            except NovaError:
                program = None  # a stale or foreign entry: compile again
        elif missing.is_file():
            program = NoKernel(missing.read_text())
        if program is None:
            import time

            start = time.perf_counter()
            try:
                program = compile_op(sig, target)
                _write_atomic(path, program.save)
            except NoKernel as e:
                program = e
                _write_atomic(missing, lambda p: Path(p).write_text(str(e)))
            finally:
                self.compiles += 1
                self.compile_seconds += time.perf_counter() - start
        return program


@contextlib.contextmanager
def _compiling(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path``'s entry across processes (torchrun's ranks
    compile the same ops at the same time); without a writable folder, no lock."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path.with_suffix(".lock"), "a")
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: Target keys that describe the system around a chip, not the chip: a one-chip
#: op program is the same on every target whose chips are the same.
_SYSTEM_KEYS = ("name", "description", "chips", "topology", "link_gbps", "link_latency_ns",
                "chips_per_node", "nics_per_node", "nic_gbps", "nic_latency_ns")


@functools.lru_cache(maxsize=16)
def chip_key(target: str) -> str:
    """The disk cache's folder for ``target``: its chip's name plus a digest of the
    chip's description (so nova-t1-ring8 and nova-t1-2node share nova-t1's ops)."""
    path = target_file(target)
    if path is None:
        return target
    d = load_target_dict(path)
    chip = {k: v for k, v in d.items() if k not in _SYSTEM_KEYS}
    digest = hashlib.sha256(json.dumps(chip, sort_keys=True).encode()).hexdigest()[:12]
    return f"chip-{digest}"


def _write_atomic(path: Path, write: Any) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        os.close(fd)
        write(tmp)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache folder: the in-memory cache still serves this process


cache = ProgramCache()
