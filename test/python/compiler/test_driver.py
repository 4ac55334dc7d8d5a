from pathlib import Path

import pytest

import nova
from nova.compiler import pipeline
from nova.compiler.driver import run_opt, run_opt_file
from nova.compiler.errors import NovaCompileError, NovaToolNotFoundError
from nova.compiler.options import TargetOptions

ATTACH_T1 = pipeline.attach_target(TargetOptions())


def test_round_trip_without_passes(matmul_ok: str) -> None:
    output = run_opt(matmul_ok)
    assert "func.func @matmul_ok" in output
    assert run_opt(output) == output


def test_pass_pipeline_runs(matmul_ok: str) -> None:
    output = run_opt(matmul_ok, [ATTACH_T1])
    assert 'nova.target = #nova.target<name = "nova-t1"' in output
    assert "matrix_rows = 128" in output


def test_verifier_error_carries_diagnostic(matmul_bad: str) -> None:
    with pytest.raises(NovaCompileError) as info:
        run_opt(matmul_bad)
    error = info.value
    assert error.returncode != 0
    assert "<stdin>:4:3: error: 'nova.matmul' op lhs columns (8) must equal rhs rows (16)" in error.stderr
    assert error.stderr.strip() in str(error)
    assert error.command[0].endswith("nova-opt")


def test_file_diagnostics_name_the_file(matmul_bad: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(matmul_bad)
    with pytest.raises(NovaCompileError, match=r"bad\.mlir:4:3: error: 'nova.matmul' op lhs columns"):
        run_opt_file(path)


def test_pass_failure_surfaces(matmul_ok: str) -> None:
    """A pass that fails (unknown target) is reported with its own message."""
    bad_target = pipeline.attach_target(TargetOptions(name="no-such-target"))
    with pytest.raises(NovaCompileError) as info:
        run_opt(matmul_ok, [bad_target])
    assert "cannot find target 'no-such-target'" in info.value.stderr
    # The installed package's targets/ folder is searched first.
    assert str(Path(nova.__file__).resolve().parent / "targets") in info.value.stderr


def test_pass_verifier_with_target(tmp_path: Path) -> None:
    """With a target attached, a matmul wider than the matrix unit is rejected."""
    wide = """\
func.func @wide(%a: memref<4x256xf32, #nova.memory_space<sram>>,
                %b: memref<256x4xf32, #nova.memory_space<sram>>,
                %c: memref<4x4xf32, #nova.memory_space<acc>>) {
  nova.matmul ins(%a, %b : memref<4x256xf32, #nova.memory_space<sram>>, memref<256x4xf32, #nova.memory_space<sram>>)
              outs(%c : memref<4x4xf32, #nova.memory_space<acc>>)
  return
}
"""
    assert "nova.matmul" in run_opt(wide)
    with pytest.raises(NovaCompileError, match="contraction size 256"):
        run_opt(wide, [ATTACH_T1])


def test_unknown_pass_flag(matmul_ok: str) -> None:
    with pytest.raises(NovaCompileError, match="--no-such-pass"):
        run_opt(matmul_ok, ["--no-such-pass"])


def test_missing_tools_raise_before_running(
    matmul_ok: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOVA_TOOLS_DIR", str(tmp_path))
    with pytest.raises(NovaToolNotFoundError):
        run_opt(matmul_ok)


def test_killing_the_caller_kills_its_compiler(tmp_path: Path) -> None:
    """A Python process killed mid-compile leaves no nova-opt running (the
    child gets SIGKILL when its parent dies). The tool here is a stand-in
    nova-opt that records its pid and sleeps, reached through NOVA_TOOLS_DIR."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "tool.pid"
    tool = tmp_path / "nova-opt"
    tool.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 300\n")
    tool.chmod(0o755)
    caller = subprocess.Popen(
        [sys.executable, "-c", "from nova.compiler.driver import run_opt; run_opt('module {}')"],
        env={**os.environ, "NOVA_TOOLS_DIR": str(tmp_path)})
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline and caller.poll() is None, "the tool never started"
        time.sleep(0.05)
    tool_pid = int(pid_file.read_text())
    caller.send_signal(signal.SIGKILL)
    caller.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(tool_pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(tool_pid, signal.SIGKILL)
    pytest.fail(f"nova-opt (pid {tool_pid}) still running 10 s after its caller was killed")


def test_a_runaway_compile_ends_at_the_budget(tmp_path: Path, monkeypatch) -> None:
    """NOVA_COMPILE_TIMEOUT_S bounds every tool run: a tool that never finishes
    is killed and reported as a time-out naming the knob."""
    tool = tmp_path / "nova-opt"
    tool.write_text("#!/bin/sh\nexec sleep 300\n")
    tool.chmod(0o755)
    monkeypatch.setenv("NOVA_TOOLS_DIR", str(tmp_path))
    monkeypatch.setenv("NOVA_COMPILE_TIMEOUT_S", "0.5")
    with pytest.raises(NovaCompileError, match="timed out after 0.5 s.*NOVA_COMPILE_TIMEOUT_S"):
        run_opt("module {}")


def test_3d_max_pooling_over_a_large_input_compiles_within_a_budget(monkeypatch) -> None:
    """The census program that once spent minutes in nova-tiles-to-isa: a 3-D max
    pooling over [1, 8, 64, 64, 64] compiles inside a 30 s budget per tool run
    (it takes a few seconds; the budget is the issue's bound, not a timing)."""
    import torch

    class Pool(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.max_pool3d(x, 3, stride=2, padding=1)

    monkeypatch.setenv("NOVA_COMPILE_TIMEOUT_S", "30")
    nova.compile(Pool(), torch.randn(1, 8, 64, 64, 64))
