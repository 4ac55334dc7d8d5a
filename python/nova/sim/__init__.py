"""Nova's multi-chip simulator: functional (numpy) and timing model of ISA v2 binaries.

    from nova.sim import Simulator
    outputs, report = Simulator(load_binary("model.nova")).run({0: x})
"""

from .errors import (AssertionFailedError, BudgetExceededError, CollectiveMismatchError,
                     DeadlockError, EngineFaultError, HostMemoryError, InputError, MemoryFaultError, ProgramError,
                     ScalarFaultError, SimulationError, TargetError)
from .program import Constant, ChipCode, IOEntry, Instr, Program, TileDesc, program_from_binary
from .simulator import Simulator
from .stats import Report
from .target import Target, load_target, target_from_dict

__all__ = ["Simulator", "Report", "Target", "load_target", "target_from_dict", "Program", "ChipCode",
           "Instr", "TileDesc", "IOEntry", "Constant", "program_from_binary", "SimulationError",
           "TargetError", "ProgramError", "InputError", "MemoryFaultError", "ScalarFaultError",
           "DeadlockError", "CollectiveMismatchError", "EngineFaultError",
           "AssertionFailedError", "BudgetExceededError", "HostMemoryError"]
