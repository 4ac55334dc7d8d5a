"""Exceptions raised by the simulator (every one a :class:`SimulationError`, a
:class:`nova.errors.NovaRuntimeError`)."""

from __future__ import annotations

from nova.binary.errors import TargetError
from nova.errors import NovaRuntimeError

__all__ = ["AssertionFailedError", "BudgetExceededError", "CollectiveMismatchError", "DeadlockError",
           "EngineFaultError", "HostMemoryError", "InputError", "MemoryFaultError", "ProgramError",
           "ScalarFaultError", "SimulationError", "TargetError"]


class SimulationError(NovaRuntimeError):
    """A program cannot be simulated, or faulted while running."""


class ProgramError(SimulationError):
    """The program (decoded binary) is malformed for the simulator."""


class InputError(SimulationError):
    """An input given to :meth:`Simulator.run` does not match the I/O table."""


class MemoryFaultError(SimulationError):
    """An access falls outside a memory space's capacity (or below address 0)."""


class ScalarFaultError(SimulationError):
    """A run-time fault of the sequencer: zero divisor, bad loop step, bad peer, overflow."""


class EngineFaultError(SimulationError):
    """A run-time fault of an engine instruction: integer division by zero, a shift amount
    or a float -> int conversion out of range, an indexed-DMA position out of bounds.

    ``chip`` and ``instruction`` say where; ``location`` is the instruction's DEBUG entry
    (the model's source line) or ``None``.
    """

    def __init__(self, message: str, chip: int | None = None, instruction: int | None = None,
                 location: str | None = None) -> None:
        super().__init__(message)
        self.chip, self.instruction, self.location = chip, instruction, location


class AssertionFailedError(EngineFaultError):
    """A ``vassert`` found a zero element; ``location`` holds its DEBUG text
    (``file:line:col: message``)."""


class DeadlockError(SimulationError):
    """Every sequencer and queue that has work left is blocked forever."""


class CollectiveMismatchError(DeadlockError):
    """Chips of one replica group issued different collectives (or never issued one)."""


class BudgetExceededError(SimulationError):
    """A run went past its watchdog budget of dynamic instructions or simulated time
    (a loop that does not end, or one far longer than any real model's).

    ``budget`` names the budget (``"instructions"`` or ``"time"``), ``limit`` its value
    (instructions per chip, or simulated seconds); ``chip``, ``instruction`` and
    ``location`` say which loop was running (the ``loop`` instruction and its DEBUG
    entry, the model's source line, or ``None``).
    """

    def __init__(self, message: str, budget: str, limit: float, chip: int | None = None,
                 instruction: int | None = None, location: str | None = None) -> None:
        super().__init__(message)
        self.budget, self.limit = budget, limit
        self.chip, self.instruction, self.location = chip, instruction, location


class HostMemoryError(SimulationError):
    """A functional run would need more host memory than the limit
    (``NOVA_SIM_HOST_MEMORY``, default half the physical memory); raised before
    the memory is allocated."""


class CollectiveRequestError(SimulationError):
    """A collective priced without a program (:mod:`nova.sim.collective_time`) is
    malformed: an unknown kind, members outside the target, negative bytes."""
