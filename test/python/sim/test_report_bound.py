"""The bound from the work: matrix FLOPs at the dtype's peak, vector element-ops at the
ISA's per-kind cost, compulsory HBM bytes (the I/O table moved once), each reported."""

import numpy as np
import pytest

from asm import Asm, target
from nova.sim import Simulator
from test_matmul import tiled_matmul_bias


def run_tiled(dtype="f32", M=16, K=24, N=16, T=8, functional=True):
    tg = target("tiny", chips=1)
    prog = tiled_matmul_bias(M, K, N, T, dtype).program(tg)
    rng = np.random.default_rng(0)
    host = {"a": rng.standard_normal((M, K)).astype(np.float32),
            "b": rng.standard_normal((K, N)).astype(np.float32),
            "bias": rng.standard_normal(N).astype(np.float32)}
    _, rep = Simulator(prog, functional=functional).run(host)
    return tg, rep


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_matrix_term_counts_the_work_at_the_dtype_peak(dtype):
    M, K, N = 16, 24, 16
    tg, rep = run_tiled(dtype, M, K, N)
    b = rep.bound(0)
    assert b.matrix_flops == 2 * M * K * N  # exact tiles: every loop trip, no padding
    peak = tg.peak_flops / (4 if dtype == "f32" else 1)
    assert b.matrix_ns == pytest.approx(2 * M * K * N / peak * 1e9)


def test_vector_term_uses_the_per_kind_cost():
    M, K, N = 16, 24, 16
    tg, rep = run_tiled("f32", M, K, N)
    b = rep.bound(0)
    # per output tile: vcopy of the bias row (8 elements) and the bias add (8x8), c = 1
    tiles = (M // 8) * (N // 8)
    assert b.vector_ops == tiles * (8 + 64)
    assert b.vector_ns == pytest.approx(tiles * (8 + 64) / tg.vector_lanes * tg.cycle_ns)

    s = Asm()
    x = s.tile("sram", "f32", [4, 8])
    s.vunary("exp", 0, x, 0, x)        # transcendental: c = 4
    s.vtranspose(0, x, 0, s.tile("sram", "f32", [8, 4]), [1, 0])  # c = 2
    _, rep = Simulator(s.program(tg), functional=False).run()
    assert rep.bound(0).vector_ns == pytest.approx((32 * 4 + 32 * 2) / tg.vector_lanes * tg.cycle_ns)


def test_hbm_term_is_compulsory_bytes_and_actual_traffic_is_beside_it():
    M, K, N = 16, 24, 16
    tg, rep = run_tiled("f32", M, K, N)
    b = rep.bound(0)
    compulsory = 4 * (M * K + K * N + N + M * N)
    assert b.compulsory_bytes == compulsory
    assert b.hbm_ns == pytest.approx(compulsory / tg.hbm_gbps)
    # The tiled program re-reads A and B tiles: its traffic exceeds the compulsory bytes,
    # and that redundancy does not raise the bound it is judged against.
    assert b.hbm_bytes == rep.memory_bytes["hbm_read"] + rep.memory_bytes["hbm_write"]
    assert b.hbm_bytes > compulsory
    assert rep.roofline_ns == pytest.approx(max(b.matrix_ns, b.vector_ns, b.hbm_ns))
    assert b.limiter == "hbm"
    text = rep.summary()
    assert "bound" in text and "compulsory" in text and "matrix" in text


def test_matrix_and_vector_terms_do_not_add():
    tg = target("tiny", chips=1)
    s = Asm()
    a = s.tile("sram", "bf16", [8, 8])
    c = s.tile("acc", "f32", [8, 8])
    x = s.tile("sram", "f32", [8, 64])
    for _ in range(4):
        s.matmul(0, a, 0, a, 0, c)
    s.vunary("relu", 0, x, 0, x)
    _, rep = Simulator(s.program(tg), functional=False).run()
    b = rep.bound(0)
    assert b.matrix_ns > 0 and b.vector_ns > 0
    assert rep.roofline_ns == pytest.approx(max(b.matrix_ns, b.vector_ns))
    assert 0 < rep.roofline_fraction <= 1


def test_every_chip_has_a_bound_and_the_worst_is_the_roofline():
    tg = target("tiny", chips=2)
    s = Asm()
    t = s.tile("sram", "f32", [8, 8])
    s.chip_id(1)
    s.li(2, 0)
    s.salu("eq", 3, 1, 2)
    s.if_(3, lambda: s.vunary("exp", 0, t, 0, t))  # only chip 0 works
    _, rep = Simulator(s.program(tg), functional=False).run()
    assert [b.chip for b in rep.bounds] == [0, 1]
    assert rep.bound(0).vector_ns > rep.bound(1).vector_ns == 0
    assert rep.roofline_ns == rep.bound(0).bound_ns == rep.bound().bound_ns
