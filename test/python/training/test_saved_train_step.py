"""step.save(path) -> nova.load(path) continues training: the same losses and
state as the step that was never saved, and as torch eager."""

from __future__ import annotations

import copy
import io
import json
import zipfile

import pytest
import torch

import nova
from nova.runtime.errors import ProgramArchiveError
from nova.training.saved import LoadedTrainStep

RTOL, ATOL = 1e-4, 1e-5


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))


def _batches(n: int):
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(4, 8, generator=generator), torch.randn(4, 4, generator=generator))
            for _ in range(n)]


def _adamw(model):
    # Two groups of their own lr and weight decay, the first bias frozen.
    model[0].bias.requires_grad_(False)
    return torch.optim.AdamW([
        {"params": [model[0].weight], "lr": 1e-2, "weight_decay": 0.1},
        {"params": [model[2].weight, model[2].bias], "lr": 3e-2}], betas=(0.8, 0.99))


def _sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)


def _torch_step(model, optimizer, batch, max_grad_norm):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(batch[0]), batch[1])
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    return loss.detach()


def _assert_state_equal(a, b):
    assert a["model"].keys() == b["model"].keys()
    for name in a["model"]:
        assert torch.equal(a["model"][name], b["model"][name]), name
    assert a["optimizer"]["param_groups"] == b["optimizer"]["param_groups"]
    assert a["optimizer"]["state"].keys() == b["optimizer"]["state"].keys()
    for index, entry in a["optimizer"]["state"].items():
        for key, value in entry.items():
            assert torch.equal(value, b["optimizer"]["state"][index][key]), (index, key)


@pytest.mark.parametrize("make_optimizer,max_grad_norm", [(_adamw, 0.5), (_sgd, None)],
                         ids=["adamw_groups_clip_frozen", "sgd_nesterov"])
def test_save_load_continues_as_if_never_saved(tmp_path, make_optimizer, max_grad_norm):
    batches = _batches(5)
    model = _mlp()
    reference = copy.deepcopy(model)
    optimizer, ref_optimizer = make_optimizer(model), make_optimizer(reference)
    step = nova.compile_train_step(model, torch.nn.functional.mse_loss, optimizer, *batches[0],
                                   max_grad_norm=max_grad_norm)
    for batch in batches[:2]:
        torch.testing.assert_close(step(*batch),
                                   _torch_step(reference, ref_optimizer, batch, max_grad_norm),
                                   rtol=RTOL, atol=ATOL)
    path = tmp_path / "step.novaprog"
    step.save(path)
    loaded = nova.load(path)
    assert isinstance(loaded, LoadedTrainStep)
    assert loaded.steps == step.steps
    _assert_state_equal(loaded.state_dict(), step.state_dict())

    for batch in batches[2:]:
        ours, kept = loaded(*batch), step(*batch)
        assert torch.equal(ours, kept)  # the same program on the same numbers
        torch.testing.assert_close(ours, _torch_step(reference, ref_optimizer, batch,
                                                     max_grad_norm), rtol=RTOL, atol=ATOL)
    _assert_state_equal(loaded.state_dict(), step.state_dict())
    assert loaded.stats.memory == step.stats.memory
    assert loaded.stats.time_ns == step.stats.time_ns

    # The loaded step's state goes into a torch model and optimizer, and saves again.
    target = _mlp()
    target_optimizer = make_optimizer(target)
    loaded.sync_to(target, target_optimizer)
    for name, value in target.named_parameters():
        torch.testing.assert_close(value.detach(), reference.get_parameter(name).detach(),
                                   rtol=RTOL, atol=ATOL)
    again = tmp_path / "again.novaprog"
    loaded.save(again)
    twice = nova.load(again)
    batch = batches[0]
    assert torch.equal(twice(*batch), loaded(*batch))


def test_lr_change_on_the_loaded_optimizer_drives_the_step(tmp_path):
    batches = _batches(3)
    model = _mlp()
    step = nova.compile_train_step(model, torch.nn.functional.mse_loss, _sgd(model), *batches[0])
    step(*batches[0])
    step.save(tmp_path / "s.novaprog")
    loaded = nova.load(tmp_path / "s.novaprog")
    for group in (step.optimizer.param_groups[0], loaded.optimizer.param_groups[0]):
        group["lr"] = 0.01
    for batch in batches[1:]:
        assert torch.equal(loaded(*batch), step(*batch))


def _rewrite(path, out, *, meta=None, drop=()):
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            if name in drop:
                continue
            data = source.read(name)
            if name == "meta.json" and meta is not None:
                data = json.dumps(meta(json.loads(data))).encode()
            target.writestr(name, data)
    return out


def test_damaged_training_archives_are_clear_errors(tmp_path):
    model = _mlp()
    batch = _batches(1)[0]
    step = nova.compile_train_step(model, torch.nn.functional.mse_loss,
                                   torch.optim.AdamW(model.parameters()), *batch)
    path = tmp_path / "step.novaprog"
    step.save(path)
    missing = _rewrite(path, tmp_path / "missing.novaprog", drop=("tensor3.npy",))
    with pytest.raises(ProgramArchiveError, match="member 'tensor3.npy' is missing"):
        nova.load(missing)
    bad_layout = _rewrite(path, tmp_path / "layout.novaprog",
                          meta=lambda m: {**m, "layout": {**m["layout"], "batch": "two"}})
    with pytest.raises(ProgramArchiveError, match="meta.json of a training step is malformed"):
        nova.load(bad_layout)
    bad_kind = _rewrite(path, tmp_path / "kind.novaprog",
                        meta=lambda m: {**m, "optimizer": {**m["optimizer"], "kind": "Adam"}})
    with pytest.raises(ProgramArchiveError, match="malformed"):
        nova.load(bad_kind)
    # A value of the wrong shape against the binary's I/O table.
    wrong = io.BytesIO()
    import numpy as np
    np.save(wrong, np.zeros((3, 3), np.float32))
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(tmp_path / "w.novaprog", "w") as out:
        for name in source.namelist():
            out.writestr(name, wrong.getvalue() if name == "tensor0.npy" else source.read(name))
    with pytest.raises(ProgramArchiveError, match="0.weight: expected float32 \\[16, 8\\], got "
                                                  "float32 \\[3, 3\\]"):
        nova.load(tmp_path / "w.novaprog")


def test_nova_inspect_reads_a_saved_training_step(tmp_path, capsys):
    from nova.cli.main import main

    model = _mlp()
    batch = _batches(1)[0]
    step = nova.compile_train_step(model, torch.nn.functional.mse_loss,
                                   torch.optim.SGD(model.parameters(), lr=0.1), *batch)
    step.save(tmp_path / "step.novaprog")
    assert main(["inspect", "--no-code", str(tmp_path / "step.novaprog")]) == 0
    assert "target            nova-t1 (1 chip)" in capsys.readouterr().out
