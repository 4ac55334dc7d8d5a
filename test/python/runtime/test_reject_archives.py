"""Every corruption of a saved program (``.novaprog``) is one of Nova's errors naming
the file and the problem, from ``nova.load`` and as one line from ``nova inspect``
(issue 17, finding 4: BadZipFile, KeyError, NotImplementedError, EOFError and
AttributeError escaped before)."""

from __future__ import annotations

import io
import json
import struct
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from nova.cli.main import main
from nova.runtime.errors import BinaryFormatError, NovaRuntimeError, ProgramArchiveError
from nova.runtime.archive import load
from nova.runtime.program import CompiledProgram

VECTORS = Path(__file__).resolve().parents[2] / "vectors"


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A saved program: the matmul_relu vector with its first input bound."""
    binary = (VECTORS / "matmul_relu.nova").read_bytes()
    first = sorted(CompiledProgram(binary).binary.inputs, key=lambda e: e.index)[0]
    program = CompiledProgram(binary, [np.ones(first.shape, first.dtype.numpy_dtype)])
    path = tmp_path / "good.novaprog"
    program.save(path)
    return path


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def rezip(path: Path, contents: dict[str, bytes]) -> Path:
    out = path.with_name("bad.novaprog")
    with zipfile.ZipFile(out, "w") as archive:
        for name, blob in contents.items():
            archive.writestr(name, blob)
    return out


def refused(path: Path, pattern: str, capsys: pytest.CaptureFixture,
            kind: type = ProgramArchiveError) -> None:
    with pytest.raises(kind, match=pattern) as info:
        load(path)
    assert str(info.value).startswith(f"{path}: ")
    assert main(["inspect", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"nova: error: {path}: not a valid Nova program: ")


def test_the_saved_program_loads(saved: Path) -> None:
    assert len(load(saved).params) == 1


def test_damaged_member_was_badzipfile(saved: Path, capsys) -> None:
    data = bytearray(saved.read_bytes())
    at = bytes(data).index(b"NOVA")  # stored: the binary's bytes are in the zip as is
    data[at + 200] ^= 0xFF
    bad = saved.with_name("bad.novaprog")
    bad.write_bytes(bytes(data))
    refused(bad, "member 'program.nova' is corrupt: BadZipFile: Bad CRC-32", capsys)


@pytest.mark.parametrize("missing", ["meta.json", "program.nova", "param0.npy"])
def test_missing_member_was_keyerror(saved: Path, missing: str, capsys) -> None:
    contents = members(saved)
    del contents[missing]
    refused(rezip(saved, contents), f"member '{missing}' is missing", capsys)


def test_unknown_compression_was_notimplementederror(saved: Path, capsys) -> None:
    data = bytearray(saved.read_bytes())
    for magic, at in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):  # local and central headers
        start = 0
        while (k := bytes(data).find(magic, start)) >= 0:
            struct.pack_into("<H", data, k + at, 97)
            start = k + 4
    bad = saved.with_name("bad.novaprog")
    bad.write_bytes(bytes(data))
    refused(bad, "member 'meta.json' is corrupt: NotImplementedError", capsys)


def test_empty_parameter_was_eoferror(saved: Path, capsys) -> None:
    contents = members(saved)
    contents["param0.npy"] = b""  # numpy: EOFError "No data left in file"
    refused(rezip(saved, contents), "member 'param0.npy' is not a valid .npy array", capsys)


def test_truncated_parameter(saved: Path, capsys) -> None:
    contents = members(saved)
    contents["param0.npy"] = contents["param0.npy"][:-7]
    refused(rezip(saved, contents), "member 'param0.npy' declares .* but holds", capsys)


def test_parameter_header_claiming_a_huge_array(saved: Path, capsys) -> None:
    contents = members(saved)
    blob = contents["param0.npy"]
    header_end = blob.index(b"\n") + 1
    header = blob[:header_end].replace(b"'shape': (", b"'shape': (1000000000, ")
    contents["param0.npy"] = header + blob[header_end:]
    refused(rezip(saved, contents), "member 'param0.npy' (declares|is not a valid)", capsys)


@pytest.mark.parametrize("meta, pattern", [
    (b"[1, 2]", "meta.json must hold a JSON object, got list"),  # was AttributeError
    (b"{not json", "meta.json is not valid JSON"),
    (json.dumps({"format": "nova-program/1", "params": "two"}).encode(),
     "meta.json 'params' must be a count of parameters, got 'two'"),
    (json.dumps({"format": "nova-program/1", "params": 1, "binding": 3}).encode(),
     "meta.json 'binding' is malformed"),
    (json.dumps({"format": "something else", "params": 0}).encode(),
     "not a saved Nova program \\(format 'something else'\\)"),
    (json.dumps({"format": "nova-parallel-program/1", "params": 5}).encode(),
     "meta.json 'params' must list each chip's number of parameters, got 5"),
])
def test_malformed_metadata(saved: Path, meta: bytes, pattern: str, capsys) -> None:
    contents = members(saved)
    contents["meta.json"] = meta
    refused(rezip(saved, contents), pattern, capsys)


def test_parameter_of_the_wrong_shape(saved: Path, capsys) -> None:
    contents = members(saved)
    buffer = io.BytesIO()
    np.save(buffer, np.ones((3, 3), np.float32))
    contents["param0.npy"] = buffer.getvalue()
    refused(rezip(saved, contents), "member 'param0.npy' holds float32\\[3, 3\\] but input 0",
            capsys)


def test_corrupt_binary_inside_names_the_member(saved: Path, capsys) -> None:
    contents = members(saved)
    contents["program.nova"] = b"NOVA" + bytes(10)
    refused(rezip(saved, contents), "program.nova: truncated file", capsys, BinaryFormatError)


def test_unreadable_and_foreign_files(tmp_path: Path, capsys) -> None:
    junk = tmp_path / "junk.novaprog"
    junk.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip's end record, then nothing
    with pytest.raises(NovaRuntimeError, match=f"^{junk}: "):
        load(junk)
    text = tmp_path / "notes.novaprog"
    text.write_bytes(b"hello")
    refused(text, "bad magic", capsys, BinaryFormatError)
    with pytest.raises(ProgramArchiveError, match="cannot read"):
        load(tmp_path / "absent.novaprog")


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


@pytest.fixture
def saved_parallel(tmp_path: Path) -> Path:
    """A multi-chip program saved in the format of the former ParallelProgram
    (``nova-parallel-program/1``, written here member by member as its ``save``
    did): the 2-chip matmul_relu vector, first input bound per chip."""
    binary = (VECTORS / "matmul_relu.nova").read_bytes()
    first = sorted(CompiledProgram(binary).binary.inputs, key=lambda e: e.index)[0]
    param = np.ones(first.shape, first.dtype.numpy_dtype)
    path = tmp_path / "good2.novaprog"
    meta = {"format": "nova-parallel-program/1", "chips": 2, "params": [1, 1], "mesh": None,
            "inputs": [], "outputs": []}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("meta.json", json.dumps(meta))
        archive.writestr("program.nova", binary)
        for chip in range(2):
            archive.writestr(f"chip{chip}/param0.npy", npy(param))
    return path


def test_the_saved_parallel_program_loads(saved_parallel: Path) -> None:
    assert [len(p) for p in load(saved_parallel).chip_params] == [1, 1]


def test_a_program_binding_pieces_per_chip_saves_and_loads(tmp_path: Path) -> None:
    """The one program class saves chips' differing parameters per chip
    (``nova-program/2``), and loads them back unchanged."""
    binary = (VECTORS / "matmul_relu.nova").read_bytes()
    first = sorted(CompiledProgram(binary).binary.inputs, key=lambda e: e.index)[0]
    pieces = [np.full(first.shape, chip + 1, first.dtype.numpy_dtype) for chip in range(2)]
    path = tmp_path / "chips.novaprog"
    CompiledProgram(binary, chip_params=[[p] for p in pieces]).save(path)
    assert json.loads(members(path)["meta.json"])["format"] == "nova-program/2"
    assert sorted(members(path)) == ["chip0/param0.npy", "chip1/param0.npy", "meta.json",
                                     "program.nova"]
    loaded = load(path)
    assert [p[0].tolist() for p in loaded.chip_params] == [p.tolist() for p in pieces]


@pytest.mark.parametrize("change, pattern", [
    ({"chips": 1}, "meta.json lists parameters for 1 chip\\(s\\), the binary has 2"),
    ({"per_chip": [1]}, "meta.json 'per_chip' must list positions of the 1 parameters"),
    ({"layout": {"mesh": 3}}, "meta.json 'layout' is malformed: TypeError"),
])
def test_malformed_multi_chip_metadata(tmp_path: Path, change: dict, pattern: str,
                                       capsys) -> None:
    binary = (VECTORS / "matmul_relu.nova").read_bytes()
    first = sorted(CompiledProgram(binary).binary.inputs, key=lambda e: e.index)[0]
    path = tmp_path / "chips.novaprog"
    CompiledProgram(binary, chip_params=[[np.full(first.shape, c, np.float32)]
                                         for c in range(2)]).save(path)
    contents = members(path)
    meta = json.loads(contents["meta.json"])
    meta.update(change)
    contents["meta.json"] = json.dumps(meta).encode()
    refused(rezip(path, contents), pattern, capsys)


@pytest.mark.parametrize("change, pattern", [
    ({"params": [1]}, "meta.json lists parameters for 1 chip\\(s\\), the binary has 2"),
    ({"params": [1, 0]}, "chip1/param\\*.npy: 0 parameters, but chip 0 binds 1"),
    ({"params": [1, 2]}, "member 'chip1/param1.npy' is missing"),
    ({"mesh": {"shape": 3}}, "malformed multi-chip program: TypeError"),
    ({"inputs": None}, "malformed multi-chip program"),
])
def test_malformed_parallel_metadata(saved_parallel: Path, change: dict, pattern: str,
                                     capsys) -> None:
    contents = members(saved_parallel)
    meta = json.loads(contents["meta.json"])
    meta.update(change)
    contents["meta.json"] = json.dumps(meta).encode()
    refused(rezip(saved_parallel, contents), pattern, capsys)


def test_numpy_header_warnings_do_not_reach_the_cli(saved: Path, capsys) -> None:
    # "(8L, ..)": a Python 2 long in a .npy header, which numpy parses with a
    # UserWarning on stderr; the program is fine, and `nova inspect` prints no warning.
    contents = members(saved)
    blob = contents["param0.npy"]
    at = blob.index(b"'shape': (") + len(b"'shape': (")
    digits = at + blob[at:].index(b",")
    newline = blob.index(b"\n")
    contents["param0.npy"] = (blob[:digits] + b"L" + blob[digits:newline - 1]  # one pad less
                              + blob[newline:])
    path = rezip(saved, contents)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(load(path).params) == 1
        assert main(["inspect", str(path), "--no-code"]) == 0
    assert not [w for w in caught if "npy" in str(w.message)]
    assert capsys.readouterr().err == ""


def test_corrupt_binary_inside_a_parallel_program(saved_parallel: Path, capsys) -> None:
    contents = members(saved_parallel)
    contents["program.nova"] = contents["program.nova"][:100]
    refused(rezip(saved_parallel, contents), "program.nova: truncated file", capsys,
            BinaryFormatError)
