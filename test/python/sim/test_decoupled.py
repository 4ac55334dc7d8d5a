"""Decoupled functional runs (nova.sim.decoupled): times from the compiled loop,
data effects replayed in its start order. Reports are the Python loop's bit for
bit; outputs too with NOVA_SIM_FUSE=0, and within f32 rounding of torch with the
fused K chains; every run the shortcut does not model goes to the Python loop."""

import numpy as np
import pytest
import torch

import nova
from asm import Asm, target
from nova import models
from nova.sim import AssertionFailedError, BudgetExceededError, Simulator, decoupled, fast_timing
from test_timing_only import same_times
from test_v2_vector import vassert_program


@pytest.fixture
def took(monkeypatch):
    """Whether each functional run went decoupled (a list, in run order;
    "raised": it raised on the decoupled path)."""
    seen = []
    real = decoupled.run

    def spy(m):
        ok = "raised"
        try:
            ok = real(m)
            return ok
        finally:
            if m.functional:
                seen.append(ok)

    monkeypatch.setattr("nova.sim.engines.decoupled.run", spy)
    return seen


def test_the_extension_is_built_and_reports_the_start_order():
    assert fast_timing.available()
    # A build from before the start order was reported takes three arguments
    # (functional runs then fall back): rebuild the target nova_fast_timing.
    config = (1.0, 1e9, 1.0, 1.0, 1.0, 32, 1000, True)
    result = fast_timing._native.run(config, np.zeros(0), [], True)
    assert len(result) == 6 and result[5] == b""


