"""Data parallelism of the 2-layer GPT on 2 and 4 simulated chips (switch and
ring systems), against torch eager."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nova.models.gpt import GPT, GPTConfig
from nova.parallel import Mesh, Shard, compile_parallel, data_parallel_plan
from nova.parallel.annotate import PlanError
from nova.parallel.shards import assemble, local_shard

RTOL, ATOL = 1e-4, 1e-5


@pytest.mark.parametrize("target", ["nova-t1", "nova-t1-ring8"])
@pytest.mark.parametrize("dp,batch", [(2, 2), (4, 4)])
def test_data_parallel_gpt_matches_torch(target: str, dp: int, batch: int) -> None:
    torch.manual_seed(dp)
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16)).eval()
    x = torch.randn(batch, 16, 64)
    program = compile_parallel(model, x, mesh=Mesh((dp,), ("dp",)),
                               plan=data_parallel_plan("dp"), target=target)
    # Replicated parameters, no collective in the forward pass.
    assert len(program.chip_params) == dp
    assert program.stages["nova"].count("nova.all_reduce") == 0
    with torch.no_grad():
        expected = model(x)
    got = program(x)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    assert program.report is not None and program.report.time_s > 0


def test_data_parallel_batch_must_split_evenly() -> None:
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=1, seq_len=16)).eval()
    with pytest.raises(PlanError, match="does not split evenly"):
        compile_parallel(model, torch.randn(3, 16, 64), mesh=Mesh((2,), ("dp",)),
                         plan=data_parallel_plan("dp"))


def test_assemble_inverts_local_shard() -> None:
    mesh = Mesh((2, 2), ("dp", "tp"))
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    for placements in ({0: Shard(0)}, {0: Shard(0), 1: Shard(1)}, {1: Shard(0)}, {}):
        pieces = [local_shard(a, mesh, placements, chip) for chip in range(mesh.size)]
        assert np.array_equal(assemble(pieces, mesh, placements), a)


def test_nova_compile_takes_mesh_and_plan() -> None:
    import nova

    torch.manual_seed(0)
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=1, seq_len=16)).eval()
    x = torch.randn(2, 16, 64)
    program = nova.compile(model, x, mesh=Mesh((2,), ("dp",)), plan=data_parallel_plan("dp"))
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(program(x), expected, rtol=RTOL, atol=ATOL)
    with pytest.raises(ValueError, match="together"):
        nova.compile(model, x, mesh=Mesh((2,), ("dp",)))


def test_conflicting_placements_are_a_compile_error_not_a_crash() -> None:
    from nova.compiler.errors import NovaCompileError
    from nova.parallel import ParallelPlan, Replicate

    class Double(torch.nn.Module):
        def forward(self, x):
            return x * 2.0

    # The input replicated, the output split along the batch: propagation
    # cannot place the multiply; nova-verify-sharding says so at the line.
    plan = ParallelPlan({"input0": {"dp": Replicate()}}, batch_axis="dp")
    with pytest.raises(NovaCompileError, match="has no sharding after sharding propagation"):
        compile_parallel(Double(), torch.randn(8, 4), mesh=Mesh((4,), ("dp",)), plan=plan)


def test_uneven_parameter_split_is_a_plan_error() -> None:
    from nova.models import MLP
    from nova.parallel import PlanError as Exported, megatron_mlp_plan

    assert Exported is PlanError
    # 96 hidden units do not split over 5 chips (shard-partition would abort).
    with pytest.raises(PlanError, match=r"fc1.weight: dimension 0 of size 96 does not split "
                                        r"evenly over 5 chips"):
        compile_parallel(MLP(16, 96).eval(), torch.randn(4, 16), mesh=Mesh((5,), ("tp",)),
                         plan=megatron_mlp_plan("fc1", "fc2", axis="tp"))


def test_scalar_output_of_a_data_parallel_model_is_replicated() -> None:
    class MeanSquare(torch.nn.Module):
        def forward(self, x):
            return (x * x).mean()

    x = torch.randn(8, 4)
    program = compile_parallel(MeanSquare(), x, mesh=Mesh((2,), ("dp",)),
                               plan=data_parallel_plan("dp"))
    torch.testing.assert_close(program(x), (x * x).mean(), rtol=RTOL, atol=ATOL)


def test_parallel_program_saves_and_loads(tmp_path) -> None:
    import nova
    from nova.parallel import megatron_transformer_plan

    torch.manual_seed(5)
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=1, seq_len=16)).eval()
    x = torch.randn(4, 16, 64)
    program = compile_parallel(model, x, mesh=Mesh((2, 2), ("dp", "tp")),
                               plan=megatron_transformer_plan(model, axis="tp",
                                                              batch_axis="dp"))
    path = tmp_path / "gpt.novaprog"
    program.save(path)
    loaded = nova.load(path)
    # One program class for one chip and many: the mesh split is the data it carries.
    assert loaded.layout == program.layout and loaded.mesh == Mesh((2, 2), ("dp", "tp"))
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x), rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(loaded(x), program(x))


@pytest.mark.parametrize("target", ["nova-t1", "nova-t1-ring8"])
def test_convolution_network_data_parallel_matches_torch(target: str) -> None:
    """Convolutions partition along the batch (lib/Extensions/ConvSharding.cpp:
    upstream refuses any op whose indexing maps are not projected
    permutations), the zero padding too (PadSharding.cpp)."""
    from nova.models import SmallCNN

    torch.manual_seed(6)
    model = SmallCNN(3, 10, 8).eval()
    x = torch.randn(4, 3, 8, 8)
    program = compile_parallel(model, x, mesh=Mesh((4,), ("dp",)),
                               plan=data_parallel_plan("dp"), target=target)
    assert "tensor<1x3x8x8xf32>" in program.stages["linalg"]
    assert program.stages["nova"].count("nova.all_") == 0
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=RTOL, atol=ATOL)


def test_convolution_output_channels_split_matches_torch() -> None:
    from nova.models import SmallCNN
    from nova.parallel import ParallelPlan

    torch.manual_seed(7)
    model = SmallCNN(3, 10, 8).eval()
    x = torch.randn(2, 3, 8, 8)
    plan = ParallelPlan({"conv1.weight": {"tp": Shard(0)}, "conv1.bias": {"tp": Shard(0)}})
    program = compile_parallel(model, x, mesh=Mesh((2,), ("tp",)), plan=plan)
    # Each chip computes 4 of conv1's 8 output channels.
    assert "tensor<2x4x8x8xf32>" in program.stages["linalg"]
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=RTOL, atol=ATOL)


def test_wrong_input_shape_names_the_whole_shape() -> None:
    from nova.runtime.program import ProgramInputError

    torch.manual_seed(0)
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=1, seq_len=16)).eval()
    program = compile_parallel(model, torch.randn(4, 16, 64), mesh=Mesh((2,), ("dp",)),
                               plan=data_parallel_plan("dp"))
    with pytest.raises(ProgramInputError, match=r"input 0 must have shape \[4, 16, 64\], "
                                                r"got \[2, 16, 64\]"):
        program(torch.randn(2, 16, 64))


class _TiedEmbedding(torch.nn.Module):
    """Keyword int64 inputs, a dict output, and state that
    named_parameters() + named_buffers() do not list as the program binds it:
    a tied weight (one parameter, two arguments), non-persistent buffers (one
    0-d) and a lifted constant."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(32, 16)
        self.pos = torch.nn.Embedding(8, 16)
        self.head = torch.nn.Linear(16, 32, bias=False)
        self.head.weight = self.embed.weight
        self.register_buffer("scale", torch.tensor(0.5), persistent=False)
        self.register_buffer("shift", torch.randn(16), persistent=False)
        self.offset = torch.randn(16)

    def forward(self, input_ids, position_ids):
        h = (self.embed(input_ids) + self.pos(position_ids)) * self.scale + self.shift
        h = h + self.offset
        return {"logits": self.head(h), "total": (h * 2.0).sum(-1)}


