"""dma_gather / dma_scatter (docs/isa.md 2.6): semantics against numpy / torch, bounds
faults, and the run-counting cost DMA_SETUP + R * RUN_SETUP + B / bw."""

import numpy as np
import pytest
import torch

from asm import Asm, target
from nova.sim import EngineFaultError, Simulator
from nova.sim.engines_dma import count_runs

TABLE, IDX, OUT = 0, 4096, 8192  # HBM addresses; SRAM: indices at 0, values at 1024


def gather(table, idx, tdtype="f32", idtype="i64", table_strides=None, table_shape=None, functional=True):
    """dst[e] = table.flat[idx[e]], table in HBM, indices staged to SRAM, dst in HBM."""
    tg = target("tiny", chips=1)
    s = Asm()
    tshape = table_shape or table.shape
    s.input(0, "table", tdtype, table.shape, TABLE)
    s.input(1, "idx", idtype, idx.shape, IDX)
    s.output(2, "y", tdtype, idx.shape, OUT)
    s.li(1, TABLE); s.li(2, IDX); s.li(3, 0); s.li(4, OUT)
    ti = s.tile("sram", idtype, idx.shape)
    s.dma(2, s.tile("hbm", idtype, idx.shape), 3, ti, signal=[0])
    s.dma_gather(1, s.tile("hbm", tdtype, tshape, table_strides), 3, ti, 4, s.tile("hbm", tdtype, idx.shape),
                 queue=1, wait=[0], signal=[1])
    s.at("model.py:5:9")
    s.sem_wait([1])
    return Simulator(s.program(tg), functional=functional, trace=True).run({"table": table, "idx": idx})


def test_gather_embedding_rows():
    table = np.arange(10 * 4, dtype=np.float32).reshape(10, 4)
    tokens = np.array([3, 0, 9, 3])
    idx = (tokens[:, None] * 4 + np.arange(4)).astype(np.int64)  # flat positions of whole rows
    out, _ = gather(table, idx)
    np.testing.assert_array_equal(out["y"], torch.nn.functional.embedding(torch.from_numpy(tokens),
                                                                          torch.from_numpy(table)).numpy())


def test_gather_numbers_a_strided_source_row_major():
    table = np.arange(64, dtype=np.float32).reshape(8, 8)
    # the descriptor views columns 0, 2, 4, 6 of every row: a [8, 4] tile with strides [8, 2]
    view = table[:, ::2]
    idx = np.array([[0, 5, 31], [30, 1, 4]], np.int32)
    out, _ = gather(table, idx, idtype="i32", table_shape=(8, 4), table_strides=(8, 2))
    np.testing.assert_array_equal(out["y"], view.reshape(-1)[idx])


def test_gather_bf16_and_i64_data_moves_bits():
    table = np.array([1.5, -2.25, 3.0e38, 7.0], np.float32)
    idx = np.array([3, 3, 0, 2], np.int64)
    out, _ = gather(table, idx, tdtype="bf16")
    np.testing.assert_array_equal(out["y"], torch.from_numpy(table).to(torch.bfloat16).float().numpy()[idx])
    t64 = np.array([2**62, -5, 7], np.int64)
    out, _ = gather(t64, np.array([2, 0], np.int64), tdtype="i64")
    assert out["y"].tolist() == [7, 2**62]


@pytest.mark.parametrize("bad", [-1, 12])
def test_gather_position_out_of_bounds_is_a_fault(bad):
    table = np.zeros((3, 4), np.float32)
    idx = np.array([0, 11, bad, 1], np.int64)
    with pytest.raises(EngineFaultError, match=rf"\(dma_gather at model.py:5:9\): index {bad} at position \[2\] "
                                               rf"is outside \[0, 12\)"):
        gather(table, idx)


def scatter(dst, src, idx, accumulate, dtype="f32", idtype="i64"):
    """dst.flat[idx[e]] (+)= src[e]; src and indices staged to SRAM, dst in HBM."""
    tg = target("tiny", chips=1)
    s = Asm()
    s.input(0, "dst", dtype, dst.shape, TABLE)
    s.input(1, "idx", idtype, idx.shape, IDX)
    s.input(2, "src", dtype, src.shape, OUT)
    s.output(3, "y", dtype, dst.shape, TABLE)
    s.li(1, TABLE); s.li(2, IDX); s.li(3, 0); s.li(5, OUT); s.li(6, 1024)
    ti, ts = s.tile("sram", idtype, idx.shape), s.tile("sram", dtype, src.shape)
    s.dma(2, s.tile("hbm", idtype, idx.shape), 3, ti, signal=[0])
    s.dma(5, s.tile("hbm", dtype, src.shape), 6, ts, signal=[0])
    s.sem_wait([0]); s.sem_wait([0])
    s.dma_scatter(6, ts, 3, ti, 1, s.tile("hbm", dtype, dst.shape), accumulate=accumulate, signal=[1])
    s.sem_wait([1])
    return Simulator(s.program(tg), trace=True).run({"dst": dst, "idx": idx, "src": src})