def test_gpt_forward_same_report_and_outputs_as_the_python_loop(monkeypatch, took):
    torch.manual_seed(0)
    # d 256: the projections' K loops (2 and 8 chunks of 128) fuse.
    cfg = models.GPTConfig(d_model=256, n_heads=4, n_layers=1, seq_len=32)
    model = models.GPT(cfg).eval()
    x = torch.randn(1, cfg.seq_len, cfg.d_model)
    program = nova.compile(model, x)
    with torch.no_grad():
        ref = model(x)
    monkeypatch.setenv("NOVA_SIM_FAST", "0")
    slow = program(x)
    slow_report = program.report
    monkeypatch.delenv("NOVA_SIM_FAST")
    monkeypatch.setenv("NOVA_SIM_FUSE", "0")
    for _ in range(3):  # builds the schedule, fills the strip cache, uses it
        exact = program(x)
        same_times(program.report, slow_report)
        assert torch.equal(exact, slow)
    monkeypatch.delenv("NOVA_SIM_FUSE")
    for _ in range(3):
        fused = program(x)
        same_times(program.report, slow_report)
        torch.testing.assert_close(fused, ref, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(fused, slow, rtol=1e-5, atol=1e-5)
    assert took == [False] + [True] * 6
    # The compiler stages weight rows as they lie in HBM (no transposing
    # weight DMA is left to keep); the kept-strip cache is tested on a
    # transposing copy below.


def _transposer(writes_back: bool):
    """y = W^T through a transposing copy (W in HBM read k-major); with
    ``writes_back`` the program also stores W^T over W (the source is not constant)."""
    n = 64
    s = Asm()
    s.input(0, "w", "f32", [n, n], 0)
    s.output(1, "y", "f32", [n, n], n * n * 4)
    src = s.tile("hbm", "f32", [n, n], [1, n])  # W read transposed
    sram = s.tile("sram", "f32", [n, n])
    out = s.tile("hbm", "f32", [n, n])
    s.li(1, 0)
    s.li(2, n * n * 4)
    s.dma(1, src, 1, sram, signal=[0])
    s.dma(1, sram, 2, out, wait=[0], signal=[1])
    if writes_back:
        s.dma(1, sram, 1, out, wait=[1], signal=[2])
        s.sem_wait([2])
    else:
        s.sem_wait([1])
    return s.program(target("tiny", chips=1))


def test_cached_transposing_copies_follow_host_writes(took):
    prog = _transposer(False)
    sim = Simulator(prog, resident=True)
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((64, 64)).astype(np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(sim.run({"w": w1})[0]["y"], w1.T)
    assert sim._memories[0].replay.cached[0].value is not None
    np.testing.assert_array_equal(sim.run({})[0]["y"], w1.T)  # resident: nothing written
    w2 = rng.standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_array_equal(sim.run({"w": w2})[0]["y"], w2.T)  # the host wrote over it
    np.testing.assert_array_equal(sim.run({})[0]["y"], w2.T)
    assert all(took)


def test_a_source_the_program_writes_is_not_cached(took):
    sim = Simulator(_transposer(True), resident=True)
    w = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    expect = w
    for _ in range(5):  # W flips between W and W^T in HBM
        y = sim.run({"w": w} if expect is w else {})[0]["y"]
        expect = expect.T
        np.testing.assert_array_equal(y, expect)
    assert sim._memories[0].replay.cached == []
    assert all(took)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared by type and text
        return type(e), str(e)
    raise AssertionError("no error")


def test_a_fault_in_a_replayed_effect_is_the_python_loops(monkeypatch, took):
    cond = np.ones((2, 3), bool)
    cond[1, 0] = False
    prog = vassert_program("model.py:3:1: bad index")
    fast = _error(lambda: Simulator(prog).run({"c": cond}))
    assert took == ["raised"]
    monkeypatch.setenv("NOVA_SIM_FAST", "0")
    slow = _error(lambda: Simulator(prog).run({"c": cond}))
    assert fast == slow and fast[0] is AssertionFailedError and "bad index" in fast[1]


def test_budgets_traces_and_indexed_dma_fall_back(monkeypatch, took):
    cond = np.ones((2, 3), bool)
    prog = vassert_program("model.py:3:1: bad index")
    fast = _error(lambda: Simulator(prog, max_instructions=3).run({"c": cond}))
    monkeypatch.setenv("NOVA_SIM_FAST", "0")
    slow = _error(lambda: Simulator(prog, max_instructions=3).run({"c": cond}))
    monkeypatch.delenv("NOVA_SIM_FAST")
    assert fast == slow and fast[0] is BudgetExceededError
    took.clear()
    Simulator(prog, trace=True).run({"c": cond})
    assert took == [False]
    # An embedding gather: its time depends on the indices.
    torch.manual_seed(0)
    emb = torch.nn.Embedding(16, 8)
    ids = torch.tensor([[1, 2, 3, 2]])
    program = nova.compile(emb, ids)
    took.clear()
    y = program(ids)
    assert took == [False]
    torch.testing.assert_close(y, emb(ids))


def test_chips_without_collectives_replay_in_one_order(monkeypatch, took):
    from nova.parallel import Mesh, compile_parallel, data_parallel_plan

    torch.manual_seed(0)
    cfg = models.GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=16)
    model = models.GPT(cfg).eval()
    x = torch.randn(4, cfg.seq_len, cfg.d_model)
    program = compile_parallel(model, x, mesh=Mesh((4,), ("dp",)), plan=data_parallel_plan("dp"))
    monkeypatch.setenv("NOVA_SIM_FAST", "0")
    slow = program(x)
    slow_report = program.report
    monkeypatch.delenv("NOVA_SIM_FAST")
    took.clear()
    fast = program(x)
    assert took and all(took)
    same_times(program.report, slow_report)
    with torch.no_grad():
        torch.testing.assert_close(fast, model(x), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)


def test_erf_into_is_the_semantics_erf_bit_for_bit():
    from nova.sim.numerics import _erf, erf_into

    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38],
                       dtype=np.float32)
    raw = np.frombuffer(rng.integers(0, 2**32, 4000, dtype=np.uint32).tobytes(), np.float32)
    x = np.concatenate([rng.standard_normal(4000).astype(np.float32) * 4, raw, special])
    x = x[: x.size // 10 * 10].reshape(-1, 10)
    for view in (x, x[::2, 1:7]):  # contiguous and strided
        dst = np.full(view.shape, 7.0, dtype=np.float32)
        with np.errstate(all="ignore"):
            want = _erf(view)
            erf_into(view, dst)
        assert np.array_equal(dst.view(np.uint32), want.view(np.uint32))


def test_the_gpt_schedule_computes_matmuls_and_erf_into_their_destinations(monkeypatch):
    # The bit-for-bit comparison with the Python loop above covers these effects.
    from nova.sim import replay_plan
    from nova.sim.numerics import erf_into

    torch.manual_seed(0)
    cfg = models.GPTConfig(d_model=256, n_heads=4, n_layers=1, seq_len=32)
    model = models.GPT(cfg).eval()
    x = torch.randn(1, cfg.seq_len, cfg.d_model)
    program = nova.compile(model, x)
    monkeypatch.setenv("NOVA_SIM_FUSE", "0")
    program(x)
    program(x)
    s = program._simulator.machine.chips[0].mem.replay
    assert s is not None
    assert np.matmul in s.fns and erf_into in s.fns
    assert replay_plan._matmul_set not in s.fns  # every f32 2-D matmul set writes directly
