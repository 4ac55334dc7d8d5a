#!/usr/bin/env python3
"""Moved: the OpInfo sweep is benchmarks/opinfo_coverage.py (same options)."""

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "opinfo_coverage.py"
    sys.argv[0] = str(script)
    runpy.run_path(str(script), run_name="__main__")
