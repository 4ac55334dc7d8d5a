import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nova.cli.main import main


def test_demo_runs_the_gpt_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out, _ = capsys.readouterr()
    assert "simulated time" in out
    assert "outputs match torch eager" in out


def test_demo_kernel_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--example", "matmul_bias_gelu"]) == 0
    out, err = capsys.readouterr()
    assert '#nova.target<name = "nova-t1"' in out
    for op in ("nova.dma_start", "nova.wait", "nova.fill", "nova.matmul", "nova.elementwise <add>",
               "nova.elementwise <erf>", "scf.for"):
        assert op in out, op
    assert "round-tripped" in err


def test_demo_console_script() -> None:
    """The `nova` entry point is installed next to the interpreter."""
    nova = shutil.which("nova") or str(Path(sys.executable).parent / "nova")
    run = subprocess.run([nova, "demo", "--example", "matmul_bias_gelu", "--chips", "2"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "chips = 2," in run.stdout
    assert "nova.matmul" in run.stdout


def test_demo_bad_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--example", "matmul_bias_gelu", "--target", "no-such-target"]) == 1
    _, err = capsys.readouterr()
    assert "cannot find target 'no-such-target'" in err
    assert "nova: error:" in err


def test_opt_passthrough(tmp_path: Path, matmul_ok: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ok.mlir"
    path.write_text(matmul_ok)
    assert main(["opt", str(path), "--nova-attach-target=target=nova-t1 chips=2"]) == 0
    out, _ = capsys.readouterr()
    assert "chips = 2," in out and "nova.matmul" in out


def test_opt_reports_diagnostics(
    tmp_path: Path, matmul_bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(matmul_bad)
    assert main(["opt", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{path}:4:3: error: 'nova.matmul' op lhs columns (8) must equal rhs rows (16)" in err


def test_opt_reads_stdin(matmul_ok: str, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO(matmul_ok))
    assert main(["opt", "-"]) == 0
    assert "func.func @matmul_ok" in capsys.readouterr().out
