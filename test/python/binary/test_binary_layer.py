"""nova.binary is the bottom layer: importing it (and every module in it) loads
nothing of the simulator, the runtime, the compiler or the frontend."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import nova.binary

_ABOVE = ("nova.sim", "nova.runtime", "nova.compiler", "nova.frontend", "nova.parallel",
          "nova.training", "nova.dynamo", "nova.api", "nova.cli")


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_nova_binary_loads_no_higher_layer():
    loaded = _loaded_after("import nova.binary")
    assert "nova.binary" in loaded
    assert [m for m in loaded if m.startswith(_ABOVE)] == []
    assert "torch" not in loaded


def test_every_module_of_nova_binary_loads_no_higher_layer():
    names = [f"nova.binary.{m.name}" for m in pkgutil.iter_modules(nova.binary.__path__)]
    assert "nova.binary.format" in names and "nova.binary.target_schema" in names
    loaded = _loaded_after("\n".join(f"import {n}" for n in names) +
                           "\nfrom nova.binary import load_binary, disassemble, Opcode")
    assert [m for m in loaded if m.startswith(_ABOVE)] == []


def test_public_names_are_the_ones_the_higher_layers_reexport():
    import nova.runtime
    import nova.sim

    assert nova.runtime.load_binary is nova.binary.load_binary
    assert nova.runtime.BinaryFormatError is nova.binary.BinaryFormatError
    assert nova.sim.TargetError is nova.binary.TargetError
    assert issubclass(nova.binary.TargetError, nova.NovaRuntimeError)
