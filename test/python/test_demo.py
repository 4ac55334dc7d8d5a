import pytest

from nova.compiler.options import TargetOptions
from nova.demo import run_demo
from nova.examples import available, example_path


def test_example_ships_with_the_package() -> None:
    assert "matmul_bias_gelu" in available()
    assert example_path("matmul_bias_gelu").read_text().startswith("//")


def test_unknown_example_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown example 'nope'.*matmul_bias_gelu"):
        example_path("nope")


def test_demo_attaches_target_and_keeps_the_kernel() -> None:
    result = run_demo(target=TargetOptions(name="nova-t1", chips=4))
    assert result.example.name == "matmul_bias_gelu.mlir"
    assert '#nova.target<name = "nova-t1"' in result.output
    assert "chips = 4," in result.output
    # The tiled kernel survives: K loop of DMA + matmul, then the GELU epilogue.
    assert result.output.count("nova.dma_start") == 4
    assert "accumulate" in result.output
    assert "nova.elementwise <erf>" in result.output


def test_model_demo_matches_torch(tmp_path) -> None:
    from nova.demo import run_model_demo

    result = run_model_demo(trace=tmp_path / "trace.json")
    # The language model: token ids in, logits over the vocabulary out.
    assert result.config.vocab_size == 256 and result.config.tie_weights
    assert result.matches_torch, result.max_abs_error
    assert "simulated time" in result.summary
    assert (tmp_path / "trace.json").stat().st_size > 0


def test_parallel_demo_matches_torch_on_every_layout() -> None:
    from nova.demo import run_parallel_demo

    rows = run_parallel_demo("nova-t1-ring8")
    assert [r.layout for r in rows] == ["1 chip", "TP=4", "DP=2 x TP=4", "PP=2 x M=4"]
    assert all(r.matches_torch for r in rows), rows
    assert [r.all_reduces for r in rows] == [0, 4, 4, 0]
    # Data x tensor parallelism beats the lone chip on this batch. TP=4 alone no
    # longer does on the ring: the lone chip's two identical layers share one
    # loop since nova-roll-layers (108.7 us, 150.2 us straight-line), which
    # partitioned programs do not yet (TP=4: 131.7 us, its four all-reduces
    # latency-bound on the ring). (The pipeline does not either: each of its
    # 4 microbatches reloads the tied LM head's weight.)
    assert rows[2].time_us < rows[0].time_us


def test_train_demo_matches_torch() -> None:
    from nova.demo import run_train_demo

    result = run_train_demo(steps=2)
    assert result.matches_torch, (result.losses, result.torch_losses)
    assert result.losses[1] < result.losses[0]  # AdamW on one batch: the loss falls
    assert result.step_time_us > 0
