"""The compiled timing-only loop (nova.sim._fast_timing) gives the Python loop's
report bit for bit, takes the runs it models and hands every other run (and every
error) to the Python loop."""

import numpy as np
import pytest
import torch

import nova
from asm import Asm, target
from nova import models
from nova.parallel import Mesh, compile_parallel, data_parallel_plan
from nova.sim import BudgetExceededError, DeadlockError, Simulator, fast_timing
from test_collectives import coll_program
from test_timing_only import same_times


def test_the_extension_is_built():
    # An installed Nova carries it (ext/CMakeLists.txt); without it every
    # test below would compare the Python loop with itself.
    assert fast_timing.available()


def _both(monkeypatch, sim_factory, warm=None):
    """The report of a timing-only run on each loop (``warm``: a run first, which
    walks and caches the sequencer streams), and whether the compiled loop took it."""
    took = []
    real = fast_timing.run

    def spy(m):
        ok = real(m)
        took.append(ok)
        return ok

    monkeypatch.setattr("nova.sim.engines.fast_timing.run", spy)
    sim = sim_factory()
    if warm:
        warm(sim)
    took.clear()
    _, fast = sim.run()
    monkeypatch.setenv("NOVA_SIM_FAST", "0")
    _, slow = sim.run()
    monkeypatch.delenv("NOVA_SIM_FAST")
    return fast, slow, took[0]


def test_gpt_forward_identical_to_the_python_loop(monkeypatch):
    torch.manual_seed(0)
    cfg = models.GPTConfig(d_model=64, n_heads=2, n_layers=2, seq_len=32)
    model = models.GPT(cfg).eval()
    x = torch.randn(2, cfg.seq_len, cfg.d_model)
    program = nova.compile(model, x)
    program(x)
    full = program.report
    fast, slow, took = _both(monkeypatch, lambda: Simulator(program.binary, functional=False),
                             warm=lambda s: s.run())
    assert took
    same_times(fast, slow)
    same_times(full, fast)
    # A program of some size, not a toy (exactly 1,000 dynamic instructions
    # since the attention heads' split became one DMA).
    assert fast.time_ns == full.time_ns and fast.instructions >= 500


def test_eight_chips_without_collectives_go_compiled(monkeypatch):
    torch.manual_seed(0)
    cfg = models.GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=16)
    model = models.GPT(cfg).eval()
    x = torch.randn(8, cfg.seq_len, cfg.d_model)
    program = compile_parallel(model, x, mesh=Mesh((8,), ("dp",)), plan=data_parallel_plan("dp"))
    program(x)
    full = program.report
    program.run(timing_only=True)
    fast = program.report
    same_times(full, fast)
    fast, slow, took = _both(monkeypatch, lambda: Simulator(program.binary, functional=False),
                             warm=lambda s: s.run())
    assert took
    same_times(fast, slow)
    assert len({e.chip for e in fast.engines}) == 8


def test_collectives_fall_back_to_the_python_loop(monkeypatch):
    prog = coll_program(lambda s, a, b: s.all_reduce("sum", 1, a, 2, b, [[0, 1, 2, 3]], signal=[0]),
                        (4, 8), (4, 8), 4, "ring")
    fast, slow, took = _both(monkeypatch, lambda: Simulator(prog, functional=False),
                             warm=lambda s: s.run())
    assert not took
    same_times(fast, slow)


def test_budget_and_deadlock_errors_are_the_python_loops():
    s = Asm()
    t = s.tile("sram", "f32", (1, 8))
    with s.loop(1, 0, 10**6):
        s.vfill(1.0, 0, t, signal=[0])
        s.sem_wait([0])
    sim = Simulator(s.program(target("tiny", chips=1)), functional=False, max_time_s=1e-6)
    with pytest.raises(BudgetExceededError, match="simulated"):
        sim.run()
    with pytest.raises(BudgetExceededError, match="simulated"):
        sim.run()  # the stream is cached now: the compiled loop declines, Python raises
    s = Asm()
    t = s.tile("sram", "f32", [8])
    s.vfill(1.0, 0, t, wait=[5])  # nobody signals s5
    sim = Simulator(s.program(target("tiny", chips=1)), functional=False)
    for _ in range(2):
        with pytest.raises(DeadlockError, match="waits for semaphores s5=0"):
            sim.run()


def test_dma_contention_ties_break_alike(monkeypatch):
    """Two queues start equal copies at once: their flows share the HBM port and
    finish at the same time, the case where the re-rating order decides."""
    s = Asm()
    n = 1024
    s.input(0, "x", "f32", [4 * n], 0)
    h = s.tile("hbm", "f32", [n])
    t = s.tile("sram", "f32", [n])
    for q in range(2):
        s.li(1, q * 4 * n)
        s.li(2, q * 4 * n)
        s.dma(1, h, 2, t, queue=q, signal=[q])
    for q in range(2):
        s.sem_wait([q])
    prog = s.program(target("tiny", chips=1))
    x = np.zeros(4 * n, dtype=np.float32)
    _, full = Simulator(prog).run({0: x})
    fast, slow, took = _both(monkeypatch, lambda: Simulator(prog, functional=False),
                             warm=lambda s: s.run())
    assert took
    same_times(fast, slow)
    same_times(full, fast)


def test_token_ids_gather_goes_compiled(monkeypatch):
    """An embedding lookup (dma_gather) and its scatter-free model run compiled,
    priced as the Python timing-only loop prices them (one run per index row)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(64, 32), torch.nn.Linear(32, 16)).eval()
    ids = torch.randint(0, 64, (2, 8))
    program = nova.compile(model, ids)
    fast, slow, took = _both(monkeypatch, lambda: Simulator(program.binary, functional=False))
    assert took
    same_times(fast, slow)
    assert fast.data_dependent  # the report still says the gather's cost depends on the data


def test_hugging_face_gpt2_identical_to_the_python_loop(monkeypatch):
    """A model not written for Nova: HF GPT-2 from token ids (gathers, masks,
    its own attention) gives the same report on both loops."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128,
                                       n_positions=32, use_cache=False)).eval()
    ids = torch.randint(0, 128, (1, 32))
    program = nova.compile(model, ids)
    program(ids)
    full = program.report
    fast, slow, took = _both(monkeypatch, lambda: Simulator(program.binary, functional=False))
    assert took
    same_times(fast, slow)
    # The token and position lookups are gathers, priced in timing-only mode as one
    # run per index row (the report says so): close to the functional run, not equal.
    assert fast.data_dependent
    assert fast.time_ns == pytest.approx(full.time_ns, rel=0.01)
