"""nova compile / run / profile / inspect, called through main(argv)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import nova
from nova import models
from nova.cli.main import main

MODEL_FILE = """\
import torch
from nova import models
torch.manual_seed(0)
model = models.MLP(16, 32)
example_inputs = (torch.randn(4, 16),)
"""

GET_MODEL_FILE = """\
import torch
from nova import models

def get_model():
    return models.GELU(), torch.randn(2, 8)
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli")
    (folder / "mlp.py").write_text(MODEL_FILE)
    assert main(["compile", str(folder / "mlp.py"), "-o", str(folder / "mlp.novaprog"),
                 "--dump-dir", str(folder / "ir")]) == 0
    return folder / "mlp.novaprog"


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.startswith("nova: error:")]
    assert len(lines) == 1, err
    return lines[0]


# compile -----------------------------------------------------------------------------------
def test_compile_writes_a_loadable_program(compiled: Path) -> None:
    torch.manual_seed(0)
    model = models.MLP(16, 32).eval()
    x = torch.randn(4, 16)
    program = nova.load(compiled)
    torch.testing.assert_close(program(x), model(x), rtol=1e-4, atol=1e-4)
    assert sorted(p.name for p in (compiled.parent / "ir").iterdir())[0] == "0-linalg.mlir"


def test_compile_prints_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "gelu.py").write_text(GET_MODEL_FILE)
    assert main(["compile", str(tmp_path / "gelu.py")]) == 0
    _, err = capsys.readouterr()
    for stage in ("exporting", "compiling", "encoding"):
        assert f"{stage} " in err, err
    assert f"wrote {tmp_path / 'gelu.novaprog'}" in err
    assert (tmp_path / "gelu.novaprog").is_file()


def test_compile_help_documents_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["compile", "--help"])
    out, _ = capsys.readouterr()
    assert "example_inputs" in out and "get_model()" in out


def test_compile_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(tmp_path / "nope.py")]) == 1
    assert "nope.py: no such file" in _error(capsys)


def test_compile_file_without_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.py").write_text("x = 1\n")
    assert main(["compile", str(tmp_path / "empty.py")]) == 1
    assert "no `model` or `get_model()` found" in _error(capsys)


def test_compile_file_that_raises(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.py").write_text("raise RuntimeError('boom')\n")
    assert main(["compile", str(tmp_path / "bad.py")]) == 1
    assert "raised RuntimeError: boom" in _error(capsys)


def test_compile_model_without_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "half.py").write_text("import torch\nmodel = torch.nn.ReLU()\n")
    assert main(["compile", str(tmp_path / "half.py")]) == 1
    assert "not `example_inputs`" in _error(capsys)


# run ---------------------------------------------------------------------------------------
def test_run_random_inputs_and_save(compiled: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    out_path = tmp_path / "out.npz"
    assert main(["run", str(compiled), "--random", "-o", str(out_path)]) == 0
    out, _ = capsys.readouterr()
    assert "float32[4, 16]" in out and "mean" in out
    assert "simulated time" in out
    with np.load(out_path) as data:
        assert [data[k].shape for k in data.files] == [(4, 16)]


def test_run_with_inputs_file(compiled: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x)
    assert main(["run", str(compiled), "--inputs", str(tmp_path / "in.npz"),
                 "-o", str(tmp_path / "out.npz")]) == 0
    expected = nova.load(compiled)(torch.from_numpy(x)).numpy()
    with np.load(tmp_path / "out.npz") as data:
        np.testing.assert_allclose(data[data.files[0]], expected)


def test_run_inputs_of_wrong_shape(compiled: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    np.savez(tmp_path / "in.npz", np.zeros((3, 16), np.float32))
    assert main(["run", str(compiled), "--inputs", str(tmp_path / "in.npz")]) == 1
    assert "input 0 must have shape [4, 16], got [3, 16]" in _error(capsys)


def test_run_corrupt_binary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "junk.nova").write_bytes(b"NOVA" + bytes(60))
    assert main(["run", str(tmp_path / "junk.nova")]) == 1
    assert "not a valid Nova program" in _error(capsys)


def test_run_missing_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "none.novaprog")]) == 1
    assert "none.novaprog: no such file" in _error(capsys)


# profile -----------------------------------------------------------------------------------
def test_profile_prints_report_and_writes_trace(compiled: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace.json"
    assert main(["profile", str(compiled), "--trace", str(trace)]) == 0
    out, _ = capsys.readouterr()
    assert "roofline" in out and "simulated time" in out
    events = json.loads(trace.read_text())
    assert events  # a Chrome trace: a list of events or {"traceEvents": [...]}


# inspect -----------------------------------------------------------------------------------
def test_inspect_program(compiled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(compiled)]) == 0
    out, _ = capsys.readouterr()
    for text in ("format version", "target            nova-t1", "sections", "param",
                 "input", "output", "disassembly", "matmul", "halt"):
        assert text in out, text


def test_inspect_bare_binary(compiled: Path, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    bare = tmp_path / "mlp.nova"
    bare.write_bytes(nova.load(compiled).binary_bytes)
    assert main(["inspect", str(bare), "--no-code"]) == 0
    out, _ = capsys.readouterr()
    assert "0 bound parameter(s)" in out and "disassembly" not in out


def test_inspect_corrupt_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.novaprog").write_bytes(b"PK\x03\x04 not really a zip")
    assert main(["inspect", str(tmp_path / "bad.novaprog")]) == 1
    assert "bad.novaprog: not a valid Nova program" in _error(capsys)
