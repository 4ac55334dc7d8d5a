"""The OpInfo conformance runner behind ``benchmarks/opinfo_coverage.py``.

``ops``: which OpInfos and dtypes, and their tolerances; ``sample``: one sample
as a module; ``compare``: Nova's outputs against eager's; ``run``: one sample
through torch-mlir's default lowering, Nova and the simulator, and its class;
``sweep``: the loop, its supervisor and the JSON results; ``report``: the
table, the causes and ``docs/coverage.md``.
"""
