"""The sequencer: salu semantics, loops with address arithmetic, if/else, faults."""

import numpy as np
import pytest

from asm import Asm, target
from nova.sim import ProgramError, ScalarFaultError, Simulator
from nova.binary import opcodes as oc
from nova.sim.program import ChipCode, Instr, Program


def regs_after(build, chips=1):
    s = Asm()
    build(s)
    sim = Simulator(s.program(target("tiny", chips=chips)))
    sim.run()
    return [ch.regs for ch in sim.machine.chips]


@pytest.mark.parametrize("kind,a,b,want", [
    ("add", 5, 7, 12), ("sub", 5, 7, -2), ("mul", -3, 7, -21), ("div", -7, 2, -3), ("rem", -7, 2, -1),
    ("div", 7, -2, -3), ("rem", 7, -2, 1), ("min", -1, 3, -1), ("max", -1, 3, 3), ("eq", 4, 4, 1),
    ("ne", 4, 4, 0), ("lt", -5, 2, 1), ("le", 2, 2, 1), ("add", 2**63 - 1, 1, -2**63),
    ("mul", 2**62, 4, 0),
])
def test_salu(kind, a, b, want):
    def build(s):
        s.li(1, a); s.li(2, b); s.salu(kind, 3, 1, 2)
    assert regs_after(build)[0][3] == want


def test_div_by_zero_faults():
    def build(s):
        s.li(1, 1); s.li(2, 0); s.salu("div", 3, 1, 2)
    with pytest.raises(ScalarFaultError, match="division by zero"):
        regs_after(build)


def test_nested_loops_and_if_else():
    def build(s):
        s.li(10, 0); s.li(11, 0); s.li(12, 3); s.li(13, 2)
        with s.loop(1, 0, "r12"):           # i in 0..2
            with s.loop(2, 1, 7, "r13"):    # j in 1,3,5
                s.salu("add", 10, 10, 2)    # r10 += j
                s.salu("lt", 14, 2, 13)     # j < 2 ?
                s.if_(14, lambda: s.salu("add", 11, 11, 12), lambda: s.salu("sub", 11, 11, 13))
        with s.loop(3, 5, 5):               # zero trips
            s.li(10, -1)
    r = regs_after(build)[0]
    assert r[10] == 3 * (1 + 3 + 5)
    assert r[11] == 3 * (3 - 2 - 2)


def test_chip_id_per_chip():
    regs = regs_after(lambda s: s.chip_id(5), chips=2)
    assert [r[5] for r in regs] == [0, 1]


def test_non_positive_register_step_faults():
    def build(s):
        s.li(1, 0)
        with s.loop(2, 0, 4, "r1"):
            pass
    with pytest.raises(ScalarFaultError, match="step 0"):
        regs_after(build)


def test_falling_off_the_end_is_an_error():
    prog = Program(target("tiny", chips=1), (ChipCode((Instr(oc.LI, oc.SCALAR, rd=1, imm0=1),), ()),))
    with pytest.raises(ProgramError, match="fell off the end"):
        Simulator(prog).run()


def test_loop_with_address_arithmetic_strided_dma():
    """Copies the columns of an 8x8 matrix one at a time (strided DMA) into a transposed layout."""
    s = Asm()
    s.input(0, "x", "f32", [8, 8], 0)
    s.output(1, "y", "f32", [8, 8], 512)
    col = s.tile("hbm", "f32", [8], [8])     # one column of x
    row = s.tile("sram", "f32", [8], [1])
    s.li(20, 4); s.li(21, 32)
    with s.loop(1, 0, 8):
        s.salu("mul", 2, 1, 20)           # x + 4*j
        s.salu("mul", 3, 1, 21)           # sram + 32*j
        s.dma(2, col, 3, row, queue=0, signal=[0])
        s.sem_wait([0])
    s.li(4, 0); s.li(5, 512)
    s.dma(4, s.tile("sram", "f32", [8, 8]), 5, s.tile("hbm", "f32", [8, 8]), queue=1, signal=[1])
    s.sem_wait([1])
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    out, _ = Simulator(s.program(target("tiny", chips=1))).run({0: x})
    np.testing.assert_array_equal(out["y"], x.T)
