"""Engine 5, the activation engine (docs/isa.md 2.7, 3.1, 4): valid in an ISA-3 binary
whose target has an activation block, for vunary / vscalar / vcopy and nop only."""

from __future__ import annotations

import pytest
from novabin import build, target, tile, word

from nova.binary.isa import Engine, Opcode
from nova.runtime import BinaryFormatError, load_binary

ACT = {"lanes": 8, "overhead_cycles": 10, "elementwise_factor": 1, "transcendental_factor": 2}
SRAM, F32 = 1, 0
TILES = [tile(SRAM, F32, [4, 8])]
HALT = word(opcode=Opcode.HALT, engine=Engine.SCALAR)


def code(opcode: Opcode, **kw) -> list:
    return [word(opcode=Opcode.LI, engine=Engine.SCALAR, rd=1, imm0=0),
            word(opcode=opcode, engine=Engine.ACTIVATION, ra=1, tile_a=0, rdst=1, tile_d=0, **kw), HALT]


def test_loads_in_version_3_with_an_activation_target():
    binary = load_binary(build(code(Opcode.VUNARY, kind=3), TILES, tg=target(chips=1, activation=ACT),
                               isa_version=3))
    assert binary.header.isa_version == 3
    assert binary.code(0)[1].engine == Engine.ACTIVATION


@pytest.mark.parametrize("version,tg,pattern", [
    (2, target(chips=1, activation=ACT), "engine activation needs ISA version 3"),
    (3, target(chips=1), "engine activation needs ISA version 3 and a target with an activation engine"),
    (6, target(chips=1, activation=ACT), "unsupported ISA version 6"),
])
def test_rejected_without_version_3_and_an_activation_target(version, tg, pattern):
    with pytest.raises(BinaryFormatError, match=pattern):
        load_binary(build(code(Opcode.VSCALAR, kind=34), TILES, tg=tg, isa_version=version))


def test_tensor_tensor_instructions_stay_on_vector():
    with pytest.raises(BinaryFormatError, match="VBINARY cannot run on engine activation"):
        load_binary(build(code(Opcode.VBINARY, kind=32, rb=1, tile_b=0), TILES,
                          tg=target(chips=1, activation=ACT), isa_version=3))


def test_the_encoders_vector_decodes_and_runs() -> None:
    """test/vectors/activation.nova, written by nova-translate: ISA 3, the target's
    activation block, engine 5, and the numbers of the vector engine's functions."""
    import numpy as np
    from pathlib import Path

    from nova.sim import Simulator

    binary = load_binary(Path(__file__).resolve().parents[2] / "vectors" / "activation.nova")
    assert binary.header.isa_version == 3
    assert binary.target["activation"] == ACT
    engines = [ins.engine for ins in binary.code(0) if ins.opcode in (Opcode.VUNARY, Opcode.VSCALAR)]
    assert engines == [Engine.ACTIVATION, Engine.VECTOR]
    x = np.linspace(-2, 2, 64, dtype=np.float32).reshape(8, 8)
    out, report = Simulator(binary).run({"x": x})
    np.testing.assert_allclose(out["y"], np.exp(x), rtol=1e-6)
    np.testing.assert_array_equal(out["z"], x * np.float32(0.5))
    act = [e for e in report.engines if e.engine == "activation"]
    assert len(act) == 1 and act[0].instructions == 1 and act[0].busy_ns == 10 + 8 * 2
