"""Environment knobs: the one place where Nova reads environment variables.

Everything else asks :func:`knobs` instead of looking at ``os.environ``, so that
the list of variables that change Nova's behaviour is this file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from nova.errors import NovaError


class KnobError(NovaError, ValueError):
    """An environment variable Nova reads holds a value it cannot use."""


@dataclass(frozen=True)
class Knobs:
    """Settings taken from the environment.

    tools_dir: folder holding ``nova-opt`` and ``nova-translate``
        (``NOVA_TOOLS_DIR``), for running the Python package against a
        development build such as ``build-py/bin``; ``None`` means the tools
        installed with the package (``nova/bin``).
    sim_max_instructions: the simulator watchdog's budget of dynamic
        instructions per chip and run (``NOVA_SIM_MAX_INSTRUCTIONS``);
        ``None`` means the default of :mod:`nova.sim.watchdog`.
    sim_max_time_s: the watchdog's budget of simulated seconds per run
        (``NOVA_SIM_MAX_TIME_S``); ``None`` means the default.
    sim_host_memory: bytes of host memory a functional simulation may allocate
        (``NOVA_SIM_HOST_MEMORY``, e.g. ``16e9``); ``None`` means half the
        machine's physical memory (:mod:`nova.sim.memory`).
    cache_dir: where compiled programs are cached on disk (the
        ``torch.compile`` backend's cache): ``NOVA_CACHE_DIR``, else
        ``$XDG_CACHE_HOME/nova``, else ``~/.cache/nova`` (the XDG convention);
        ``None`` (a ``Knobs`` built by hand) means that default too.
    sim_fast: whether timing-only runs may use the compiled event loop
        (:mod:`nova.sim.fast_timing`); ``NOVA_SIM_FAST=0`` turns it off
        (``1`` or unset: on).
    sim_fuse: whether a functional run on the compiled loop may do a chain of
        tile matmuls accumulating over K into one accumulator as one matmul
        (:mod:`nova.sim.replay_plan`; f32 sums in another order, not
        bit-identical to the per-tile run); ``NOVA_SIM_FUSE=0`` turns it off.
    roll_layers: whether the compiler shares the code of identical
        consecutive layers through one loop over layers (nova-roll-layers);
        ``NOVA_ROLL_LAYERS=0`` compiles every layer straight-line.
    tile_search: whether the compiler picks nova-tile's limits by simulating
        a few candidates (:mod:`nova.compiler.tile_search`, cached per program
        and target in ``cache_dir``); ``NOVA_TILE_SEARCH=1`` turns it on (off
        by default: it compiles and simulates the program several times).
    compile_timeout_s: the budget of one compiler tool run (``nova-opt``,
        ``nova-translate``) in seconds (``NOVA_COMPILE_TIMEOUT_S``); a run past it
        is killed and reported as a time-out; ``None`` means the driver's default.
    verify_each: whether ``nova-opt`` verifies the IR after every pass of a
        stage it hands to the next tool as bytecode (``NOVA_VERIFY_EACH=1``,
        for finding the pass that broke it); off by default: that tool
        verifies the stage as it reads it, and verifying a training step's
        28 MB of IR after each of ~60 passes took 40 % of the tiling stage.
        Text results are always verified after every pass.
    torch_logs: torch's ``TORCH_LOGS`` as set; when it names ``nova``
        (``TORCH_LOGS=+nova``) the backend's loggers follow it
        (:mod:`nova.dynamo.logs`).
    """

    tools_dir: Path | None = None
    sim_max_instructions: int | None = None
    sim_max_time_s: float | None = None
    sim_host_memory: int | None = None
    cache_dir: Path | None = None
    sim_fast: bool = True
    sim_fuse: bool = True
    roll_layers: bool = True
    tile_search: bool = False
    compile_timeout_s: float | None = None
    verify_each: bool = False
    torch_logs: str = ""

    def __post_init__(self) -> None:
        for name in ("tools_dir", "cache_dir"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                raise TypeError(f"{name} must be a Path, got {type(value).__name__}")
        n = self.sim_max_instructions
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise TypeError(f"sim_max_instructions must be a positive int, got {n!r}")
        s = self.sim_max_time_s
        if s is not None and (isinstance(s, bool) or not isinstance(s, (int, float))
                              or not 0 < s < float("inf")):
            raise TypeError(f"sim_max_time_s must be a positive number of seconds, got {s!r}")


def _number(env: Mapping[str, str], name: str, integer: bool) -> int | float | None:
    """A positive number from ``env[name]`` (``1e9`` is fine for an integer), or None."""
    text = (env.get(name) or "").strip()
    if not text:
        return None
    try:
        value: float = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf") or (integer and not value.is_integer()):
        raise KnobError(f"{name}={text!r}: expected a positive "
                        f"{'integer' if integer else 'number'}")
    return int(value) if integer else value


def knobs(environ: Mapping[str, str] | None = None) -> Knobs:
    """Reads the knobs from ``environ`` (default: the process environment) now."""
    env = os.environ if environ is None else environ
    tools_dir = env.get("NOVA_TOOLS_DIR") or None
    return Knobs(tools_dir=Path(tools_dir).expanduser() if tools_dir else None,
                 sim_max_instructions=_number(env, "NOVA_SIM_MAX_INSTRUCTIONS", True),
                 sim_max_time_s=_number(env, "NOVA_SIM_MAX_TIME_S", False),
                 sim_host_memory=_number(env, "NOVA_SIM_HOST_MEMORY", True),
                 cache_dir=_cache_dir(env),
                 sim_fast=_switch(env, "NOVA_SIM_FAST"),
                 sim_fuse=_switch(env, "NOVA_SIM_FUSE"),
                 roll_layers=_switch(env, "NOVA_ROLL_LAYERS"),
                 tile_search=_switch(env, "NOVA_TILE_SEARCH", default=False),
                 compile_timeout_s=_number(env, "NOVA_COMPILE_TIMEOUT_S", False),
                 verify_each=_switch(env, "NOVA_VERIFY_EACH", default=False),
                 torch_logs=env.get("TORCH_LOGS") or "")


def _switch(env: Mapping[str, str], name: str, default: bool = True) -> bool:
    """``0`` off, ``1`` on, unset ``default``."""
    text = (env.get(name) or "").strip()
    if text not in ("", "0", "1"):
        raise KnobError(f"{name}={text!r}: expected 0 or 1")
    return default if text == "" else text == "1"


def _cache_dir(env: Mapping[str, str]) -> Path:
    """``NOVA_CACHE_DIR``, else the XDG cache home's ``nova`` folder."""
    explicit = (env.get("NOVA_CACHE_DIR") or "").strip()
    if explicit:
        return Path(explicit).expanduser()
    xdg = (env.get("XDG_CACHE_HOME") or "").strip()
    # The XDG spec ignores a relative XDG_CACHE_HOME.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path("~/.cache").expanduser()
    return base / "nova"