def test_data_parallel_binds_the_exported_state_and_call_structure(tmp_path) -> None:
    import nova

    torch.manual_seed(0)
    model = _TiedEmbedding().eval()
    ids, pos = torch.randint(0, 32, (4, 8)), torch.randint(0, 8, (4, 8))
    program = nova.compile(model, input_ids=ids, position_ids=pos, mesh=Mesh((4,), ("dp",)),
                           plan=data_parallel_plan("dp"))
    # head.weight, the 0-d scale and the lifted offset are arguments too.
    assert len(program.chip_params[0]) == 6
    assert program.chip_params[0][3].shape == ()
    with torch.no_grad():
        expected = model(ids, pos)
    got = program(position_ids=pos, input_ids=ids)
    assert set(got) == {"logits", "total"}
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], rtol=RTOL, atol=ATOL)
    program.save(tmp_path / "tied.novaprog")
    loaded = nova.load(tmp_path / "tied.novaprog")
    torch.testing.assert_close(loaded(input_ids=ids, position_ids=pos)["logits"],
                               got["logits"], rtol=0, atol=0)
    with pytest.raises(ValueError, match="input 'input_ids' must have dtype int64"):
        program(input_ids=ids.int(), position_ids=pos)


# A result that another result is computed from (nova-prepare-sharding moves
# its annotation next to its definition).
def test_data_parallel_result_also_used_by_another_result() -> None:
    import nova

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(32, 16)
            self.head = torch.nn.Linear(16, 32, bias=False)

        def forward(self, input_ids):
            h = self.embed(input_ids)
            return {"logits": self.head(h), "hidden": h}

    torch.manual_seed(0)
    model = Hidden().eval()
    ids = torch.randint(0, 32, (4, 8))
    program = nova.compile(model, ids, mesh=Mesh((4,), ("dp",)), plan=data_parallel_plan("dp"))
    got, expected = program(ids), model(ids)
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], rtol=RTOL, atol=ATOL)


