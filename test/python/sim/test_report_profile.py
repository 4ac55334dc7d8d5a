"""Attribution: engine busy time per DEBUG-section source line, a torch.profiler-style table."""

import pytest
import torch

import nova
from asm import Asm, target
from nova import models
from nova.cli.main import main
from nova.sim import Simulator
from nova.sim.report_profile import UNKNOWN, profile_rows, source_line


def test_source_line_is_the_models_frame():
    assert source_line("model.py:7:9") == "model.py:7"
    assert source_line("/lib/functional.py:2100:5 called from /m/model.py:42:13") == "/m/model.py:42"
    assert source_line("a.py:1:1 called from b.py:2:2 called from m.py:3:4: index out of range") == "m.py:3"
    assert source_line("/lib/functional.py:2100:5 called from /m/model.py:42:13", innermost=True) == \
        "/lib/functional.py:2100"
    assert source_line(None) == source_line("") == UNKNOWN


def test_rows_add_up_and_unlocated_instructions_are_unknown():
    tg = target("tiny", chips=1)
    s = Asm()
    x = s.tile("sram", "f32", [8, 8])
    a, c = s.tile("sram", "bf16", [8, 8]), s.tile("acc", "f32", [8, 8])
    with s.loop(1, 0, 3):
        s.matmul(0, a, 0, a, 0, c)
        s.at("torch/nn/functional.py:10:3 called from model.py:5:9")
        s.vunary("exp", 0, x, 0, x)
        s.at("model.py:6:1")
        s.vunary("relu", 0, x, 0, x)  # no location
    s.nop(3)  # a dma nop, no location
    _, rep = Simulator(s.program(tg), functional=False).run()
    rows = {r.key: r for r in profile_rows(rep)}
    assert set(rows) == {"model.py:5", "model.py:6", UNKNOWN}
    assert rows["model.py:5"].instructions == 3 and rows["model.py:5"].flops == 3 * 2 * 8 ** 3
    assert rows[UNKNOWN].instructions == 4
    assert sum(r.busy_ns for r in rows.values()) == pytest.approx(rep.busy_ns)
    assert sum(r.instructions for r in rows.values()) == sum(e.instructions for e in rep.engines)
    for r in rows.values():
        assert 0 < r.bound_fraction <= 1 or r.key == UNKNOWN
    text = rep.profile(top=2)
    top = profile_rows(rep)[:2]
    assert all(r.key in text for r in top) and "(1 more)" in text and "total busy" in text
    assert "exp" not in rep.profile(by="opcode") and "vunary" in rep.profile(by="opcode")


@pytest.fixture(scope="module")
def gpt_block():
    torch.manual_seed(0)
    cfg = models.GPTConfig(d_model=64, n_heads=2, seq_len=16)
    model = models.GPTBlock(cfg).eval()
    x = torch.randn(1, cfg.seq_len, cfg.d_model)
    return x, nova.compile(model, x)


def test_small_model_every_instruction_attributed(gpt_block):
    x, program = gpt_block
    program(x)
    rep = program.report
    rows = profile_rows(rep)
    assert sum(r.busy_ns for r in rows) == pytest.approx(rep.busy_ns, rel=1e-12)
    assert sum(r.instructions for r in rows) == sum(e.instructions for e in rep.engines)
    located = [r for r in rows if r.key != UNKNOWN]
    assert located and sum(r.busy_ns for r in located) > 0.5 * rep.busy_ns
    assert any("models" in r.key and ".py:" in r.key for r in located)
    ops = profile_rows(rep, "op")
    assert sum(r.busy_ns for r in ops) == pytest.approx(rep.busy_ns, rel=1e-12)
    # The rows' work is the chip's: matrix FLOPs + vector element-ops.
    b = rep.bound(0)
    assert sum(r.flops for r in rows) == pytest.approx(b.matrix_flops + b.vector_ops)


def test_cli_profile_prints_the_table(gpt_block, tmp_path, capsys):
    x, program = gpt_block
    path = tmp_path / "block.novaprog"
    program.save(path)
    trace = tmp_path / "t.json"
    assert main(["profile", str(path), "--trace", str(trace), "--top", "5"]) == 0
    out = capsys.readouterr().out
    assert "busy us" in out and "of bound" in out and "total busy" in out and "bound" in out
    assert main(["profile", str(path), "--timing-only", "--by", "opcode", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "timing only" in out and "matmul" in out and trace.exists()
