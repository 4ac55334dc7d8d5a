"""bf16 and f16 models end to end: `model.to(torch.bfloat16)` compiles, its
matmuls run on the matrix unit with bf16/f16 operands (f32 accumulation), and
the numbers are as close to the float32 model as torch's own bf16/f16 eager
is. Nova evaluates each fused elementwise chain in f32 and rounds once per
tensor, where eager rounds after every op, so the two low-precision results
are compared through the float32 reference rather than bit for bit."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.models import GPT, MLP, GPTConfig
from nova.binary.isa import DType, Opcode


def _matmul_operand_dtypes(program, skip_rows: int | None = None) -> set:
    """The operand dtypes of the program's matmuls; ``skip_rows``: leave out
    those whose lhs has that many rows."""
    binary = program.binary
    found = set()
    for chip_program in binary.programs:
        tiles = chip_program.tiles
        for ins in chip_program.instructions:
            if ins.opcode == Opcode.MATMUL:
                lhs = tiles[ins.tiles[0]]
                if skip_rows is not None and lhs.shape[0] == skip_rows:
                    continue
                found.add(lhs.dtype)
    return found


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_linear_relu_low_precision_matches_eager(dtype):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU()).eval().to(dtype)
    x = torch.randn(16, 64).to(dtype)
    program = nova.compile(model, x, target="nova-t1")
    y = program(x)
    assert y.dtype == dtype
    # One matmul with f32 accumulation, one rounding: eager does the same.
    torch.testing.assert_close(y, model(x), rtol=1e-2, atol=1e-2)
    assert _matmul_operand_dtypes(program) == {DType.BF16 if dtype == torch.bfloat16 else DType.F16}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_gpt_lm_low_precision_as_close_as_eager(dtype):
    torch.manual_seed(0)
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16, vocab_size=128)).eval()
    ids = torch.randint(0, 128, (2, 16))
    with torch.no_grad():
        reference = model(ids)
        low = model.to(dtype)
        eager_error = (low(ids).float() - reference).abs().max().item()
    program = nova.compile(low, ids, target="nova-t1")
    logits = program(ids)
    assert logits.dtype == dtype
    nova_error = (logits.float() - reference).abs().max().item()
    assert nova_error <= 2 * eager_error + 1e-3, (nova_error, eager_error)
    if dtype == torch.float16:
        assert _matmul_operand_dtypes(program) == {DType.F16}
    else:
        # bf16 attention is fused: its P V runs on f32 P and [V 1] (lhs
        # [head_dim + 1, keys]: the vector unit writes P in f32), every other
        # matmul on bf16 operands.
        assert DType.F32 in _matmul_operand_dtypes(program)
        assert _matmul_operand_dtypes(program, skip_rows=64 // 4 + 1) == {DType.BF16}


def _matrix_busy_ns(report) -> float:
    return sum(e.busy_ns for e in report.engines if e.engine == "matrix")


def test_bf16_matmul_runs_at_the_bf16_rate():
    """The same MLP in bf16 keeps the matrix unit busy for less simulated
    time than in f32 (it streams bf16 rows at four times the f32 rate). The
    whole program is not faster yet: the elementwise chains convert to f32
    and back on the vector unit."""
    torch.manual_seed(0)
    model = MLP(128, 256).eval()
    x = torch.randn(64, 128)
    f32 = nova.compile(model, x, target="nova-t1")
    f32(x)
    bf16 = nova.compile(model.to(torch.bfloat16), x.to(torch.bfloat16), target="nova-t1")
    bf16(x.to(torch.bfloat16))
    assert _matrix_busy_ns(bf16.report) < 0.75 * _matrix_busy_ns(f32.report)


def test_hf_llama_bf16_error_within_twice_eager_bf16():
    # Issue 10's bar: against the float32 model, Nova's bf16 max and mean
    # errors are at most twice eager bf16's (measured: max 0.0030 vs eager's
    # 0.0039, mean 6.4e-4 vs 7.1e-4).
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
        attn_implementation="eager", use_cache=False)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    ids = torch.randint(0, 128, (2, 32))
    reference = model(ids).logits
    low = transformers.LlamaForCausalLM(config).eval()
    low.load_state_dict(model.state_dict())
    low = low.to(torch.bfloat16)
    eager = (low(ids).logits.float() - reference).abs()
    ours = (nova.compile(low, ids)(ids).logits.float() - reference).abs()
    assert ours.max() <= 2 * eager.max()
    assert ours.mean() <= 2 * eager.mean()