def test_scatter_later_element_wins():
    dst = np.full(8, -1.0, np.float32)
    idx = np.array([[2, 5, 2], [7, 5, 2]], np.int64)
    src = np.arange(6, dtype=np.float32).reshape(2, 3)
    out, _ = scatter(dst, src, idx, False)
    ref = dst.copy()
    for e in range(6):  # row-major order, the later one wins
        ref[idx.reshape(-1)[e]] = src.reshape(-1)[e]
    np.testing.assert_array_equal(out["y"], ref)
    assert out["y"][2] == 5.0 and out["y"][5] == 4.0


@pytest.mark.parametrize("dtype, idtype", [("f32", "i64"), ("i32", "i32"), ("bf16", "i64")])
def test_scatter_accumulate_adds_duplicates(dtype, idtype):
    dst = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([0, 5, 5, 11, 0, 5], np.int64)
    src = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32)
    if dtype == "i32":
        dst, src = dst.astype(np.int32), src.astype(np.int32)
    out, _ = scatter(dst, src, idx.astype(idtype.replace("i", "int")), True, dtype, idtype)
    ref = dst.reshape(-1).copy()
    np.add.at(ref, idx, src)
    t = torch.from_numpy(dst.reshape(-1).copy()).index_put_((torch.from_numpy(idx),), torch.from_numpy(src),
                                                           accumulate=True)
    np.testing.assert_array_equal(ref, t.numpy())
    np.testing.assert_array_equal(out["y"].reshape(-1), ref)


def test_scatter_position_out_of_bounds_is_a_fault():
    with pytest.raises(EngineFaultError, match=r"index 8 at position \[1\] is outside \[0, 8\)"):
        scatter(np.zeros(8, np.float32), np.ones(2, np.float32), np.array([0, 8], np.int64), True)


def test_count_runs():
    assert count_runs(np.array([0, 1, 2, 3, 10, 11, 5, 6, 7])) == 3
    assert count_runs(np.array([4, 4, 4])) == 3
    assert count_runs(np.array([9])) == 1


def test_gather_cost_counts_runs():
    tg = target("tiny", chips=1)
    table = np.arange(64, dtype=np.float32)
    idx = np.array([0, 1, 2, 3, 10, 11, 5, 6, 7, 40], np.int64)  # runs: 0-3, 10-11, 5-7, 40
    _, rep = gather(table, idx)
    # hbm -> hbm: the read and the write both cross the chip's HBM port (2 b bytes).
    b = idx.size * 4 * 2
    expect = 64 * tg.cycle_ns + 4 * 4 * tg.cycle_ns + b / tg.hbm_gbps
    assert rep.busy("dma1") == pytest.approx(expect)
    # fully contiguous: one run
    _, rep = gather(table, np.arange(10, dtype=np.int64))
    assert rep.busy("dma1") == pytest.approx(64 * tg.cycle_ns + 4 * tg.cycle_ns + b / tg.hbm_gbps)


def test_accumulating_scatter_moves_twice_the_bytes():
    tg = target("tiny", chips=1)
    idx = np.array([[0, 1, 2, 3], [9, 8, 7, 6]], np.int64)  # runs: 0-3, 9, 8, 7, 6
    src = np.ones((2, 4), np.float32)
    sim_runs = 5
    for accumulate, factor in ((False, 1), (True, 2)):
        _, rep = scatter(np.zeros(16, np.float32), src, idx, accumulate)
        expect = 64 * tg.cycle_ns + sim_runs * 4 * tg.cycle_ns + factor * src.nbytes / tg.hbm_gbps
        dma0 = rep.busy("dma0")
        # dma0 ran the two staging copies (setup + bytes each) and then the scatter
        staging = 2 * 64 * tg.cycle_ns + (idx.nbytes + src.nbytes) / tg.hbm_gbps
        assert dma0 == pytest.approx(staging + expect)


def test_indexed_dma_timing_only_mode_assumes_contiguous_rows():
    tg = target("tiny", chips=1)
    table = np.zeros((16, 4), np.float32)
    idx = np.zeros((3, 4), np.int64)
    _, rep = gather(table, idx, functional=False)
    # hbm -> hbm: read and write both on the HBM port (2 x 48 bytes).
    assert rep.busy("dma1") == pytest.approx(64 * tg.cycle_ns + 3 * 4 * tg.cycle_ns + 96 / tg.hbm_gbps)
