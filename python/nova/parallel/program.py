"""``ParallelProgram``: the multi-chip program is the one program class,
:class:`nova.runtime.program.CompiledProgram`, with its mesh split as data (a
:class:`~nova.runtime.mesh.MeshLayout` that :func:`nova.parallel.compile_parallel`
computes from the plan). Kept as a name for the code that imports it; archives
the former class wrote (``nova-parallel-program/1``) load through
:mod:`nova.runtime.program_archive`."""

from nova.runtime.program import CompiledProgram as ParallelProgram

__all__ = ["ParallelProgram"]
