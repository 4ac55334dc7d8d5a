import sys
from pathlib import Path

# The simulator tests' tiny assembler (test/python/sim/asm.py), and this
# folder's program generator (torch_programs.py) when pytest runs from the root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
