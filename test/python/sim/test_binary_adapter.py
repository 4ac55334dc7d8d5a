"""The simulator reads the binary reader's objects (nova.binary.isa / binary) when present."""

from types import SimpleNamespace

import numpy as np
import pytest

from asm import Asm, target

isa = pytest.importorskip("nova.binary.isa")
binary = pytest.importorskip("nova.binary.format")
from nova.sim import Simulator, program_from_binary  # noqa: E402


def to_runtime(prog):
    """Re-expresses a test Program with nova.binary.isa Instruction/Tile objects."""
    ch = prog.chips[0]
    code = [isa.Instruction(opcode=isa.Opcode(i.opcode), engine=isa.Engine(i.engine), kind=i.kind, flags=i.flags,
                            queue=i.queue, rd=i.rd, ra=i.ra, rb=i.rb, rc=i.rc, rdst=i.rdst,
                            tiles=(i.a, i.b, i.c, i.d), group=i.group, target=i.target, wait=i.wait,
                            signal=i.signal, imm0=i.imm0, imm1=i.imm1, imm2=i.imm2) for i in ch.code]
    tiles = [isa.Tile(isa.MemorySpace(t.space), isa.DType(t.dtype), t.shape, t.strides) for t in ch.tiles]
    p = SimpleNamespace(chips=tuple(range(prog.target.chips)), instructions=code, tiles=tuple(tiles),
                        groups=ch.groups, debug={len(code) - 2: "model.py:12:3"})
    io = [SimpleNamespace(index=e.index, role=binary.Role[e.role.upper()], name=e.name, dtype=e.dtype,
                          shape=e.shape, address=e.address) for e in prog.io]
    return SimpleNamespace(target=prog.target.__dict__, program_for=lambda c: p, io=io, constants=[],
                           chips=prog.target.chips)


def test_runtime_objects_simulate_like_the_program():
    s = Asm()
    s.input(0, "x", "f32", [8], 0)
    s.output(1, "y", "f32", [8], 64)
    s.li(1, 0); s.li(2, 256); s.li(3, 64)
    h, t = s.tile("hbm", "f32", [8]), s.tile("sram", "f32", [8])
    s.dma(1, h, 2, t, signal=[0])
    s.vunary("relu", 2, t, 2, t, wait=[0], signal=[1])
    s.dma(2, t, 3, h, wait=[1], signal=[2])
    s.sem_wait([2])
    prog = s.program(target("tiny", chips=2))
    b = to_runtime(prog)
    assert program_from_binary(b).chips[0].code == prog.chips[0].code
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    out, _ = Simulator(b).run({"x": x})
    np.testing.assert_array_equal(out["y"], np.maximum(x, 0))
