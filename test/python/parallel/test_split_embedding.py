"""A hand-written ParallelPlan that splits an embedding table (any Shard)
matches torch eager: the split nn.Embedding is exported as
``one_hot(ids) @ weight`` (nova.parallel.split_tables), as torch-style
plans do. A lookup Nova cannot rewrite (a gather on a bare split
parameter) is a ParallelError naming it, never wrong numbers."""

from __future__ import annotations

import pytest
import torch

from nova.parallel import Mesh, ParallelError, ParallelPlan, Replicate, Shard, compile_parallel

RTOL, ATOL = 1e-4, 1e-5
VOCAB, BATCH, SEQ = 128, 2, 16
MESH = Mesh((2,), ("tp",))


def _ids() -> torch.Tensor:
    return torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))


def _gpt2() -> torch.nn.Module:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=1, n_head=4,
                                     n_positions=32, attn_implementation="eager")
    return transformers.GPT2LMHeadModel(config).eval()


@pytest.mark.parametrize("placements", [
    {"transformer.wpe.weight": {"tp": Shard(1)}},
    # The exported graph looks wte up through its tied name lm_head.weight.
    {"lm_head.weight": {"tp": Shard(0)}},
    {"lm_head.weight": {"tp": Shard(1)}},
    {"transformer.wte.weight": {"tp": Shard(0)}},
    {"transformer.wte.weight": {"tp": Shard(1)}},
    # Both tables and the MLP (Conv1D: c_fc column, c_proj row parallel).
    {"transformer.wpe.weight": {"tp": Shard(1)}, "lm_head.weight": {"tp": Shard(0)},
     "transformer.h.0.mlp.c_fc.weight": {"tp": Shard(1)},
     "transformer.h.0.mlp.c_fc.bias": {"tp": Shard(0)},
     "transformer.h.0.mlp.c_proj.weight": {"tp": Shard(0)},
     "transformer.h.0.mlp.c_proj.bias": {"tp": Replicate()}},
], ids=["wpe-shard1", "lm_head-shard0", "lm_head-shard1", "wte-shard0", "wte-shard1",
       "tables-and-mlp"])
def test_gpt2_split_embedding_tables_match_eager(placements) -> None:
    model = _gpt2()
    ids = _ids()
    program = compile_parallel(model, mesh=MESH, plan=ParallelPlan(placements), input_ids=ids)
    with torch.no_grad():
        expected = model(input_ids=ids, use_cache=False).logits
    torch.testing.assert_close(program(input_ids=ids).logits, expected, rtol=RTOL, atol=ATOL)
    # The user's model is put back as it was (the stand-in is for exporting only).
    assert isinstance(model.transformer.wte, torch.nn.Embedding)
    assert isinstance(model.transformer.wpe, torch.nn.Embedding)
    assert model.lm_head.weight is model.transformer.wte.weight


class EmbedLinear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 32)
        self.out = torch.nn.Linear(32, 16)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.out(self.embed(ids))


@pytest.mark.parametrize("dim", [0, 1])
def test_embedding_linear_split_table_matches_eager(dim: int) -> None:
    torch.manual_seed(0)
    model = EmbedLinear().eval()
    ids = _ids()
    program = compile_parallel(model, ids, mesh=MESH,
                               plan=ParallelPlan({"embed.weight": {"tp": Shard(dim)}}))
    with torch.no_grad():
        expected = model(ids)
    torch.testing.assert_close(program(ids), expected, rtol=RTOL, atol=ATOL)
    # Each chip holds its half of the table.
    piece = program.chip_params[1][program.state_names.index("embed.weight")]
    assert piece.shape[dim] == model.embed.weight.shape[dim] // 2


