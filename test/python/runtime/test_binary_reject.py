"""load_binary rejects every broken rule of docs/binary-format.md with a
BinaryFormatError that names it. Each case corrupts a valid test vector (and
re-seals the CRC, except for the checksum cases) so that exactly one rule
breaks."""

from __future__ import annotations

import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from nova.runtime import BinaryFormatError, load_binary
from nova.binary.format import SectionType
from nova.binary.isa import WORD_DTYPE, Opcode

VECTORS = Path(__file__).resolve().parents[2] / "vectors"


def data_of(name: str) -> bytearray:
    return bytearray((VECTORS / f"{name}.nova").read_bytes())


def seal(data: bytearray) -> bytes:
    """Recomputes the CRC-32 trailer."""
    struct.pack_into("<I", data, len(data) - 4, zlib.crc32(bytes(data[:-4])))
    return bytes(data)


class _Section:
    def __init__(self, offset: int, size: int) -> None:
        self.offset, self.size = offset, size


def section(data: bytes | bytearray, stype: SectionType, nth: int = 0) -> _Section:
    """The nth section of a type, read from the raw table (no validation, so
    it works on data already corrupted)."""
    count, table = struct.unpack_from("<I", data, 12)[0], struct.unpack_from("<Q", data, 40)[0]
    found = []
    for k in range(count):
        t, _, off, size = struct.unpack_from("<IIQQ", data, table + 64 * k)
        if t == stype:
            found.append(_Section(off, size))
    return found[nth]


def word_field(data: bytearray, index: int, name: str, value: int,
               vec_section: int = 0) -> None:
    """Sets field `name` of instruction `index` of the first CODE section."""
    code = section(data, SectionType.CODE, vec_section)
    fmt, off = WORD_DTYPE.fields[name][0], WORD_DTYPE.fields[name][1]
    at = code.offset + 64 * index + off
    data[at:at + fmt.itemsize] = np.array([value], fmt).tobytes()


def rejects(data: bytes | bytearray, pattern: str) -> None:
    with pytest.raises(BinaryFormatError, match=pattern):
        load_binary(bytes(data))


# -- framing ----------------------------------------------------------------

