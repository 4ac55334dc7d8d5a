import os
import subprocess
from pathlib import Path

import pytest

import nova
from nova.compiler.errors import NovaToolNotFoundError
from nova.compiler.tools import TOOL_NAMES, find_tool, tools_dir

PACKAGE_DIR = Path(nova.__file__).resolve().parent


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_tools_installed_in_package(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOVA_TOOLS_DIR", raising=False)
    path = find_tool(name)
    assert path == PACKAGE_DIR / "bin" / name
    assert tools_dir() == PACKAGE_DIR / "bin"


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_tools_start_without_library_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """libMLIR.so and libLLVM.so come from the tools' RPATH, not the environment."""
    monkeypatch.delenv("NOVA_TOOLS_DIR", raising=False)
    path = find_tool(name)
    env = {key: value for key, value in os.environ.items() if key != "LD_LIBRARY_PATH"}
    ldd = subprocess.run(["ldd", str(path)], capture_output=True, text=True, env=env, check=True)
    assert "libMLIR.so" in ldd.stdout and "libLLVM.so" in ldd.stdout
    assert "not found" not in ldd.stdout
    run = subprocess.run([str(path), "--version"], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "LLVM version 22.1.8" in run.stdout


def test_target_descriptions_installed_next_to_tools(repo_root: Path) -> None:
    installed = PACKAGE_DIR / "targets"
    assert sorted(p.name for p in installed.glob("*.json")) == sorted(
        p.name for p in (repo_root / "targets").glob("*.json")
    )
    for path in installed.glob("*.json"):
        assert path.read_text() == (repo_root / "targets" / path.name).read_text()


def test_tools_dir_knob_overrides_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_TOOLS_DIR", str(PACKAGE_DIR / "bin"))
    assert find_tool("nova-opt") == PACKAGE_DIR / "bin" / "nova-opt"


def test_missing_tool_names_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_TOOLS_DIR", str(tmp_path))
    with pytest.raises(NovaToolNotFoundError, match=f"nova-opt in {tmp_path} .from NOVA_TOOLS_DIR"):
        find_tool("nova-opt")


def test_unknown_tool_name() -> None:
    with pytest.raises(ValueError, match="unknown tool 'mlir-opt'"):
        find_tool("mlir-opt")
