"""The demo job: a hand-written Nova kernel through nova-opt, until the lowering lands."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nova.compiler import pipeline
from nova.compiler.driver import run_opt, run_opt_file
from nova.compiler.errors import NovaError
from nova.compiler.options import TargetOptions
from nova.examples import example_path

DEFAULT_EXAMPLE = "matmul_bias_gelu"


@dataclass(frozen=True)
class DemoResult:
    example: Path
    target: TargetOptions
    output: str


def run_demo(example: str = DEFAULT_EXAMPLE, target: TargetOptions = TargetOptions()) -> DemoResult:
    """Attaches ``target`` to the shipped ``example`` and checks that the result round-trips.

    The output must parse and verify again, and printing it again must give the
    same text (print -> parse -> print is a fixed point).
    """
    path = example_path(example)
    output = run_opt_file(path, [pipeline.attach_target(target)])
    reprinted = run_opt(output)
    if reprinted != output:
        raise NovaError(f"nova-opt output for {path.name} does not round-trip to the same text")
    return DemoResult(example=path, target=target, output=output)
