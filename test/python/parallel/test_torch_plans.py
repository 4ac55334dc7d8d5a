"""Tensor-parallel plans written in PyTorch's vocabulary
(``torch.distributed.tensor.parallel`` styles keyed by module-name
patterns, as ``parallelize_module`` takes them; no process group) for
Hugging Face GPT-2 and Llama at TP=2, against torch eager."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.parallel import (FusedColwiseParallel, Mesh, ParallelError, Replicate, Shard,
                           compile_parallel, gpt2_tp_plan, llama_tp_plan, torch_plan)
from nova.parallel.rewrites import Relayout

transformers = pytest.importorskip("transformers")
tp = pytest.importorskip("torch.distributed.tensor.parallel")
from torch.distributed.tensor import Replicate as TReplicate  # noqa: E402
from torch.distributed.tensor import Shard as TShard  # noqa: E402

ColwiseParallel, RowwiseParallel = tp.ColwiseParallel, tp.RowwiseParallel

RTOL, ATOL = 1e-4, 1e-5
VOCAB, BATCH, SEQ = 128, 2, 16
MESH = Mesh((2,), ("tp",))


def _gpt2() -> torch.nn.Module:
    return _gpt2_seeded(0)


def _gpt2_seeded(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4,
                                     n_positions=32, attn_implementation="eager")
    return transformers.GPT2LMHeadModel(config).eval()


def _llama(kv_heads: int, attn: str = "eager") -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=kv_heads, max_position_embeddings=32,
        attn_implementation=attn)
    return transformers.LlamaForCausalLM(config).eval()


def _ids() -> torch.Tensor:
    return torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))


def _run(model, plan):
    ids = _ids()
    program = compile_parallel(model, mesh=MESH, plan=plan, input_ids=ids)
    with torch.no_grad():
        expected = model(input_ids=ids, use_cache=False)
    got = program(input_ids=ids)
    torch.testing.assert_close(got.logits, expected.logits, rtol=RTOL, atol=ATOL)
    return program


def _piece(program, chip: int, name: str) -> torch.Tensor:
    return torch.from_numpy(program.chip_params[chip][program.state_names.index(name)])


def _count(program, op: str) -> int:
    return program.stages["nova"].count(op)


def test_gpt2_ready_made_plan_matches_eager_and_splits() -> None:
    model = _gpt2()
    program = _run(model, gpt2_tp_plan())
    # One all-reduce after each attention and MLP, one after the
    # vocab-parallel embedding; the vocab-split logits are gathered once.
    assert _count(program, "nova.all_reduce") == 5
    assert _count(program, "nova.all_gather") == 1
    # Chip c holds its heads (c * 2, c * 2 + 1) of q, k and v: the fused
    # c_attn's columns [c*32, c*32+32) of each 64-wide part.
    weight = model.transformer.h[0].attn.c_attn.weight.detach()
    for chip in (0, 1):
        columns = [weight[:, part * 64 + chip * 32: part * 64 + chip * 32 + 32]
                   for part in range(3)]
        torch.testing.assert_close(_piece(program, chip, "transformer.h.0.attn.c_attn.weight"),
                                   torch.cat(columns, dim=1), rtol=0, atol=0)
    assert program.relayouts["transformer.h.0.attn.c_attn.weight"] == Relayout(1, 3)
    # Conv1D rows (c_proj, [in, out]) and the tied vocabulary split in halves.
    assert tuple(_piece(program, 1, "transformer.h.1.mlp.c_proj.weight").shape) == (128, 64)
    assert tuple(_piece(program, 1, "lm_head.weight").shape) == (64, 64)
    # Per chip, a little over half of the state (LayerNorms, wpe, biases replicated).
    full = sum(p.numel() * 4 for p in model.parameters())
    assert sum(p.nbytes for p in program.chip_params[0]) < 0.62 * full
    # The user's model is left as it was.
    assert type(model.transformer.h[0].attn.c_attn).__name__ == "Conv1D"
    assert type(model.transformer.wte) is torch.nn.Embedding
    # Another model's weights, written in the user's layout: the runtime
    # re-lays out c_attn and splits every state as compiled.
    other = _gpt2_seeded(5)
    program.load_state_dict(other.state_dict())
    ids = _ids()
    with torch.no_grad():
        expected = other(input_ids=ids, use_cache=False).logits
    torch.testing.assert_close(program(input_ids=ids).logits, expected, rtol=RTOL, atol=ATOL)
    with pytest.raises(ParallelError, match=r"\['lm_head.weights'\] are not states"):
        program.load_state_dict({"lm_head.weights": other.lm_head.weight})


def test_gpt2_hand_written_mlp_plan_through_nova_compile() -> None:
    """Only the MLPs split, by a dict as parallelize_module takes it."""
    model = _gpt2()
    plan = {"transformer.h.*.mlp.c_fc": ColwiseParallel(),
            "transformer.h.*.mlp.c_proj": RowwiseParallel(use_local_output=False)}
    ids = _ids()
    program = nova.compile(model, input_ids=ids, mesh=MESH, plan=plan, target="nova-t1")
    with torch.no_grad():
        expected = model(input_ids=ids, use_cache=False).logits
    torch.testing.assert_close(program(input_ids=ids).logits, expected, rtol=RTOL, atol=ATOL)
    assert _count(program, "nova.all_reduce") == 2  # one per MLP
    assert _count(program, "nova.all_gather") == 0
    fc = model.transformer.h[1].mlp.c_fc
    torch.testing.assert_close(_piece(program, 1, "transformer.h.1.mlp.c_fc.weight"),
                               fc.weight.detach()[:, 128:], rtol=0, atol=0)
    torch.testing.assert_close(_piece(program, 1, "transformer.h.1.mlp.c_fc.bias"),
                               fc.bias.detach()[128:], rtol=0, atol=0)


def test_llama_ready_made_plan_matches_eager() -> None:
    model = _llama(kv_heads=4)
    program = _run(model, llama_tp_plan())
    assert _count(program, "nova.all_reduce") == 5  # 2 per layer + the embedding
    assert _count(program, "nova.all_gather") == 1  # the logits
    q = model.model.layers[0].self_attn.q_proj.weight.detach()
    torch.testing.assert_close(_piece(program, 1, "model.layers.0.self_attn.q_proj.weight"),
                               q[32:], rtol=0, atol=0)
    down = model.model.layers[1].mlp.down_proj.weight.detach()
    torch.testing.assert_close(_piece(program, 0, "model.layers.1.mlp.down_proj.weight"),
                               down[:, :64], rtol=0, atol=0)


def test_llama_hand_written_plan_matches_eager() -> None:
    model = _llama(kv_heads=4)
    plan = {"model.layers.*.self_attn.[qkv]_proj": ColwiseParallel(),
            "model.layers.*.self_attn.o_proj": RowwiseParallel(),
            "model.layers.0.mlp.gate_proj": ColwiseParallel(),
            "model.layers.0.mlp.up_proj": ColwiseParallel(),
            "model.layers.0.mlp.down_proj": RowwiseParallel()}
    program = _run(model, plan)
    assert _count(program, "nova.all_reduce") == 3  # both attentions, layer 0's MLP


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_llama_grouped_query_attention_tp2(attn: str) -> None:
    """2 key/value heads for 4 heads: each chip gets one kv head and
    repeats it for its two heads (repeat_kv exported heads-first)."""
    model = _llama(kv_heads=2, attn=attn)
    plan = torch_plan(model, MESH, llama_tp_plan())
    assert [r.module for r in plan.rewrites if r.kind == "repeat_kv"] == [
        "model.layers.0.self_attn", "model.layers.1.self_attn"]
    program = _run(model, llama_tp_plan())
    assert _count(program, "nova.all_reduce") == 5
    assert _count(program, "nova.all_gather") == 1  # the logits only
    k = model.model.layers[0].self_attn.k_proj.weight.detach()  # [2 heads * 16, 64]
    torch.testing.assert_close(_piece(program, 1, "model.layers.0.self_attn.k_proj.weight"),
                               k[16:], rtol=0, atol=0)
    import transformers.models.llama.modeling_llama as modeling
    assert modeling.repeat_kv.__module__ == modeling.__name__  # put back


def test_translation_follows_torch_semantics() -> None:
    model = _gpt2()
    plan = torch_plan(model, "tp", {
        "transformer.h.0.mlp.c_fc": ColwiseParallel(),  # Conv1D: [in, out]
        "transformer.h.0.mlp.c_proj": RowwiseParallel(),
        "transformer.wpe": ColwiseParallel(),  # nn.Embedding: the embedding dim
    })
    assert plan.placements["transformer.h.0.mlp.c_fc.weight"] == {"tp": Shard(1)}
    assert plan.placements["transformer.h.0.mlp.c_fc.bias"] == {"tp": Shard(0)}
    assert plan.placements["transformer.h.0.mlp.c_proj.weight"] == {"tp": Shard(0)}
    assert plan.placements["transformer.h.0.mlp.c_proj.bias"] == {"tp": Replicate()}
    assert plan.placements["transformer.wpe.weight"] == {"tp": Shard(1)}
    assert [r.module for r in plan.rewrites] == ["transformer.wpe"]
    linear = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Embedding(10, 8))
    plan = torch_plan(linear, MESH, {"0": ColwiseParallel(), "1": RowwiseParallel()})
    assert plan.placements == {"0.weight": {"tp": Shard(0)}, "0.bias": {"tp": Shard(0)},
                               "1.weight": {"tp": Shard(0)}}
    plan = torch_plan(linear, 0, {"0": RowwiseParallel(input_layouts=TShard(-1))})
    assert plan.placements["0.weight"] == {0: Shard(1)}
    # The tied lm_head / wte get one placement under both names.
    plan = torch_plan(model, "tp", {"lm_head": ColwiseParallel(output_layouts=TReplicate())})
    assert plan.placements["transformer.wte.weight"] == {"tp": Shard(0)}


def test_relayout_round_trips() -> None:
    user = torch.arange(2 * 12, dtype=torch.float32).view(2, 12)
    layout = Relayout(1, 3)
    stored = layout.apply(user, 2)
    assert stored[0].tolist() == [0, 1, 4, 5, 8, 9, 2, 3, 6, 7, 10, 11]
    torch.testing.assert_close(layout.undo(stored, 2), user, rtol=0, atol=0)


@pytest.mark.parametrize("plan,message", [
    ({"transformer.h.*.mlp.c_fcc": ColwiseParallel()},
     r"plan key 'transformer.h.\*.mlp.c_fcc' matches no module of GPT2LMHeadModel"),
    ({"transformer.h.0.ln_1": tp.SequenceParallel()},
     r"'transformer.h.0.ln_1' \(SequenceParallel.*splits the module's activations"),
    ({"transformer.h.0.mlp.c_fc": ColwiseParallel(input_layouts=TShard(1))},
     r"'transformer.h.0.mlp.c_fc' \(ColwiseParallel.*input_layouts=Shard\(dim=1\) cannot "
     r"be expressed"),
    ({"transformer.h.0.mlp.c_proj": RowwiseParallel(output_layouts=TShard(1))},
     r"'transformer.h.0.mlp.c_proj' \(RowwiseParallel.*output_layouts=Shard\(dim=1\)"),
    ({"transformer.h.0.ln_1": ColwiseParallel()},
     r"'transformer.h.0.ln_1'.*splits nn.Linear, nn.Embedding and Hugging Face Conv1D, "
     r"not LayerNorm"),
    ({"transformer.h.0": tp.PrepareModuleInput(input_layouts=(TReplicate(),),
                                               desired_input_layouts=(TReplicate(),))},
     r"'transformer.h.0'.*PrepareModuleInput is not supported"),
    ({"transformer.wte": ColwiseParallel(), "lm_head": ColwiseParallel()},
     r"tied to .*'transformer.wte' places it Shard\(dim=1\), 'lm_head' \(ColwiseParallel\) "
     r"Shard\(dim=0\)"),
    ({"transformer.h.*.attn.c_proj": RowwiseParallel(),
      "transformer.h.0.attn.c_proj": RowwiseParallel()},
     r"module 'transformer.h.0.attn.c_proj' is matched by two plan entries"),
])
def test_plan_errors_name_the_module_and_style(plan, message) -> None:
    with pytest.raises(ParallelError, match=message):
        torch_plan(_gpt2(), MESH, plan)


def test_compile_errors_before_exporting() -> None:
    model = _gpt2()
    ids = _ids()
    # 4 heads do not split over 8 chips (checked before anything compiles).
    with pytest.raises(ParallelError, match=r"'transformer.h.0.attn.c_attn' "
                                            r"\(FusedColwiseParallel\): 4 heads of 16 do not "
                                            r"split evenly over 8 chips"):
        compile_parallel(model, mesh=Mesh((8,), ("tp",)), plan=gpt2_tp_plan(), input_ids=ids)
    with pytest.raises(ParallelError, match="a torch plan is for one mesh axis"):
        compile_parallel(model, mesh=Mesh((2, 2), ("dp", "tp")), plan=gpt2_tp_plan(),
                         input_ids=ids)
    with pytest.raises(ParallelError, match="must be a torch ParallelStyle"):
        compile_parallel(model, mesh=MESH, plan={"lm_head": Shard(0)}, input_ids=ids)
    with pytest.raises(ParallelError, match="parts must be a positive integer"):
        FusedColwiseParallel(parts=0)


def test_fused_qkv_linear_split_by_heads() -> None:
    """nanoGPT's fused ``qkv`` nn.Linear (nova.models, ``fused_qkv=True``):
    FusedColwiseParallel gives each chip its heads of q, k and v, so
    attention needs no gather (a plain column split all-gathers the qkv output)."""
    from nova.models.gpt import GPTBlock, GPTConfig

    torch.manual_seed(0)
    block = GPTBlock(GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=16,
                               fused_qkv=True)).eval()
    x = torch.randn(2, 16, 32)
    plan = {"attn.qkv": FusedColwiseParallel(parts=3), "attn.proj": RowwiseParallel(),
            "mlp.fc1": ColwiseParallel(), "mlp.fc2": RowwiseParallel()}
    program = compile_parallel(block, x, mesh=MESH, plan=plan)
    with torch.no_grad():
        expected = block(x)
    torch.testing.assert_close(program(x), expected, rtol=RTOL, atol=ATOL)
    assert _count(program, "nova.all_reduce") == 2
    assert _count(program, "nova.all_gather") == 0
    weight = block.attn.qkv.weight.detach()  # [3 * 32, 32]: torch's [out, in]
    torch.testing.assert_close(_piece(program, 1, "attn.qkv.weight"),
                               torch.cat([weight[16:32], weight[48:64], weight[80:96]]),
                               rtol=0, atol=0)
