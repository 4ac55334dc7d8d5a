"""The options of ``torch.compile(model, backend="nova", options={...})``,
converted once from torch's untyped dict."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from nova.compiler.options import TargetOptions


@dataclass(frozen=True)
class BackendOptions:
    """What the backend compiles for and what it does with a graph it cannot compile.

    target, chips: as ``nova.compile`` takes them (a target name or ``.json``
        path; the number of chips, 0 for the target file's count).
    mesh, plan: a ``nova.parallel.Mesh`` and ``ParallelPlan``, together: each
        graph is partitioned over ``mesh.size`` chips. The plan names the
        model's state as ``nova.compile`` does (``"fc1.weight"``) and inputs
        by the name of the ``forward`` argument they come from.
    fallback: the ops of a graph that Nova cannot compile run in eager (the
        rest of the graph on Nova), with one ``NovaFallbackWarning`` per graph;
        ``False`` raises the compiler's error instead.
    disk_cache: compiled programs are cached on disk (``NOVA_CACHE_DIR``,
        else ``~/.cache/nova``; see :mod:`nova.dynamo.disk_cache`).
    dump_dir: every compiled graph's stages go to ``dump_dir/<graph>/``.
    double_buffer: as ``nova.compile``'s.
    """

    target: str = "nova-t1"
    chips: int = 1
    mesh: Any = None
    plan: Any = None
    fallback: bool = True
    disk_cache: bool = True
    dump_dir: str | None = None
    double_buffer: bool = True

    def __post_init__(self) -> None:
        TargetOptions(name=self.target, chips=self.chips)  # validates both
        if (self.mesh is None) != (self.plan is None):
            raise ValueError("nova backend: the mesh and plan options go together")
        for name in ("fallback", "disk_cache", "double_buffer"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"nova backend: option {name!r} must be a bool, "
                                 f"got {getattr(self, name)!r}")

    @classmethod
    def from_dict(cls, options: Mapping[str, Any] | None) -> "BackendOptions":
        """From ``torch.compile``'s ``options`` dict; an unknown key is an error."""
        options = dict(options or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"nova backend: unknown option(s) {unknown}; the options are "
                             f"{sorted(known)}")
        if options.get("dump_dir") is not None:
            options["dump_dir"] = str(options["dump_dir"])
        return cls(**options)

    @property
    def parallel(self) -> bool:
        return self.mesh is not None

    def cache_key(self) -> str:
        """What a compiled program depends on (not ``fallback``, ``disk_cache`` or ``dump_dir``)."""
        return repr((self.target, self.chips, self.mesh, self.plan, self.double_buffer))
