"""CompiledProgram: saving and loading, stage dumps, reports, traces and bad input."""

from __future__ import annotations

import json

import pytest
import torch

import nova
from nova import models
from nova.runtime.program import ProgramInputError


@pytest.fixture(scope="module")
def mlp_program():
    torch.manual_seed(0)
    model = models.MLP(32, 64).eval()
    x = torch.randn(8, 32)
    return model, x, nova.compile(model, x)


def test_save_and_load_round_trip(tmp_path, mlp_program):
    model, x, program = mlp_program
    path = tmp_path / "mlp.novaprog"
    program.save(path)
    loaded = nova.load(path)
    torch.testing.assert_close(loaded(x), program(x))


def test_dump_dir_has_every_stage(tmp_path):
    model = models.GELU().eval()
    nova.compile(model, torch.randn(4, 8), dump_dir=tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["0-linalg.mlir", "1-nova.mlir", "2-nova_isa.mlir", "3-binary.nova"]
    assert "nova.elementwise <erf>" in (tmp_path / "1-nova.mlir").read_text()
    assert "nova_isa.halt" in (tmp_path / "2-nova_isa.mlir").read_text()


def test_report_counts_time_and_traffic(mlp_program):
    _, x, program = mlp_program
    program(x)
    report = program.report
    assert report.time_s > 0
    assert report.flops >= 2 * 8 * 32 * 64 * 2
    assert 0 < report.roofline_fraction <= 1


def test_wrong_input_shape_is_a_clear_error(mlp_program):
    _, _, program = mlp_program
    with pytest.raises(ProgramInputError, match=r"input 0 must have shape \[8, 32\], got \[4, 32\]"):
        program(torch.randn(4, 32))


def test_wrong_input_dtype_is_a_clear_error(mlp_program):
    _, _, program = mlp_program
    with pytest.raises(ProgramInputError, match="input 0 must have dtype float32, got float64"):
        program(torch.randn(8, 32, dtype=torch.float64))


def test_wrong_input_count_is_a_clear_error(mlp_program):
    _, x, program = mlp_program
    with pytest.raises(ProgramInputError, match=r"takes 1 input\(s\), got 2"):
        program(x, x)


def test_unsupported_op_names_the_source_line():
    class Windows(torch.nn.Module):
        def forward(self, x):
            # Windows of more than 256 elements stay torch-mlir's window map.
            return x.unfold(-1, 300, 300).flatten(-2) * 2  # the line the error must show

    with pytest.raises(nova.NovaModelCompileError) as info:
        nova.compile(Windows(), torch.randn(4, 600))
    message = str(info.value)
    assert "indexing map that is not a projected permutation" in message
    assert "return x.unfold(-1, 300, 300).flatten(-2) * 2  # the line the error must show" in message
    assert info.value.frame is not None and info.value.frame.file == __file__


def test_corrupted_saved_binary_is_rejected(tmp_path, mlp_program):
    _, _, program = mlp_program
    data = bytearray(program.binary_bytes)
    data[len(data) // 2] ^= 0xFF
    path = tmp_path / "flipped.nova"
    path.write_bytes(bytes(data))
    with pytest.raises(nova.runtime.BinaryFormatError, match="checksum"):
        nova.load(path)
    path.write_bytes(program.binary_bytes[: len(program.binary_bytes) // 3])
    with pytest.raises(nova.runtime.BinaryFormatError):
        nova.load(path)


def test_gpt_block_trace_is_chrome_json_with_dma_overlapping_compute(tmp_path):
    torch.manual_seed(0)
    cfg = models.GPTConfig(d_model=64, n_heads=4, seq_len=16)
    block = models.GPTBlock(cfg).eval()
    x = torch.randn(2, cfg.seq_len, cfg.d_model)
    program = nova.compile(block, x)
    program.run(x, trace=True)
    path = tmp_path / "trace.json"
    program.write_trace(path)
    events = json.loads(path.read_text())["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    assert spans, "no complete events in the trace"

    def track(e):
        return str(e.get("tid")) + str(e.get("name", ""))

    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    dma = [e for e in spans if str(names.get(e["tid"], "")).startswith("dma")]
    compute = [e for e in spans if names.get(e["tid"]) in ("matrix", "vector")]
    assert dma and compute
    overlaps = sum(1 for d in dma for c in compute
                   if d["ts"] < c["ts"] + c["dur"] and c["ts"] < d["ts"] + d["dur"])
    assert overlaps > 0, "no DMA runs while the matrix or vector engine computes"


def test_weights_stay_resident_between_calls(mlp_program):
    model, x, program = mlp_program
    other = torch.randn_like(x)
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(program(other), model(other), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(program(x), model(x), rtol=1e-4, atol=1e-5)


def test_op_outside_nova_dialects_names_the_source_line():
    class ScalarScatter(torch.nn.Module):
        def forward(self, x, i, s):
            return x.scatter_add(0, i, s)  # 0-d: torch-mlir's tm_tensor.scatter

    args = (torch.tensor(1.5), torch.tensor(0), torch.tensor(2.5))
    with pytest.raises(nova.NovaUnsupportedOpError) as info:
        nova.compile(ScalarScatter(), *args)
    assert "'tm_tensor." in str(info.value) and "has no Nova lowering" in str(info.value)
    assert "x.scatter_add(0, i, s)" in str(info.value)


def test_full_reduction_to_a_scalar_matches_torch():
    """A mean over every element (a loss) reduces to a rank-0 tensor; its
    accumulator tile is reshaped to and from rank 0 without reassociation."""
    class MeanSquare(torch.nn.Module):
        def forward(self, x):
            return (x * x).mean()

    x = torch.randn(8, 4)
    program = nova.compile(MeanSquare(), x)
    torch.testing.assert_close(program(x), (x * x).mean(), rtol=1e-4, atol=1e-5)


def test_unsigned_tensors_are_computed_not_miscomputed():
    """torch-mlir lowers uint8 as a signed i8 (x.byte() as fptosi): Nova carries
    uint8 in int32 instead (nova.frontend.narrow_ints), so the bytes are eager's."""
    class Byte(torch.nn.Module):
        def forward(self, x):
            return x.byte()

    x = torch.tensor([[178.6, 5.0, 200.0]])
    out = nova.compile(Byte(), x)(x)
    assert out.dtype == torch.uint8
    torch.testing.assert_close(out, Byte()(x), rtol=0, atol=0)


def test_zero_size_tensors_compile():
    class MatMul(torch.nn.Module):
        def forward(self, a, b):
            return a @ b

    # K = 0: zeros, filled by the accelerator; the empty inputs stay on the host.
    a, b = torch.randn(5, 0), torch.randn(0, 10)
    assert torch.equal(nova.compile(MatMul(), a, b)(a, b), torch.zeros(5, 10))
