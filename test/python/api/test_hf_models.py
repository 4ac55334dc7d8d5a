"""Hugging Face language models on one simulated chip, as a user brings them:
built from small configs (random weights, nothing downloaded), called with
keyword inputs (int64 ``input_ids``, an ``attention_mask`` with padding), and
returning the model's own output type, against torch eager."""

from __future__ import annotations

import pytest
import torch

import nova

transformers = pytest.importorskip("transformers")

RTOL, ATOL = 1e-4, 1e-5
VOCAB, BATCH, SEQ = 128, 2, 16


MODELS = ("gpt2", "llama")  # built by the hf_causal_lm fixture (conftest.py)


def _inputs(with_mask: bool) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=generator)
    if not with_mask:
        return {"input_ids": ids}
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    mask[1, 12:] = 0  # the second sequence is right-padded
    return {"input_ids": ids, "attention_mask": mask}


@pytest.mark.parametrize("inputs", ["mask", "ids"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("name", MODELS)
def test_hf_causal_lm_matches_eager_on_one_chip(name: str, attn: str, inputs: str,
                                                hf_causal_lm) -> None:
    torch.manual_seed(0)
    model = hf_causal_lm(name, attn)
    kwargs = _inputs(inputs == "mask")
    program = nova.compile(model, target="nova-t1", **kwargs)
    out = program(**kwargs)
    with torch.no_grad():
        ref = model(**kwargs)
    assert type(out) is type(ref)
    torch.testing.assert_close(out.logits, ref.logits, rtol=RTOL, atol=ATOL)


def test_out_of_range_token_id_names_the_model_line(hf_causal_lm) -> None:
    """torch-mlir's index bounds check is a run-time check on the chip: an id
    past the vocabulary stops the program with the check's message and the
    line of transformers' code that looks the token up."""
    from nova.sim.errors import AssertionFailedError

    torch.manual_seed(0)
    model = hf_causal_lm("gpt2", "eager")
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    program = nova.compile(model, target="nova-t1", input_ids=ids)
    bad = ids.clone()
    bad[1, 5] = VOCAB
    with pytest.raises(AssertionFailedError) as raised:
        program(input_ids=bad)
    message = f"{raised.value} {getattr(raised.value, 'location', '')}"
    assert "index must be smaller than dim size" in message
    assert "modeling_gpt2.py:" in message
