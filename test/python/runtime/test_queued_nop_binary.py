"""ISA version 4: a NOP on dma names its DMA queue (docs/isa.md 3.2, 4). The encoder's
vector decodes and runs; older versions and out-of-range queues are rejected."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from novabin import build, target, word

from nova.binary.disassembly import format_instruction
from nova.binary.isa import Engine, Opcode
from nova.runtime import BinaryFormatError, load_binary

HALT = word(opcode=Opcode.HALT, engine=Engine.SCALAR)
VECTOR = Path(__file__).resolve().parents[2] / "vectors" / "queued_nop.nova"


def nop(engine: Engine, queue: int) -> list:
    return [word(opcode=Opcode.NOP, engine=engine, queue=queue, signal=1),
            word(opcode=Opcode.SEM_WAIT, engine=Engine.SCALAR, wait=1), HALT]


def test_version_4_reads_the_queue_of_a_nop_on_dma():
    binary = load_binary(build(nop(Engine.DMA, 1), [], isa_version=4))
    assert binary.header.isa_version == 4
    assert binary.code(0)[0].queue == 1
    assert format_instruction(binary.code(0)[0], 0, ()).startswith("nop queue 1 on dma")


@pytest.mark.parametrize("version,engine,queue,pattern", [
    (3, Engine.DMA, 1, "nonzero reserved field 'queue' \\(= 1\\), not used by NOP"),
    (2, Engine.DMA, 1, "nonzero reserved field 'queue'"),
    (4, Engine.VECTOR, 1, "nonzero reserved field 'queue' \\(= 1\\), not used by NOP"),
    (4, Engine.DMA, 2, "DMA queue 2 is out of range \\[0, 2\\)"),
])
def test_rejected_queues(version, engine, queue, pattern):
    with pytest.raises(BinaryFormatError, match=pattern):
        load_binary(build(nop(engine, queue), [], tg=target(chips=1), isa_version=version))


def test_the_encoders_vector_decodes_and_runs() -> None:
    """test/vectors/queued_nop.nova, written by nova-translate from the output of
    convert-nova-to-isa on a tile loop whose stores use queue 1: ISA 4, the queued
    nops, and the numbers."""
    from nova.sim import Simulator

    binary = load_binary(VECTOR)
    assert binary.header.isa_version == 4
    code = binary.code(0)
    queued = [ins for ins in code if ins.opcode == Opcode.NOP and ins.engine == Engine.DMA and ins.queue]
    assert queued, "the vector has no nop on dma queue 1"
    loop = [ins.opcode for ins in code].index(Opcode.LOOP)
    end = [ins.opcode for ins in code].index(Opcode.ENDLOOP)
    assert {ins.queue for ins in code[loop:end] if ins.opcode == Opcode.DMA_COPY} == {0, 1}
    x = np.linspace(-2, 2, 256, dtype=np.float32)
    out, report = Simulator(binary).run({"x": x})
    np.testing.assert_allclose(out["y"], np.exp(x), rtol=1e-6)
