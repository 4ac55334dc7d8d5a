import sys
from pathlib import Path

# The simulator tests' tiny assembler (test/python/sim/asm.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim"))
