"""Timing-only mode: shapes and costs, no numbers and no memory, the functional mode's times."""

import tracemalloc

import numpy as np
import pytest
import torch

import nova
from asm import Asm, target
from nova import models
from nova.sim import Simulator
from test_collectives import coll_program, data
from test_matmul import tiled_matmul_bias


def same_times(a, b):
    assert a.time_ns == b.time_ns
    assert [(e.chip, e.engine, e.instructions, e.busy_ns) for e in a.engines] == \
        [(e.chip, e.engine, e.instructions, e.busy_ns) for e in b.engines]
    assert a.instructions == b.instructions
    assert a.memory_bytes == b.memory_bytes
    assert a.link_bytes == b.link_bytes
    assert a.bounds == b.bounds
    assert a.roofline_ns == b.roofline_ns
    assert [(s.chip, s.pc, s.count, s.busy_ns) for s in a.instr_stats] == \
        [(s.chip, s.pc, s.count, s.busy_ns) for s in b.instr_stats]


def test_tiled_matmul_same_times_without_inputs():
    prog = tiled_matmul_bias(16, 24, 16, 8).program(target("tiny", chips=1))
    rng = np.random.default_rng(0)
    host = {"a": rng.standard_normal((16, 24)).astype(np.float32),
            "b": rng.standard_normal((24, 16)).astype(np.float32),
            "bias": rng.standard_normal(16).astype(np.float32)}
    _, full = Simulator(prog).run(host)
    sim = Simulator(prog, functional=False)
    outputs, timing = sim.run()  # inputs may be left out
    assert outputs == {}
    assert timing.timing_only and not full.timing_only
    assert all(ch.mem is None for ch in sim.machine.chips)
    same_times(full, timing)


@pytest.fixture(scope="module")
def gpt_block():
    torch.manual_seed(0)
    cfg = models.GPTConfig(d_model=64, n_heads=2, seq_len=16)
    model = models.GPTBlock(cfg).eval()
    x = torch.randn(1, cfg.seq_len, cfg.d_model)
    return model, x, nova.compile(model, x)


def test_small_model_same_times(gpt_block):
    model, x, program = gpt_block
    program(x)
    full = program.report
    assert program.run(timing_only=True) == []
    same_times(full, program.report)
    assert program.report.timing_only
    assert program.run(x, timing_only=True) == []  # inputs given: checked, not used
    same_times(full, program.report)


def test_multi_chip_collectives_same_times():
    chips = 4
    g = [list(range(chips))]
    prog = coll_program(lambda s, ti, to: s.all_reduce("sum", 1, ti, 2, to, g, signal=[0]),
                        (8, 8), (8, 8), chips, "ring")
    xs = data(chips, (8, 8))
    _, full = Simulator(prog).run(per_chip={c: {"x": xs[c]} for c in range(chips)})
    _, timing = Simulator(prog, functional=False).run()
    assert full.link_bytes and full.collectives
    same_times(full, timing)


def test_tensor_parallel_program_same_times():
    from nova.parallel import Mesh, compile_parallel, megatron_mlp_plan

    class MLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = torch.nn.Linear(32, 64)
            self.fc2 = torch.nn.Linear(64, 32)

        def forward(self, x):
            return self.fc2(torch.nn.functional.gelu(self.fc1(x)))

    torch.manual_seed(0)
    x = torch.randn(8, 32)
    program = compile_parallel(MLP().eval(), x, mesh=Mesh((2,), ("tp",)), target="nova-t1",
                               plan=megatron_mlp_plan("fc1", "fc2", axis="tp"))
    program(x)
    full = program.report
    assert len(full.bounds) == 2 and full.collectives
    _, timing = Simulator(program.binary, functional=False).run()
    same_times(full, timing)


def test_gather_says_its_timing_depends_on_the_data():
    from test_indexed_dma import gather

    table = np.arange(64, dtype=np.float32).reshape(8, 8)
    idx = np.array([[0, 1, 2, 3], [5, 4, 7, 6]], dtype=np.int64)
    _, full = gather(table, idx)
    _, timing = gather(table, idx, functional=False)
    for rep in (full, timing):
        assert rep.data_dependent and "dma_gather" in rep.data_dependent[0]
    assert "data-dependent" in timing.summary()
    assert timing.memory_bytes == full.memory_bytes
    # No positions in timing-only mode: one run per index row (2), the data has 4.
    assert timing.time_ns < full.time_ns


def test_hbm_larger_than_the_machine_is_never_allocated():
    tg = target("tiny", chips=2, hbm_bytes=1 << 44, sram_bytes=1 << 36, acc_bytes=1 << 32)
    s = Asm()
    n = 1 << 26  # a 256 MiB f32 tile, moved HBM -> SRAM -> HBM
    s.input(0, "x", "f32", [n], 0)
    s.output(1, "y", "f32", [n], 4 * n)
    h, sr = s.tile("hbm", "f32", [n]), s.tile("sram", "f32", [n])
    s.li(1, 4 * n)
    s.dma(0, h, 0, sr, signal=[0])
    s.vunary("exp", 0, sr, 0, sr, wait=[0], signal=[1])
    s.dma(0, sr, 1, h, wait=[1], signal=[2])
    s.sem_wait([2])
    prog = s.program(tg)
    tracemalloc.start()
    try:
        sim = Simulator(prog, functional=False)
        _, rep = sim.run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"timing-only run allocated {peak} bytes"
    assert all(ch.mem is None for ch in sim.machine.chips)
    assert rep.memory_bytes["hbm_read"] == 2 * 4 * n
    assert rep.time_ns > 2 * 4 * n / tg.hbm_gbps
