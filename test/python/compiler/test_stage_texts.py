"""The tiled and ISA stages travel between the tools as MLIR bytecode: a
program's ``stages`` prints them as text on first read (and keeps the text),
``--dump-dir`` writes text, and only bytecode handed on skips the per-pass
verifier (``NOVA_VERIFY_EACH=1`` keeps it)."""

from __future__ import annotations

import nova.compiler.driver as driver
from nova.compiler.build import build_program
from nova.compiler.driver import Bytecode
from nova.compiler.options import TargetOptions

from ir_cases import ADD


def test_stages_are_bytecode_until_read_then_text(tmp_path):
    program = build_program(ADD, TargetOptions(name="nova-t1"), dump_dir=tmp_path)
    stages = program.stages
    # --dump-dir asked for text, so both were printed (and kept).
    assert (tmp_path / "1-nova.mlir").read_text() == stages["nova"]
    assert "nova_isa." in (tmp_path / "2-nova_isa.mlir").read_text()
    fresh = build_program(ADD, TargetOptions(name="nova-t1")).stages
    assert isinstance(fresh.raw("nova"), Bytecode) and isinstance(fresh.raw("nova_isa"), Bytecode)
    text = fresh["nova_isa"]
    assert isinstance(text, str) and "nova_isa." in text and fresh.raw("nova_isa") is text
    assert fresh["nova"] == stages["nova"]
    assert set(fresh) == {"linalg", "nova", "nova_isa", "binary"}


def test_only_bytecode_skips_the_per_pass_verifier(monkeypatch):
    commands = []
    real = driver._run

    def record(command, stdin, timeout):
        commands.append(command)
        return real(command, stdin, timeout)

    monkeypatch.setattr(driver, "_run", record)
    monkeypatch.delenv("NOVA_VERIFY_EACH", raising=False)
    text = driver.run_opt(ADD)
    driver.run_opt(ADD, bytecode=True)
    monkeypatch.setenv("NOVA_VERIFY_EACH", "1")
    driver.run_opt(ADD, bytecode=True)
    assert "--verify-each=false" not in commands[0] and "--emit-bytecode" not in commands[0]
    assert "--verify-each=false" in commands[1] and "--emit-bytecode" in commands[1]
    assert "--verify-each=false" not in commands[2] and "--emit-bytecode" in commands[2]
    assert "func.func @forward" in text
