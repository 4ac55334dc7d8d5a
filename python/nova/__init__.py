"""Nova: an MLIR-based compiler and simulator for a family of AI accelerators.

The compiler proper is the C++ tool ``nova-opt`` (shipped in ``nova/bin``);
Python drives it as a subprocess::

    import nova
    text = nova.run_opt(source, ["--nova-attach-target=target=nova-t1"])
"""

from nova.compiler.driver import run_opt
from nova.compiler.errors import NovaCompileError, NovaError

__version__ = "0.1.0"

__all__ = ["NovaCompileError", "NovaError", "run_opt"]