class BareTable(torch.nn.Module):
    """A table that is a bare parameter, looked up functionally (no module to swap)."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(VOCAB, 32))
        self.how = how

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if self.how == "embedding":
            return torch.nn.functional.embedding(ids, self.table)
        if self.how == "index_select":
            return self.table.index_select(0, ids.flatten()).view(*ids.shape, -1)
        return self.table[ids]


@pytest.mark.parametrize("how", ["embedding", "index_select", "indexing"])
@pytest.mark.parametrize("dim", [0, 1])
def test_split_lookup_on_a_bare_parameter_is_a_clear_error(how: str, dim: int) -> None:
    model = BareTable(how).eval()
    plan = ParallelPlan({"table": {"tp": Shard(dim)}})
    with pytest.raises(ParallelError, match=r"^table: the plan splits it .*Replicate table"):
        compile_parallel(model, _ids(), mesh=MESH, plan=plan)


def test_replicated_bare_table_still_compiles() -> None:
    torch.manual_seed(0)
    model = BareTable("embedding").eval()
    ids = _ids()
    program = compile_parallel(model, ids, mesh=MESH, plan=ParallelPlan({}))
    with torch.no_grad():
        expected = model(ids)
    torch.testing.assert_close(program(ids), expected, rtol=RTOL, atol=ATOL)


def test_split_embedding_with_max_norm_is_an_error() -> None:
    model = EmbedLinear().eval()
    model.embed.max_norm = 1.0
    with pytest.raises(ParallelError, match="embed.weight: .*max_norm"):
        compile_parallel(model, _ids(), mesh=MESH,
                         plan=ParallelPlan({"embed.weight": {"tp": Shard(0)}}))


class SplitPlusBareLookup(torch.nn.Module):
    """A split nn.Embedding added to a lookup in a bare, replicated table."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens = torch.nn.Embedding(VOCAB, 64)
        self.positions = torch.nn.Parameter(torch.randn(32, 64))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        h = self.tokens(ids) + torch.nn.functional.embedding(positions, self.positions)
        return h - h.mean(-1, keepdim=True)


def test_replicated_lookup_split_by_propagation_is_a_clear_error() -> None:
    # Propagation would split the bare lookup's output along the embedding
    # dimension, which a gather cannot be: caught after partitioning.
    plan = ParallelPlan({"tokens.weight": {"tp": Shard(1)}})
    with pytest.raises(ParallelError, match="split an embedding lookup .* wrong numbers"):
        compile_parallel(SplitPlusBareLookup().eval(), _ids(), mesh=MESH, plan=plan)


def test_every_embedding_is_one_hot_when_one_is_split_by_its_dimension() -> None:
    # GPT-2's form: token + position embeddings, then a LayerNorm; only the
    # token table is split, the position lookup is rewritten too.
    class TwoTables(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = torch.nn.Embedding(VOCAB, 64)
            self.wpe = torch.nn.Embedding(32, 64)
            self.ln = torch.nn.LayerNorm(64)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.ln(self.wte(ids) + self.wpe(torch.arange(ids.shape[1]).unsqueeze(0)))

    torch.manual_seed(0)
    model = TwoTables().eval()
    ids = _ids()
    program = compile_parallel(model, ids, mesh=MESH,
                               plan=ParallelPlan({"wte.weight": {"tp": Shard(1)}}))
    with torch.no_grad():
        expected = model(ids)
    torch.testing.assert_close(program(ids), expected, rtol=RTOL, atol=ATOL)


def test_torch_style_colwise_embedding_matches_eager() -> None:
    # ColwiseParallel on GPT-2's wte splits its embedding dimension (and,
    # tied, lm_head's): wpe is looked up by one-hot too.
    tp = pytest.importorskip("torch.distributed.tensor.parallel")
    model = _gpt2()
    ids = _ids()
    program = compile_parallel(model, mesh=MESH, plan={"transformer.wte": tp.ColwiseParallel()},
                               input_ids=ids)
    with torch.no_grad():
        expected = model(input_ids=ids, use_cache=False).logits
    torch.testing.assert_close(program(input_ids=ids).logits, expected, rtol=RTOL, atol=ATOL)
