"""``nova demo --train`` through the CLI entry: per-step losses beside torch, MFU,
the stats table, and the loss-curve PNG when matplotlib is installed."""

from __future__ import annotations

import importlib.util

from nova.cli.main import main


def test_demo_train_cli_prints_losses_mfu_and_writes_the_plot(tmp_path, capsys):
    plot = tmp_path / "loss.png"
    assert main(["demo", "--train", "--steps", "2", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line[:4].strip().isdigit()]
    assert [int(r[0]) for r in rows] == [0, 1]
    for row in rows:
        nova_loss, torch_loss = float(row[1]), float(row[2])
        assert abs(nova_loss - torch_loss) <= 1e-4 * abs(torch_loss)
        assert row[4] == "us" and 0 < float(row[5].rstrip("%")) <= 100
    assert "every step matches torch eager" in out
    assert "MFU (6 N tokens)" in out and "optimizer state" in out
    if importlib.util.find_spec("matplotlib") is None:
        assert not plot.exists() and "loss curve" not in out  # skipped quietly
    else:
        assert f"loss curve: {plot}" in out
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_train_steps_must_be_positive(capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["demo", "--train", "--steps", "0"])
    assert "expected a positive integer" in capsys.readouterr().err
