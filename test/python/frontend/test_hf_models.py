"""Hugging Face transformers models (small configs, random weights, nothing
downloaded) through the frontend: export, SDPA, non-persistent buffers and
lifted constants as program arguments, int64 token-id inputs and the
ModelOutput structure."""

from __future__ import annotations

import pytest
import torch

from nova.frontend import TensorSpec
from nova.frontend.export import export, import_exported

transformers = pytest.importorskip("transformers")

VOCAB, BATCH, SEQ = 128, 2, 16


def _llama(attn: str) -> torch.nn.Module:
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        attn_implementation=attn)
    return transformers.LlamaForCausalLM(config).eval()


def _gpt2(attn: str) -> torch.nn.Module:
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4,
                                     n_positions=64, attn_implementation=attn)
    return transformers.GPT2LMHeadModel(config).eval()


MODELS = {"llama": _llama, "gpt2": _gpt2}

#: Non-persistent buffers (ExportedProgram.constants, not the state dict).
NON_PERSISTENT = {
    "llama": {"model.rotary_emb.inv_freq": ((8,), "float32")},
    "gpt2": {"transformer.h.0.attn.bias": ((1, 1, 64, 64), "bool"),
             "transformer.h.0.attn.masked_bias": ((), "float32"),
             "transformer.h.1.attn.bias": ((1, 1, 64, 64), "bool"),
             "transformer.h.1.attn.masked_bias": ((), "float32")},
}


def _inputs(with_mask: bool) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=generator)
    if not with_mask:
        return {"input_ids": ids}
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    mask[1, :5] = 0  # left padding
    return {"input_ids": ids, "attention_mask": mask}


CASES = [(name, attn, mask) for name in MODELS for attn in ("eager", "sdpa")
         for mask in (False, True)]


def _id(case) -> str:
    name, attn, mask = case
    return f"{name}-{attn}-{'mask' if mask else 'ids'}"


@pytest.fixture(scope="module", params=CASES, ids=_id)
def case(request):
    name, attn, with_mask = request.param
    torch.manual_seed(0)
    model = MODELS[name](attn)
    kwargs = _inputs(with_mask)
    exported = export(model, (), kwargs)
    # tm_tensor ops (a cumsum in transformers' mask construction) are kept
    # in the text here; nova.compile rejects them until Nova lowers them.
    imported = import_exported(export(model, (), kwargs), reject_foreign_ops=False)
    return name, model, kwargs, exported, imported


@pytest.fixture(scope="module")
def op_names(case):
    return case[4].ops


def test_imports_to_linalg(case, op_names):
    dialects = {name.split(".")[0] for name in op_names}
    assert dialects <= {"builtin", "func", "linalg", "tensor", "arith", "math", "cf",
                        "tm_tensor"}
    assert "linalg.matmul" in op_names or "linalg.batch_matmul" in op_names


def test_specs_of_state_inputs_and_outputs(case):
    name, model, kwargs, exported, imported = case
    params = {spec.name: spec for spec in imported.params}
    assert len(params) == len(imported.params)
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    for sname, tensor in state.items():
        assert params[sname] == TensorSpec.of(sname, tensor)
    for sname, (shape, dtype) in NON_PERSISTENT[name].items():
        assert params[sname] == TensorSpec(sname, shape, dtype)
    # The rest: tensor constants lifted out of forward (eager attention's
    # masking value), and tied weights
    # (GPT-2's lm_head.weight is transformer.wte.weight), which torch.export
    # keeps under both names.
    rest = set(params) - set(state)
    assert rest <= set(exported.constants) | set(exported.state_dict)
    if name == "gpt2":
        assert "lm_head.weight" in rest
    assert [TensorSpec.of(p.name, v) for p, v in zip(imported.params, imported.param_values)] \
        == list(imported.params)
    assert imported.inputs == tuple(TensorSpec(k, (BATCH, SEQ), "int64") for k in kwargs)
    assert imported.outputs == (TensorSpec("logits", (BATCH, SEQ, VOCAB), "float32"),)


def test_state_values_are_the_models(case):
    _, model, _, exported, imported = case
    values = dict(zip((p.name for p in imported.params), imported.param_values))
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    for sname, value in values.items():
        expected = state[sname] if sname in state else (
            exported.constants.get(sname, exported.state_dict.get(sname)))
        torch.testing.assert_close(value, expected.detach(), rtol=0, atol=0)


def test_decomposed_program_matches_eager(case):
    """The decomposition table (PyTorch's SDPA math path included) keeps
    eager's numbers."""
    _, model, kwargs, exported, _ = case
    with torch.no_grad():
        expected = model(**kwargs, use_cache=False).logits
        got = exported.module()(**kwargs).logits
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


def test_output_structure_is_the_models_own(case):
    """Restoring the results gives the model's ModelOutput type, with the
    logits where the accelerator's first result goes."""
    _, model, kwargs, _, imported = case
    binding = imported.binding
    logits = torch.randn(BATCH, SEQ, VOCAB)
    leaves = binding.flatten((), dict(reversed(list(kwargs.items()))))
    assert [t.dtype for t in binding.tensors_of(leaves)] == [torch.int64] * len(kwargs)
    out = binding.restore([logits], leaves)
    with torch.no_grad():
        eager = model(**kwargs, use_cache=False)
    assert type(out) is type(eager)
    assert out.logits is logits
    assert list(out.keys()) == list(eager.keys()) == ["logits"]


def test_ir_has_index_checks_of_the_embedding(op_names):
    """torch-mlir's embedding: a gather (tensor.extract at a computed index)
    guarded by cf.assert bounds checks, which Nova must now accept."""
    assert {"cf.assert", "tensor.extract"} <= op_names


def test_kv_cache_config_is_exported_without_cache():
    model = _llama("sdpa")
    assert model.config.use_cache
    imported = import_exported(export(model, (), _inputs(False)), reject_foreign_ops=False)
    assert [o.name for o in imported.outputs] == ["logits"]
    assert model.config.use_cache  # restored
