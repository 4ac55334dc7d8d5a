"""The loader checks every instruction against docs/isa.md section 2 and bounds
every tile address (docs/binary-format.md 7.1), so a crafted binary (CRC
recomputed) never reaches numpy with shapes or addresses its instructions do not
allow (issue 17, finding 3). Errors name the file, the chips, the instruction
index, the rule and the instruction's disassembly."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from novabin import build, target, tile, word

from test_binary_reject import seal, section

from nova.runtime import BinaryFormatError, load_binary
from nova.binary.format import SectionType
from nova.binary.isa import Engine, Opcode
from nova.sim import Simulator

VECTORS = Path(__file__).resolve().parents[2] / "vectors"
HBM, SRAM, ACC = 0, 1, 2
F32, I64 = 0, 3
S, D, M, V, C = Engine.SCALAR, Engine.DMA, Engine.MATRIX, Engine.VECTOR, Engine.COLLECTIVE


def li(rd: int, value: int):
    return word(opcode=Opcode.LI, engine=S, rd=rd, imm0=value)


def dma(ra: int, ta: int, rd: int, td: int, **kw):
    return word(opcode=Opcode.DMA_COPY, engine=D, ra=ra, tile_a=ta, rdst=rd, tile_d=td, **kw)


def salu(kind: int, rd: int, ra: int, rb: int):
    return word(opcode=Opcode.SALU, engine=S, kind=kind, rd=rd, ra=ra, rb=rb)


def loop(rd: int, lb: int, ub: int, end: int, step: int = 1):
    return word(opcode=Opcode.LOOP, engine=S, rd=rd, imm0=lb, imm1=ub, imm2=step, target=end)


def endloop(start: int):
    return word(opcode=Opcode.ENDLOOP, engine=S, target=start)


HALT = word(opcode=Opcode.HALT, engine=S)


def rejects(words, tiles, pattern: str, **kw) -> str:
    with pytest.raises(BinaryFormatError, match=pattern) as info:
        load_binary(build(words + [HALT], tiles, **kw))
    return str(info.value)


def loads(words, tiles, **kw):
    return load_binary(build(words + [HALT], tiles, **kw))


# -- the reproducer: shapes that used to reach numpy --------------------------------

def test_dma_of_mismatched_shapes_is_rejected_with_its_disassembly() -> None:
    # Used to fail inside the simulator with numpy's "could not broadcast input
    # array from shape (1,32) into shape (32,16)" and no instruction index.
    text = rejects([li(0, 0), li(1, 0), dma(0, 0, 1, 1)],
                   [tile(HBM, F32, [1, 32]), tile(SRAM, F32, [32, 16])],
                   "instruction 2: DMA_COPY source")
    assert "code of chips [0]" in text
    assert "[1, 32]" in text and "[32, 16]" in text
    assert "[dma_copy r0:t0 -> r1:t1 queue 0 on dma]" in text


def test_the_file_is_named_when_loading_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "crafted.nova"
    path.write_bytes(build([li(0, 0), dma(0, 0, 0, 1), HALT],
                           [tile(HBM, F32, [1, 32]), tile(SRAM, F32, [32, 16])]))
    with pytest.raises(BinaryFormatError, match=f"^{path}: code of chips \\[0\\], instruction 1"):
        load_binary(path)


def tile_size(data: bytearray, index: int, dim: int, value: int) -> bytes:
    """Sets size ``dim`` of tile ``index`` of the first program and reseals the CRC."""
    struct.pack_into("<I", data, section(data, SectionType.TILES).offset + 48 * index + 8 + 4 * dim,
                     value)
    return seal(data)


def test_one_changed_tile_size_in_a_vector_is_rejected() -> None:
    # The fuzzers' most common silent corruption: one byte of a tile's sizes.
    data = bytearray((VECTORS / "matmul_relu.nova").read_bytes())
    program = load_binary(bytes(data)).programs[0]
    i, ins = next((i, ins) for i, ins in enumerate(program.instructions)
                  if ins.opcode == Opcode.DMA_COPY)
    shape = program.tiles[ins.tiles[3]].shape
    with pytest.raises(BinaryFormatError, match=f"instruction {i}: DMA_COPY source .* must have "
                                                f"one shape"):
        load_binary(tile_size(data, ins.tiles[3], 0, shape[0] + 1))


def test_collective_output_shape_follows_the_group_size() -> None:
    # reduce_scatter of [64, 64] over groups of 4 writes [16, 64]
    data = bytearray((VECTORS / "collectives.nova").read_bytes())
    with pytest.raises(BinaryFormatError, match="instruction 8: REDUCE_SCATTER output shape "
                                                "\\[17, 64\\] should be \\[16, 64\\]"):
        load_binary(tile_size(data, 1, 0, 17))


@pytest.mark.parametrize("words, tiles, pattern", [
    # matmul: [M, K] x [K, N] -> [M, N] and K, N within the matrix unit (tiny: 8 x 8)
    ([word(opcode=Opcode.MATMUL, engine=M, ra=0, tile_a=0, rb=0, tile_b=1, rdst=0, tile_d=2)],
     [tile(SRAM, F32, [4, 8]), tile(SRAM, F32, [4, 8]), tile(ACC, F32, [4, 8])],
     "MATMUL shapes lhs \\[4, 8\\], rhs \\[4, 8\\], acc \\[4, 8\\] are not"),
    ([word(opcode=Opcode.MATMUL, engine=M, ra=0, tile_a=0, rb=0, tile_b=1, rdst=0, tile_d=2)],
     [tile(SRAM, F32, [4, 16]), tile(SRAM, F32, [16, 8]), tile(ACC, F32, [4, 8])],
     "MATMUL K = 16, N = 8 exceed the matrix unit \\(8 x 8\\)"),
    ([word(opcode=Opcode.MATMUL, engine=M, ra=0, tile_a=0, rb=0, tile_b=1, rdst=0, tile_d=2)],
     [tile(HBM, F32, [4, 8]), tile(SRAM, F32, [8, 8]), tile(ACC, F32, [4, 8])],
     "MATMUL lhs must live in sram, got hbm"),
    # vector broadcast: same rank, each size equal or 1
    ([word(opcode=Opcode.VBINARY, engine=V, kind=32, ra=0, tile_a=0, rb=0, tile_b=1, rdst=0,
           tile_d=0)],
     [tile(SRAM, F32, [4, 8]), tile(SRAM, F32, [3, 8])],
     "VBINARY input shape \\[3, 8\\] does not broadcast to the output shape \\[4, 8\\]"),
    ([word(opcode=Opcode.VUNARY, engine=V, kind=3, ra=0, tile_a=0, rdst=0, tile_d=1)],
     [tile(SRAM, F32, [4, 8]), tile(SRAM, F32, [32])],
     "VUNARY input shape \\[4, 8\\] does not broadcast"),
    ([word(opcode=Opcode.VUNARY, engine=V, kind=3, ra=0, tile_a=0, rdst=0, tile_d=1)],
     [tile(SRAM, F32, [4]), tile(SRAM, F32, [4], [0])],
     "VUNARY output .* repeats elements"),
    ([word(opcode=Opcode.VREDUCE, engine=V, kind=0, ra=0, tile_a=0, rdst=0, tile_d=1, imm0=1)],
     [tile(SRAM, F32, [4, 8]), tile(SRAM, F32, [4, 8])],
     "VREDUCE output shape \\[4, 8\\] should be \\[4, 1\\]"),
    ([word(opcode=Opcode.VTRANSPOSE, engine=V, ra=0, tile_a=0, rdst=0, tile_d=0, imm0=0x01)],
     [tile(SRAM, F32, [4, 8])],
     "VTRANSPOSE output shape \\[4, 8\\] should be \\[8, 4\\]"),
    ([word(opcode=Opcode.VCOPY, engine=V, ra=0, tile_a=0, rdst=0, tile_d=1)],
     [tile(HBM, F32, [4]), tile(SRAM, F32, [4])],
     "VCOPY input a must live in sram or acc, got hbm"),
    # indexed DMA: the index tile has the shape of the gathered tile
    ([word(opcode=Opcode.DMA_GATHER, engine=D, ra=0, tile_a=0, rb=0, tile_b=1, rdst=0, tile_d=2)],
     [tile(HBM, F32, [64]), tile(SRAM, I64, [4]), tile(SRAM, F32, [8])],
     "DMA_GATHER indices \\[4\\] must have the shape of the gathered tile \\[8\\]"),
    # DMA to a peer writes hbm
    ([word(opcode=Opcode.DMA_COPY, engine=D, ra=0, tile_a=0, rdst=0, tile_d=1, flags=8, rc=0)],
     [tile(HBM, F32, [4]), tile(SRAM, F32, [4])],
     "DMA_COPY to a peer must write hbm"),
])
def test_operand_rules(words, tiles, pattern: str) -> None:
    rejects([li(0, 0)] + words, tiles, pattern)


# -- static address bounds ----------------------------------------------------------

def test_address_beyond_capacity_is_rejected() -> None:
    hbm = target(chips=1)["hbm_bytes"]
    text = rejects([li(0, hbm - 16), li(1, 0), dma(0, 0, 1, 1)],
                   [tile(HBM, F32, [16]), tile(SRAM, F32, [16])],
                   f"instruction 2: tile a at hbm address r0 = {hbm - 16} with extent 64 bytes "
                   f"reaches byte {hbm + 48}, outside its capacity {hbm}")
    assert "[dma_copy r0:t0 -> r1:t1 queue 0 on dma]" in text


def test_negative_address_is_rejected() -> None:
    rejects([li(0, -64), li(1, 0), dma(0, 0, 1, 1)],
            [tile(HBM, F32, [16]), tile(SRAM, F32, [16])], "tile a at hbm address r0 = -64")


def test_loop_addresses_are_bounded_by_the_induction_variable() -> None:
    sram = target(chips=1)["sram_bytes"]
    tiles = [tile(HBM, F32, [16]), tile(SRAM, F32, [16])]
    # addr = 64 * i for i in 0..ub-1: the last tile ends at 64 * ub
    body = lambda ub: [li(1, 64), loop(0, 0, ub, 5), salu(2, 2, 0, 1), dma(3, 0, 2, 1),  # noqa: E731
                       endloop(2)]
    program = loads([li(3, 0)] + body(sram // 64), tiles).programs[0]
    assert program.high[1] == sram
    rejects([li(3, 0)] + body(sram // 64 + 1), tiles,
            f"tile d at sram address r2 in \\[0, {sram}\\] with extent 64 bytes")


def test_an_address_carried_across_iterations_cannot_be_bounded() -> None:
    # r1 += 64 every iteration: loops carry no values (docs/isa.md 1.2), so the
    # loader does not try to bound r1 and rejects its use as an address.
    rejects([li(0, 0), li(1, 0), li(2, 64), loop(3, 0, 4, 6), dma(0, 0, 1, 1),
             salu(0, 1, 1, 2), endloop(3)],
            [tile(HBM, F32, [16]), tile(SRAM, F32, [16])],
            "instruction 4: the address of tile d \\(r1\\) cannot be bounded statically")


def test_a_body_that_writes_its_induction_variable_is_not_trusted() -> None:
    # i = -100 inside the body: ENDLOOP then counts on from -99, so i is not in [0, 4).
    rejects([li(1, 0), li(2, -100), loop(0, 0, 4, 5), dma(1, 0, 0, 1),
             salu(0, 0, 2, 1), endloop(2)],
            [tile(HBM, F32, [16]), tile(SRAM, F32, [16])],
            "instruction 3: the address of tile d \\(r0\\) cannot be bounded statically")


def test_the_prefetch_index_of_compiled_code_is_bounded() -> None:
    # nova's pipelined loops address the next tile as i + (i + s < n) * (s), which
    # plain intervals cannot bound; affine forms in the induction variable can.
    words = [li(9, 0), loop(4, 0, 32, 10, 16), li(5, 8), salu(0, 5, 4, 5), li(6, 32),
             salu(9, 7, 5, 6), salu(1, 8, 5, 4), salu(2, 7, 7, 8), salu(0, 7, 4, 7),
             dma(7, 0, 9, 1), endloop(1)]
    loads(words, [tile(HBM, F32, [8]), tile(SRAM, F32, [8])])


def test_chip_dependent_addresses_are_checked_per_chip() -> None:
    tg = target(chips=2)
    sram = tg["sram_bytes"]
    tiles = [tile(HBM, F32, [16]), tile(SRAM, F32, [16])]
    chip_id = word(opcode=Opcode.CHIP_ID, engine=S, rd=0)
    # address (chip_id - 1) * 64 inside "if chip_id != 0": valid on chip 1, and the
    # branch never runs on chip 0, although the interval over both chips includes -64
    words = [chip_id, li(1, 1), salu(1, 2, 0, 1), li(3, 64), salu(2, 2, 2, 3), li(4, 0),
             salu(8, 5, 0, 4), word(opcode=Opcode.IF, engine=S, ra=5, target=9),
             dma(4, 0, 2, 1), word(opcode=Opcode.ENDIF, engine=S)]
    loads(words, tiles, tg=tg)
    # sram - 32 + chip_id * 64: fine on chip 0, past the end on chip 1
    words = [chip_id, li(1, 64), salu(2, 2, 0, 1), li(3, sram - 64), salu(0, 2, 2, 3), li(4, 0),
             dma(4, 0, 2, 1)]
    rejects(words, tiles, "code of chips \\[0, 1\\] \\(on chip 1\\), instruction 6: tile d", tg=tg)


def test_deeply_nested_ifs_are_analysed_without_recursion() -> None:
    # The ISA limits loops to 8 deep, not ifs: 5000 nested ifs around one DMA.
    depth = 5000
    words = [li(0, 1), li(1, 0)]
    words += [word(opcode=Opcode.IF, engine=S, ra=0, target=2 + 2 * depth - k)
              for k in range(depth)]
    words.append(dma(1, 0, 1, 1))
    words += [word(opcode=Opcode.ENDIF, engine=S) for _ in range(depth)]
    program = loads(words, [tile(HBM, F32, [16]), tile(SRAM, F32, [16])]).programs[0]
    assert program.high[0] == 64 and program.high[1] == 64


def test_a_peer_that_is_never_a_chip_is_rejected() -> None:
    tg = target(chips=2)
    rejects([li(0, 0), li(2, 7),
             word(opcode=Opcode.DMA_COPY, engine=D, ra=0, tile_a=0, rdst=0, tile_d=0, flags=8, rc=2)],
            [tile(HBM, F32, [4])], "peer chip r2 in \\[7, 7\\] is never one of chips 0..1", tg=tg)


# -- the I/O table -------------------------------------------------------------------

def test_overlapping_io_entries_are_rejected() -> None:
    rejects([], [tile(HBM, F32, [4])], "IO entry 'y' at HBM \\[32, 96\\) overlaps IO entry 'x'",
            io=[(0, 0, "x", 0, [16], 0), (1, 1, "y", 0, [16], 32)])


def test_io_shape_whose_size_wraps_around_is_rejected() -> None:
    # 2^33 * 2^31 elements of 4 bytes = 2^66 bytes, 0 in u64 arithmetic: the loader
    # computes sizes exactly.
    data = bytearray(build([HALT], [tile(HBM, F32, [4])], io=[(0, 0, "x", 0, [1, 1], 0)]))
    entry = section(data, SectionType.IO).offset + 8
    struct.pack_into("<Q", data, entry + 24, 0)
    struct.pack_into("<QQ", data, entry + 32, 1 << 33, 1 << 31)
    with pytest.raises(BinaryFormatError, match="IO entry 0 'x': byte_size 0 does not match "
                                                "shape \\[8589934592, 2147483648\\]"):
        load_binary(seal(data))


# -- what a validated binary does -------------------------------------------------------

def test_a_far_but_legal_hbm_address_does_not_allocate_the_gap() -> None:
    # Input at 0, output 30 GiB up the 32 GiB HBM of nova-t1: the simulator's
    # memory holds two small chunks, not 30 GiB (it used to try to allocate it all).
    tg = target("nova-t1", chips=1)
    far = 30 << 30
    words = [li(0, 0), li(1, 0), li(2, far),
             dma(0, 0, 1, 1, signal=1), dma(1, 1, 2, 0, wait=1)]
    binary = loads(words, [tile(HBM, F32, [16]), tile(SRAM, F32, [16])], tg=tg,
                   io=[(0, 0, "x", 0, [16], 0), (1, 1, "y", 0, [16], far)])
    x = np.arange(16, dtype=np.float32)
    simulator = Simulator(binary)
    outputs, _ = simulator.run({0: x})
    np.testing.assert_array_equal(outputs[1], x)
    hbm = simulator.machine.chips[0].mem.spaces[0]
    assert hbm.allocated < 1 << 24
    assert len(hbm.bufs) == 2
