"""The simulator watchdog (issue 17, finding 2): a legal loop of 10^12 trips stops with
an error naming the loop, its source line and the budget, in both simulation modes."""

import pytest

from asm import Asm, target
from nova.knobs import KnobError
from nova.sim import BudgetExceededError, Simulator
from nova.sim.watchdog import DEFAULT_MAX_INSTRUCTIONS, DEFAULT_MAX_TIME_S, Budget

TRIPS = 10**12


def scalar_loop() -> Asm:
    """r2 += 1, 10^12 times: legal, and endless in practice."""
    s = Asm()
    s.li(2, 0)
    s.li(3, 1)
    with s.loop(1, 0, TRIPS):
        s.at("model.py:7:5")
        s.salu("add", 2, 2, 3)
    return s


def engine_loop() -> Asm:
    """A vector fill per trip, waited on: every trip goes through the event loop."""
    s = Asm()
    t = s.tile("sram", "f32", (1, 8))
    with s.loop(1, 0, TRIPS):
        s.at("model.py:9:5")
        s.vfill(1.0, 0, t, signal=[0])
        s.sem_wait([0])
    return s


@pytest.mark.parametrize("functional", [True, False], ids=["functional", "timing-only"])
@pytest.mark.parametrize("build", [scalar_loop, engine_loop])
def test_endless_loop_stops_at_the_instruction_budget(build, functional):
    sim = Simulator(build().program(target("tiny", chips=1)), functional=functional,
                    max_instructions=20_000)
    with pytest.raises(BudgetExceededError) as info:
        sim.run()
    error = info.value
    message = str(error)
    assert "budget of 20000 instructions" in message
    assert "loop at instruction" in message and "model.py:" in message
    assert "max_instructions=" in message and "NOVA_SIM_MAX_INSTRUCTIONS" in message
    assert (error.budget, error.limit, error.chip) == ("instructions", 20_000, 0)
    assert error.location.startswith("model.py:")
    # Stopped within one loop body of the budget.
    assert 20_000 < sim_count(sim, message) <= 20_000 + 4


def sim_count(sim, message: str) -> int:
    return int(message.split("(")[1].split(" executed")[0])


@pytest.mark.parametrize("functional", [True, False], ids=["functional", "timing-only"])
@pytest.mark.parametrize("build", [scalar_loop, engine_loop])
def test_endless_loop_stops_at_the_time_budget(build, functional):
    sim = Simulator(build().program(target("tiny", chips=1)), functional=functional,
                    max_time_s=2e-5)
    with pytest.raises(BudgetExceededError, match=r"budget of 2e-05 simulated seconds .* loop at "
                                                  r"instruction \d+ \(model\.py:\d+:5\).*max_time_s=") as info:
        sim.run()
    assert info.value.budget == "time"


def test_a_run_within_its_budgets_is_unchanged():
    s = Asm()
    s.li(2, 0)
    s.li(3, 1)
    with s.loop(1, 0, 1000):
        s.salu("add", 2, 2, 3)
    sim = Simulator(s.program(target("tiny", chips=1)), max_instructions=2005)
    sim.run()
    assert sim.machine.chips[0].regs[2] == 1000
    # 2 li + 1000 x (salu, endloop) + loop + halt.
    assert sim.machine.chips[0].executed == 2004


def test_the_budget_counts_every_chip_and_each_run_afresh():
    s = Asm()
    t = s.tile("sram", "f32", (1, 8))
    with s.loop(1, 0, 100):
        s.vfill(1.0, 0, t, signal=[0])
        s.sem_wait([0])
    sim = Simulator(s.program(target("tiny", chips=2)), max_instructions=400)
    for _ in range(2):
        sim.run()
        assert [ch.executed for ch in sim.machine.chips] == [302, 302]


def test_defaults_and_knobs(monkeypatch):
    prog = scalar_loop().program(target("tiny", chips=1))
    assert Simulator(prog).budget == Budget(DEFAULT_MAX_INSTRUCTIONS, DEFAULT_MAX_TIME_S)
    assert DEFAULT_MAX_INSTRUCTIONS >= 10**9
    monkeypatch.setenv("NOVA_SIM_MAX_INSTRUCTIONS", "1e4")
    monkeypatch.setenv("NOVA_SIM_MAX_TIME_S", "0.5")
    assert Simulator(prog).budget == Budget(10_000, 0.5)
    # An explicit value wins over the knob.
    assert Simulator(prog, max_instructions=7).budget.max_instructions == 7
    with pytest.raises(BudgetExceededError, match="budget of 10000 instructions"):
        Simulator(prog).run()
    monkeypatch.setenv("NOVA_SIM_MAX_INSTRUCTIONS", "lots")
    with pytest.raises(KnobError, match="NOVA_SIM_MAX_INSTRUCTIONS='lots'"):
        Simulator(prog)


@pytest.mark.parametrize("kwargs", [{"max_instructions": 0}, {"max_instructions": 1.5},
                                    {"max_time_s": -1.0}, {"max_time_s": float("inf")}])
def test_bad_budgets_are_refused(kwargs):
    with pytest.raises(ValueError, match="must be a positive"):
        Simulator(scalar_loop().program(target("tiny", chips=1)), **kwargs)


def test_straight_line_code_past_the_budget_is_stopped_too():
    s = Asm()
    for i in range(50):
        s.li(1, i)
        s.at(f"model.py:{i + 1}:1")
    with pytest.raises(BudgetExceededError, match=r"budget of 20 instructions per chip \(51 executed\) "
                                                  r"in instruction 50 \(halt"):
        Simulator(s.program(target("tiny", chips=1)), max_instructions=20).run()


def test_a_compiled_model_past_its_budget_names_the_models_line(monkeypatch):
    import torch

    import nova

    class Mlp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(64, 64)

        def forward(self, x):
            return torch.relu(self.fc(x))

    x = torch.randn(8, 64)
    program = nova.compile(Mlp(), x)
    monkeypatch.setenv("NOVA_SIM_MAX_INSTRUCTIONS", "10")
    with pytest.raises(BudgetExceededError, match="budget of 10 instructions") as info:
        program(x)
    assert __file__ in str(info.value)  # the DEBUG entry's call site: the model's forward
    monkeypatch.setenv("NOVA_SIM_MAX_INSTRUCTIONS", "100000")
    monkeypatch.setenv("NOVA_SIM_MAX_TIME_S", "1e-8")
    with pytest.raises(BudgetExceededError, match="budget of 1e-08 simulated seconds"):
        program.run(x, timing_only=True)