def test_data_parallel_input_the_program_never_reads() -> None:
    """Partitioning keeps an unread input whole: every chip gets all of it."""
    class IgnoresSecond(torch.nn.Module):
        def forward(self, x, unused):
            return x * 2

    x, u = torch.randn(8, 4), torch.randn(8, 3)
    program = compile_parallel(IgnoresSecond(), x, u, mesh=Mesh((4,), ("dp",)),
                               plan=data_parallel_plan("dp"))
    torch.testing.assert_close(program(x, u), x * 2, rtol=1e-4, atol=1e-5)


def test_data_parallel_slice_assignment() -> None:
    """Slice assignment (tensor.insert_slice) keeps the batch split."""
    class Assign(torch.nn.Module):
        def forward(self, x, y):
            z = x * 2
            z[:, 1:3] = y
            return z + 1

    x, y = torch.randn(8, 6), torch.randn(8, 2)
    program = compile_parallel(Assign(), x, y, mesh=Mesh((4,), ("dp",)),
                               plan=data_parallel_plan("dp"))
    torch.testing.assert_close(program(x, y), Assign()(x, y), rtol=1e-4, atol=1e-5)


def test_parallel_timing_only_gives_the_functional_times() -> None:
    """ParallelProgram.run(timing_only=True): no inputs, no numbers, the same
    simulated time as a full run; with a gather (token ids) the report says
    the time depends on the data."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=8)).eval()
    x = torch.randn(4, 8, 32)
    program = compile_parallel(model, x, mesh=Mesh((4,), ("dp",)), plan=data_parallel_plan("dp"))
    program(x)
    functional = program.report.time_ns
    assert program.run(timing_only=True) == []
    assert program.report.timing_only and not program.report.data_dependent
    assert program.report.time_ns == pytest.approx(functional, rel=1e-9)

    lm = GPT(GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=8, vocab_size=64)).eval()
    ids = torch.randint(0, 64, (4, 8))
    program = compile_parallel(lm, ids, mesh=Mesh((4,), ("dp",)), plan=data_parallel_plan("dp"))
    program.run(timing_only=True)
    assert any("dma_gather" in entry for entry in program.report.data_dependent)
