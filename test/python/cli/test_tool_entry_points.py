"""The console scripts of pyproject.toml: nova --version, nova targets, and
nova-opt / nova-translate exec'ing the packaged tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch

import nova
from nova.cli.main import main
from nova.cli.versions import versions
from nova.binary.targets import available_targets
from nova.sim.target import load_target

ROOT = Path(__file__).resolve().parents[3]


def test_console_scripts_name_functions_that_exist():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["nova-opt"] == "nova.cli.tools:nova_opt"
    assert scripts["nova-translate"] == "nova.cli.tools:nova_translate"
    for target in scripts.values():
        module, _, name = target.partition(":")
        assert callable(getattr(__import__(module, fromlist=[name]), name))


def _run_script(function: str, *args: str) -> subprocess.CompletedProcess:
    # The console script's function, in a fresh interpreter (it replaces the process).
    code = f"import sys; sys.argv[1:] = {list(args)!r}; from nova.cli.tools import {function}; " \
           f"{function}()"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=os.environ)


@pytest.mark.parametrize("function, tool", [("nova_opt", "nova-opt"),
                                            ("nova_translate", "nova-translate")])
def test_tool_scripts_exec_the_packaged_binary_with_argv(function, tool):
    result = _run_script(function, "--help")
    assert result.returncode == 0, result.stderr
    assert "USAGE:" in result.stdout and tool in result.stdout


def test_nova_opt_script_runs_passes_on_a_file(tmp_path):
    source = tmp_path / "k.mlir"
    source.write_text("func.func @f(%a: f32) -> f32 {\n  %b = arith.addf %a, %a : f32\n"
                      "  return %b : f32\n}\n")
    result = _run_script("nova_opt", str(source), "--canonicalize")
    assert result.returncode == 0, result.stderr
    assert "arith.addf" in result.stdout and "func.func @f" in result.stdout


def test_a_missing_tool_is_one_line_and_status_1(tmp_path):
    env = {**os.environ, "NOVA_TOOLS_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", "from nova.cli.tools import nova_opt; "
                             "nova_opt()"], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 1
    assert result.stderr.startswith("nova-opt: error: cannot find an executable nova-opt")


def test_version_names_nova_torch_torch_mlir_and_mlir(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    lines = dict(line.split(None, 1) if not line.startswith("MLIR") else
                 ("MLIR", line.rsplit(None, 1)[1]) for line in out.splitlines())
    assert lines["nova"] == nova.__version__
    assert lines["torch"] == torch.__version__
    assert lines["torch-mlir"] not in ("", "unknown", "not installed")
    assert lines["MLIR"][0].isdigit()  # LLVM's version, from nova-opt --version
    assert versions()["nova"] == nova.__version__


def test_targets_lists_every_target_file_with_its_numbers(capsys):
    assert main(["targets"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:7] == ["name", "chips", "topology", "peak/chip", "peak/system",
                                  "HBM/chip", "HBM"]
    rows = {line.split()[0]: line for line in out[1:]}
    assert set(rows) == set(available_targets()) and "nova-t1" in rows
    t1 = json.loads(available_targets()["nova-t1"].read_text())
    cells = rows["nova-t1"].split()
    assert cells[1] == str(t1["chips"]) and cells[2] == t1["topology"]
    peak = load_target(available_targets()["nova-t1"]).peak_flops
    assert cells[3:5] == [f"{peak / 1e12:.1f}", "TFLOP/s"]
    assert cells[7:9] == [f"{t1['hbm_bytes'] / 2**30:g}", "GiB"]


@pytest.mark.parametrize("command", [["nova-opt", "--help"], ["nova-translate", "--help"],
                                     ["nova", "--version"], ["nova", "targets"]])
def test_installed_scripts_run_from_the_venvs_path(command):
    """After `pip install` (scripts/setup), the console scripts sit beside the
    venv's python: a fresh shell whose PATH is that folder finds and runs them."""
    folder = Path(sys.executable).parent
    # The suite runs against the installed package (scripts/setup), whose scripts sit here.
    assert (folder / "nova").exists(), f"no console scripts in {folder}: run scripts/setup"
    env = {**os.environ, "PATH": f"{folder}:/usr/bin:/bin"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
