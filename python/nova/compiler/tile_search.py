"""Tile-size search: nova-tile's limits chosen by simulating candidates.

nova-tile cuts every op by fixed heuristics (rows up to ``max-rows``, an
elementwise op's columns up to ``max-cols``). Whether smaller tiles (more
overlap between loads and compute) or larger ones (fewer instructions and
synchronisations) win depends on the program and the chip, so a search
compiles the program with a few limits, simulates each in timing-only mode
(shapes and costs, no numbers: milliseconds) and keeps the fastest. The
defaults stay unless a candidate is faster by ``MARGIN``. The choice is cached
per program text and target in ``<cache_dir>/tile-search.json``; an
unreadable cache is ignored (and rewritten).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Callable

from nova.compiler.errors import NovaCompileError
from nova.compiler.options import TargetOptions

#: nova-tile's (max-rows, max-cols) defaults: the first candidate.
DEFAULT = (512, 512)
CANDIDATES = (DEFAULT, (256, 512), (1024, 512), (512, 256), (512, 1024), (2048, 1024))
#: A candidate replaces the defaults only when this much faster.
MARGIN = 0.01
_FILE = "tile-search.json"


@dataclass
class SearchResult:
    tile: tuple[int, int]
    #: simulated seconds per candidate tried (absent: did not compile).
    times: dict[tuple[int, int], float] = field(default_factory=dict)
    cached: bool = False


def _key(linalg: str, target: TargetOptions) -> str:
    from nova.binary.targets import target_file

    digest = hashlib.sha256(linalg.encode())
    digest.update(f"{target.name}:{target.chips}".encode())
    try:
        found = target_file(target.name)
        if found is not None:
            digest.update(found.read_bytes())  # the chip's contents, not its name
    except (OSError, ValueError):
        pass  # unknown here: its name is the key
    return digest.hexdigest()


def _load(path) -> dict:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def simulated_time(binary: bytes) -> float:
    """Simulated seconds of one timing-only run of ``binary`` (no inputs)."""
    from nova.sim import Simulator

    _, report = Simulator(binary, functional=False).run()
    return report.time_s


def search(linalg: str, target: TargetOptions,
           compile_with: Callable[[tuple[int, int]], bytes],
           candidates: tuple[tuple[int, int], ...] = CANDIDATES) -> SearchResult:
    """The fastest of ``candidates`` for ``linalg`` on ``target``;
    ``compile_with(tile)`` returns the binary compiled with those limits."""
    from nova.knobs import knobs

    path = knobs().cache_dir / _FILE
    key = _key(linalg, target)
    cache = _load(path)
    entry = cache.get(key)
    if (isinstance(entry, list) and len(entry) == 2
            and all(isinstance(v, int) and v > 0 for v in entry)):
        return SearchResult(tile=(entry[0], entry[1]), cached=True)
    result = SearchResult(tile=DEFAULT)
    for tile in candidates:
        try:
            result.times[tile] = simulated_time(compile_with(tile))
        except NovaCompileError:
            if tile == DEFAULT:
                raise
    best = min(result.times, key=result.times.__getitem__)
    if result.times[best] < result.times[DEFAULT] * (1 - MARGIN):
        result.tile = best
    cache = _load(path)  # another process may have written meanwhile
    cache[key] = list(result.tile)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cache, indent=0))
    except OSError:
        pass  # a read-only cache only costs the search next time
    return result
