"""The in-process cache of compiled graphs.

Dynamo calls the backend again whenever its guards fail (a new input shape,
another dtype, a second ``torch.compile`` of the same model), often with a
graph it has handed over before. Two levels keep Nova from compiling the
same thing twice:

- programs, keyed by the graph's fingerprint, the call's shapes, dtypes and
  strides (and Python scalars) and the options: a hit skips everything;
- binaries, keyed by the imported linalg text and the options: a graph that
  differs from an earlier one only in Dynamo's spelling (a dynamic graph
  specialised at a shape already compiled statically) skips nova-opt.

A graph that could not be compiled is remembered too (with the per-op
fallback's decision of which nodes run in eager), so it falls back once,
with one warning, and is not tried again at each call. Programs and those
decisions are also kept on disk (:mod:`nova.dynamo.disk_cache`), for the
next process. Each graph's counts for :func:`nova.dynamo.report` live here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CacheInfo:
    """Counts since the process started (or :func:`clear_cache`).

    compiles: graphs compiled by the nova-opt pipeline; imports: graphs
    exported and imported to linalg; hits: calls served by a program compiled
    before in this process; fallbacks: graphs that run in eager as a whole;
    programs: programs held; disk_hits: programs read from the disk cache;
    eager_ops: ops that run in eager inside graphs otherwise on Nova
    (per-op fallback); probes: the compiles that decided which.
    """

    compiles: int
    imports: int
    hits: int
    fallbacks: int
    programs: int
    #: nova-opt compilations by graph kind: "inference", and aot_autograd's
    #: "forward" and "backward" when the backend compiles for training.
    by_kind: dict[str, int] = field(default_factory=dict)
    disk_hits: int = 0
    eager_ops: int = 0
    probes: int = 0


@dataclass
class ProgramCache:
    programs: dict[tuple, Any] = field(default_factory=dict)
    binaries: dict[str, Any] = field(default_factory=dict)
    failures: dict[tuple, str] = field(default_factory=dict)
    #: (fingerprint, options) -> the per-op fallback's Decision for that graph.
    decisions: dict[tuple, Any] = field(default_factory=dict)
    #: label -> GraphStats, in the order the graphs were first called.
    graphs: dict[str, Any] = field(default_factory=dict)
    compiles: int = 0
    imports: int = 0
    hits: int = 0
    disk_hits: int = 0
    probes: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)

    def count_compile(self, kind: str) -> None:
        self.compiles += 1
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1

    def info(self) -> CacheInfo:
        return CacheInfo(compiles=self.compiles, imports=self.imports, hits=self.hits,
                         fallbacks=len(self.failures), programs=len(self.programs),
                         by_kind=dict(self.by_kind), disk_hits=self.disk_hits,
                         eager_ops=sum(len(g.eager_ops) for g in self.graphs.values()),
                         probes=self.probes)

    @staticmethod
    def binary_key(linalg: str, options_key: str) -> str:
        return hashlib.sha256(f"{options_key}\n{linalg}".encode()).hexdigest()


_CACHE = ProgramCache()


def program_cache() -> ProgramCache:
    return _CACHE


def cache_info() -> CacheInfo:
    """Compilations, imports, cache hits and fallbacks of the nova backend so far."""
    return _CACHE.info()


def clear_cache(disk: bool = False) -> None:
    """Forgets every compiled graph and fallback, and zeroes the counts
    (and the report); ``disk=True`` empties the disk cache too."""
    global _CACHE
    from nova.dynamo.partition import forget_probes

    _CACHE = ProgramCache()
    forget_probes()
    if disk:
        from nova.dynamo.disk_cache import clear_disk_cache

        clear_disk_cache()
