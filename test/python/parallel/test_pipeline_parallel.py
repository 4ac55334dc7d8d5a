"""Pipeline parallelism (PP=2 stages x M=4 microbatches, GPipe forward) of the
GPT on 2 simulated chips (switch and ring systems), against torch eager."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.models.gpt import GPT, GPTConfig
from nova.parallel.pipeline import compile_pipeline, split_gpt

RTOL, ATOL = 1e-4, 1e-5


@pytest.mark.parametrize("target", ["nova-t1", "nova-t1-ring8"])
def test_pipeline_gpt_matches_torch_and_overlaps(target: str, monkeypatch) -> None:
    # The one-chip reference compiled as the stages are: layers straight-line
    # (pipeline stages keep them so; a loop over layers changes the one-chip
    # time it is compared with).
    monkeypatch.setenv("NOVA_ROLL_LAYERS", "0")
    torch.manual_seed(0)
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16)).eval()
    x = torch.randn(4, 16, 64)
    program = compile_pipeline(split_gpt(model, 1), x, microbatches=4, target=target)
    merged = program.stages["nova"]
    assert merged.count("nova.send ins") == 4 and merged.count("nova.recv outs") == 4
    assert "nova.chips = array<i64: 0>" in merged and "nova.chips = array<i64: 1>" in merged
    with torch.no_grad():
        expected = model(x)
    got = program(x)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    # The stages overlap: faster than one chip running the four microbatches
    # one after another. (One chip running the whole batch at once is faster
    # still at this toy size: batch 4 costs it 2.2x batch 1, not 4x.)
    micro = x[:1]
    single = nova.compile(model, micro, target=target, chips=2 if "ring" in target else 1)
    single(micro)
    assert 0 < program.report.time_s < 4 * single.report.time_s


def test_split_gpt_needs_blocks_on_both_stages() -> None:
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16))
    with pytest.raises(ValueError, match="split point"):
        split_gpt(model, 2)
    first, second = split_gpt(model)
    assert len(first.layers) == 1 and len(second.layers) == 2


def test_microbatches_must_split_the_batch() -> None:
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16)).eval()
    with pytest.raises(ValueError, match="microbatches"):
        compile_pipeline(split_gpt(model), torch.randn(3, 16, 64), microbatches=2)


def test_split_stages_at_a_module_boundary_matches_torch() -> None:
    from nova.parallel import split_stages

    torch.manual_seed(1)
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16)).eval()
    x = torch.randn(4, 16, 64)
    stages = split_stages(model, x[:1], ["blocks.1"])
    assert len(stages) == 2
    program = compile_pipeline(stages, x, microbatches=4, target="nova-t1-ring8")
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(program(x), expected, rtol=RTOL, atol=ATOL)


class _Marked(torch.nn.Module):
    """Three stages marked in the forward with pipe_split()."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(32, 64)
        self.b = torch.nn.Linear(64, 64)
        self.c = torch.nn.Linear(64, 16)

    def forward(self, x):
        from torch.distributed.pipelining import pipe_split

        x = torch.relu(self.a(x))
        pipe_split()
        x = torch.relu(self.b(x))
        pipe_split()
        return self.c(x)


def test_split_stages_at_user_markers_matches_torch() -> None:
    from nova.parallel import split_stages

    torch.manual_seed(2)
    model = _Marked().eval()
    x = torch.randn(8, 32)
    stages = split_stages(model, x[:2])
    assert len(stages) == 3
    program = compile_pipeline(stages, x, microbatches=4, target="nova-t1")
    assert "nova.chips = array<i64: 2>" in program.stages["nova"]
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(program(x), expected, rtol=RTOL, atol=ATOL)


def test_split_stages_rejects_unknown_split_points() -> None:
    from nova.parallel import split_stages

    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16)).eval()
    with pytest.raises(ValueError, match="not submodules"):
        split_stages(model, torch.randn(1, 16, 64), ["blocks.7"])


def test_split_stages_leaves_the_model_compilable() -> None:
    from nova.parallel import split_stages

    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16)).eval()
    x = torch.randn(1, 16, 64)
    split_stages(model, x, ["blocks.1"])
    split_stages(model, x, ["blocks.1"])   # twice: the model was not rewritten
    program = nova.compile(model, x)
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=RTOL, atol=ATOL)


def test_pipeline_trace_shows_both_stages_busy_at_once(tmp_path) -> None:
    from .traces import any_overlap, engine_spans

    torch.manual_seed(4)
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16)).eval()
    x = torch.randn(4, 16, 64)
    program = compile_pipeline(split_gpt(model, 1), x, microbatches=4)
    with pytest.raises(ValueError, match="no trace recorded"):
        program.write_trace(tmp_path / "none.json")
    with torch.no_grad():
        torch.testing.assert_close(program.run(x, trace=True), model(x), rtol=RTOL, atol=ATOL)
    program.write_trace(tmp_path / "pp.json")
    matrix = [engine_spans(tmp_path / "pp.json", chip, "matrix") for chip in (0, 1)]
    assert matrix[0] and matrix[1]
    # GPipe: chip 1 computes microbatch i while chip 0 computes i + 1.
    assert any_overlap(matrix[0], matrix[1])