def test_flipped_byte_is_a_checksum_error() -> None:
    data = data_of("matmul_relu")
    for at in (200, len(data) // 2, len(data) - 5):
        bad = bytearray(data)
        bad[at] ^= 0x40
        rejects(bad, "checksum mismatch")


def test_flipped_checksum_byte() -> None:
    data = data_of("matmul_relu")
    data[-1] ^= 1
    rejects(data, "checksum mismatch")


def test_truncated_file() -> None:
    data = data_of("matmul_relu")
    rejects(data[:-100], "truncated file: header says")
    rejects(data[:100], "truncated file")
    rejects(data[:2], "truncated file")
    rejects(b"", "truncated file")


def test_trailing_data() -> None:
    rejects(data_of("matmul_relu") + b"\0" * 8, "file size mismatch")


def test_wrong_magic() -> None:
    data = data_of("matmul_relu")
    data[0:4] = b"AVON"
    rejects(data, "bad magic")
    rejects(b"\x7fELF" + bytes(200), "bad magic")


def test_unsupported_versions() -> None:
    data = data_of("matmul_relu")
    struct.pack_into("<H", data, 4, 2)
    rejects(seal(data), "unsupported format version 2")
    data = data_of("matmul_relu")
    struct.pack_into("<H", data, 6, 7)
    rejects(seal(data), "unsupported ISA version 7")


def test_missing_trailer_tag() -> None:
    data = data_of("matmul_relu")
    data[-8:-4] = b"XXXX"
    rejects(seal(data), "missing trailer tag")


def test_header_flags_and_reserved() -> None:
    data = data_of("matmul_relu")
    struct.pack_into("<I", data, 8, 1)
    rejects(seal(data), "header flags 0x1")
    data = data_of("matmul_relu")
    data[100] = 1
    rejects(seal(data), "nonzero reserved bytes in the header")


def test_target_json_disagrees_with_header() -> None:
    data = data_of("matmul_relu")
    at = bytes(data).index(b'"chips":2')
    data[at:at + 9] = b'"chips":3'
    rejects(seal(data), "target chips 3 disagrees")
    data = data_of("matmul_relu")
    at = bytes(data).index(b'"topology":"switch"')
    data[at:at + 19] = b'"topology":"swatch"'
    rejects(seal(data), "key 'topology' must be one of switch, ring, torus2d, pcie, got 'swatch'")
    data = data_of("matmul_relu")
    data[128] = ord("[")
    rejects(seal(data), "not valid UTF-8 JSON|not a JSON object")


def test_section_out_of_file() -> None:
    data = data_of("matmul_relu")
    table = struct.unpack_from("<Q", data, 40)[0]
    struct.pack_into("<Q", data, table + 16, 10**9)  # section 0 size
    rejects(seal(data), "truncated section: section 0 \\(CODE\\)")


def test_overlapping_sections() -> None:
    data = data_of("matmul_relu")
    table = struct.unpack_from("<Q", data, 40)[0]
    off0 = struct.unpack_from("<Q", data, table + 8)[0]
    struct.pack_into("<Q", data, table + 64 + 8, off0)  # section 1 at section 0
    rejects(seal(data), "overlaps")


def test_misaligned_section() -> None:
    data = data_of("matmul_relu")
    table = struct.unpack_from("<Q", data, 40)[0]
    off = struct.unpack_from("<Q", data, table + 64 * 4 + 8)[0]  # IO, last
    struct.pack_into("<Q", data, table + 64 * 4 + 8, off + 8)
    rejects(seal(data), "not a multiple of 64")


def test_unknown_section_type() -> None:
    data = data_of("matmul_relu")
    table = struct.unpack_from("<Q", data, 40)[0]
    struct.pack_into("<I", data, table + 64 * 3, 99)
    rejects(seal(data), "unknown section type 99")


def test_chip_set_out_of_range() -> None:
    data = data_of("matmul_relu")
    table = struct.unpack_from("<Q", data, 40)[0]
    struct.pack_into("<Q", data, table + 32, 0b100011)  # chips 0, 1, 5
    rejects(seal(data), "chip 5 is out of range")


def test_chip_without_code() -> None:
    data = data_of("matmul_relu")
    table = struct.unpack_from("<Q", data, 40)[0]
    for k in range(4):  # CODE, TILES, GROUPS, DEBUG: only chip 0
        struct.pack_into("<Q", data, table + 64 * k + 32, 0b1)
    rejects(seal(data), "chip 1 has no CODE section")


def test_missing_io_section() -> None:
    data = data_of("matmul_relu")
    table = struct.unpack_from("<Q", data, 40)[0]
    struct.pack_into("<I", data, table + 64 * 4, int(SectionType.CONSTANTS))
    rejects(seal(data), "exactly one IO section")


def test_nonzero_padding() -> None:
    data = data_of("matmul_relu")
    t_off, t_size = struct.unpack_from("<QQ", data, 24)
    data[t_off + t_size + 1] = 0xAA  # between the target JSON and the section table
    rejects(seal(data), "nonzero padding")


# -- code -------------------------------------------------------------------

def test_unknown_opcode() -> None:
    data = data_of("matmul_relu")
    word_field(data, 3, "opcode", 0x7F)
    rejects(seal(data), "instruction 3: unknown opcode 0x7f")


def test_unknown_engine() -> None:
    data = data_of("matmul_relu")
    word_field(data, 3, "engine", 9)
    rejects(seal(data), "instruction 3: unknown engine 9")


def test_engine_not_allowed() -> None:
    data = data_of("matmul_relu")
    word_field(data, 11, "engine", 1)  # MATMUL on vector
    rejects(seal(data), "instruction 11: MATMUL cannot run on engine vector")


def test_undefined_flag() -> None:
    data = data_of("matmul_relu")
    word_field(data, 12, "flags", 0x20)  # accumulate on VBINARY
    rejects(seal(data), "flag bits 0x20 are not defined for VBINARY")


def test_nonzero_unused_field() -> None:
    data = data_of("matmul_relu")
    word_field(data, 0, "imm2", 5)  # LI uses imm0 only
    rejects(seal(data), "nonzero reserved field 'imm2'.*LI")
    data = data_of("matmul_relu")
    word_field(data, 0, "tile_b", 0)  # unused tile must be 0xFFFF
    rejects(seal(data), "nonzero reserved field 'tile_b'")


def test_bad_kind() -> None:
    data = data_of("matmul_relu")
    word_field(data, 13, "kind", 32)  # VUNARY with a binary kind
    rejects(seal(data), "kind 32 is not valid for VUNARY")


def test_tile_index_out_of_range() -> None:
    data = data_of("matmul_relu")
    word_field(data, 8, "tile_a", 9)
    rejects(seal(data), "instruction 8: tile_a index 9 is out of range \\(5 tiles\\)")


def test_group_index_out_of_range() -> None:
    data = data_of("collectives")
    word_field(data, 7, "group", 7)
    rejects(seal(data), "instruction 7: group index 7 is out of range \\(3 groups\\)")


def test_dma_queue_out_of_range() -> None:
    data = data_of("matmul_relu")
    word_field(data, 8, "queue", 5)
    rejects(seal(data), "DMA queue 5 is out of range \\[0, 2\\)")


def test_bad_jump_targets() -> None:
    data = data_of("control_flow")
    word_field(data, 5, "target", 11)  # outer LOOP must target its ENDLOOP (12)
    rejects(seal(data), "instruction 5: bad jump target: LOOP target 11")
    data = data_of("control_flow")
    word_field(data, 10, "target", 5)  # inner ENDLOOP must target its LOOP (7)
    rejects(seal(data), "instruction 10: bad jump target: ENDLOOP target 5")
    data = data_of("control_flow")
    word_field(data, 13, "target", 17)  # IF with an ELSE targets the ELSE
    rejects(seal(data), "instruction 13: bad jump target: IF target 17")
    data = data_of("control_flow")
    word_field(data, 15, "target", 16)
    rejects(seal(data), "instruction 15: bad jump target: ELSE target 16")
    data = data_of("control_flow")
    word_field(data, 5, "target", 10**6)
    rejects(seal(data), "bad jump target")


def test_unbalanced_control_flow() -> None:
    data = data_of("control_flow")
    word_field(data, 12, "opcode", int(Opcode.ENDIF))  # outer ENDLOOP -> ENDIF
    word_field(data, 12, "target", 0)
    rejects(seal(data), "instruction 12: ENDIF without a matching IF")
    data = data_of("control_flow")
    word_field(data, 17, "opcode", int(Opcode.NOP))  # drop an ENDIF
    rejects(seal(data), "IF is never closed|ELSE without")


def test_loop_step_not_positive() -> None:
    data = data_of("control_flow")
    word_field(data, 5, "imm2", 0)
    rejects(seal(data), "instruction 5: LOOP immediate step 0 is not positive")


def test_missing_peer_flag() -> None:
    data = data_of("collectives")
    word_field(data, 11, "flags", 0)  # SEND
    rejects(seal(data), "instruction 11: SEND must have the peer flag set")


def test_axis_and_permutation_out_of_range() -> None:
    data = data_of("control_flow")
    word_field(data, 19, "imm0", 2)  # VREDUCE axis of a rank-2 tile
    rejects(seal(data), "VREDUCE axis/dim 2 is out of range for a rank-2 tile")
    data = data_of("control_flow")
    word_field(data, 21, "imm0", 0x0101)
    rejects(seal(data), "VTRANSPOSE permutation \\[1, 1\\] is not a permutation")


def test_empty_semaphore_list() -> None:
    data = data_of("matmul_relu")
    word_field(data, 15, "wait", 0)
    rejects(seal(data), "SEM_WAIT with an empty semaphore mask")


def test_last_word_not_halt() -> None:
    data = data_of("matmul_relu")
    word_field(data, 16, "opcode", int(Opcode.NOP))
    rejects(seal(data), "last instruction \\(16\\) is not HALT")


def test_code_size_not_whole_words() -> None:
    data = data_of("matmul_relu")
    table = struct.unpack_from("<Q", data, 40)[0]
    size = struct.unpack_from("<Q", data, table + 16)[0]
    struct.pack_into("<Q", data, table + 16, size - 8)
    rejects(seal(data), "not a positive multiple of 64|nonzero padding")


# -- tables ------------------------------------------------------------------

def test_bad_tile_descriptor() -> None:
    data = data_of("matmul_relu")
    tiles = section(data, SectionType.TILES)
    data[tiles.offset + 2] = 5  # rank
    rejects(seal(data), "tile 0 of chips \\[0, 1\\]: rank 5 is out of range")
    data = data_of("matmul_relu")
    data[tiles.offset + 0] = 3  # space
    rejects(seal(data), "unknown memory space 3")
    data = data_of("matmul_relu")
    struct.pack_into("<I", data, tiles.offset + 8, 1 << 30)  # huge size
    rejects(seal(data), "exceeds hbm capacity")


def test_bad_replica_groups() -> None:
    data = data_of("collectives")
    groups = section(data, SectionType.GROUPS)
    off = struct.unpack_from("<I", data, groups.offset + 4)[0]
    struct.pack_into("<I", data, groups.offset + off + 8, 1)  # [[1, 1], [2, 3]]
    rejects(seal(data), "entry 0 is not a partition of chips 0..3")
    data = data_of("collectives")
    struct.pack_into("<I", data, groups.offset + 4, 2)  # offset into the offset array
    rejects(seal(data), "entry 0 offset 2 is out of range or misaligned")


def test_io_entry_beyond_hbm() -> None:
    data = data_of("matmul_relu")
    io = section(data, SectionType.IO)
    struct.pack_into("<Q", data, io.offset + 8 + 16, 1048576 - 8)  # x address
    rejects(seal(data), "IO entry 0 'x': HBM address 1048568 \\+ 256 bytes is beyond hbm_bytes")


def test_io_entry_inconsistent() -> None:
    data = data_of("matmul_relu")
    io = section(data, SectionType.IO)
    data[io.offset + 8 + 4] = 2  # role
    rejects(seal(data), "IO entry 0: unknown role 2")
    data = data_of("matmul_relu")
    struct.pack_into("<Q", data, io.offset + 8 + 24, 100)  # byte_size
    rejects(seal(data), "byte_size 100 does not match shape \\[8, 8\\] of f32")
    data = data_of("matmul_relu")
    struct.pack_into("<I", data, io.offset + 8 + 96, 0)  # w's index -> 0
    rejects(seal(data), "duplicate argument index 0")
    data = data_of("matmul_relu")
    struct.pack_into("<I", data, io.offset + 8 + 12, 10**6)  # name size
    rejects(seal(data), "truncated section: IO entry 0 text")


def test_debug_index_out_of_range() -> None:
    data = data_of("matmul_relu")
    debug = section(data, SectionType.DEBUG)
    struct.pack_into("<I", data, debug.offset + 8, 99)
    rejects(seal(data), "DEBUG section of chips \\[0, 1\\]: entry 0 names instruction 99")


def test_debug_entries_broken_after_the_first() -> None:
    """Each rule of a DEBUG entry names the first entry that breaks it, however
    many good entries share its text (the entries are checked at once)."""
    where = "DEBUG section of chips \\[0, 1\\]"
    data = data_of("matmul_relu")
    debug = section(data, SectionType.DEBUG)
    count = struct.unpack_from("<I", data, debug.offset)[0]
    assert count >= 3
    entry = lambda k: debug.offset + 8 + 16 * k  # noqa: E731
    index2 = struct.unpack_from("<I", data, entry(2))[0]

    bad = bytearray(data)
    struct.pack_into("<I", bad, entry(2) + 4, 1)  # reserved
    rejects(seal(bad), f"{where}: entry 2 has nonzero reserved bytes")
    bad = bytearray(data)
    struct.pack_into("<I", bad, entry(2), index2 - 1)  # not increasing
    rejects(seal(bad), f"{where}: entry 2 names instruction {index2 - 1}")
    bad = bytearray(data)
    struct.pack_into("<I", bad, entry(2) + 12, 10**6)  # text size
    rejects(seal(bad), f"truncated section: {where} entry 2 text")
    # A text of its own that is not UTF-8, read by entries 1 and 2: entry 1 is named.
    off, size = struct.unpack_from("<II", data, entry(1) + 8)
    text_at = debug.offset + debug.size - 2
    bad = bytearray(data)
    bad[text_at:text_at + 2] = b"\xff\xfe"
    for k in (1, 2):
        struct.pack_into("<II", bad, entry(k) + 8, debug.size - 2, 2)
    rejects(seal(bad), f"{where} entry 1: text is not UTF-8")


# -- scale --------------------------------------------------------------------

def _with_code(data: bytes, words: np.ndarray) -> bytes:
    """`data` with its first CODE section replaced by `words` (re-framed)."""
    b = load_binary(data)
    sections = list(b.sections)
    out = bytearray(data[:sections[0].offset])
    table = struct.unpack_from("<Q", data, 40)[0]
    for k, s in enumerate(sections):
        body = words.tobytes() if k == 0 else data[s.offset:s.offset + s.size]
        out += bytes((-len(out)) % 64)
        struct.pack_into("<QQ", out, table + 64 * k + 8, len(out), len(body))
        out += body
    out += bytes((-len(out)) % 64)
    struct.pack_into("<Q", out, 16, len(out) + 8)
    out += b"NCRC" + bytes(4)
    return seal(out)


def test_100k_instructions_load_quickly() -> None:
    data = (VECTORS / "matmul_relu.nova").read_bytes()
    words = load_binary(data).programs[0].words
    # 100k instructions: the straight-line body repeated, one HALT at the end.
    body = words[:-1]
    reps = 100_000 // len(body) + 1
    big = np.concatenate([np.tile(body, reps), words[-1:]])
    blob = _with_code(data, big)
    start = time.perf_counter()
    b = load_binary(blob)
    load_s = time.perf_counter() - start
    assert len(b.programs[0]) == len(big) > 100_000
    # A generous bound, to catch a per-instruction Python loop in validation
    # (the vectorised checks take a few milliseconds).
    assert load_s < 5.0
    # The debug section still refers to instructions that exist.
    assert max(b.programs[0].debug) < len(big)
    assert len(b.programs[0].instructions) == len(big)
