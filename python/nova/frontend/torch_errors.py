"""torch's own failures while exporting, importing or lowering a model, as Nova
errors that lead with the reason and end with the model's line of Python.

torch.export raises deep inside torch (``GuardOnDataDependentSymNode`` for an
``if`` on a tensor value, ``Unsupported``...) and torch-mlir's lowering reports
an op it cannot convert as a diagnostic on whatever op it met first (often a
``torch.constant.int`` operand); the user wants the op and the line.
"""

from __future__ import annotations

import contextlib
import io
import linecache
import logging
import re
import sys
import traceback
from typing import Iterator

from nova.compiler.diagnostics import is_user_file, frame_of_location
from nova.compiler.errors import OP_FALLBACK_HINT
from nova.errors import NovaError, SourceFrame
from nova.frontend.errors import NovaDataDependentError, NovaLoweringError, NovaTorchExportError


#: Installed packages that run the model but never hold its line.
_MACHINERY = ("/torch/", "/torch_mlir/", "/nova/", "/functorch/", "/sympy/", "/contextlib.py",
              "/importlib/")


def user_frame(error: BaseException) -> SourceFrame | None:
    """The innermost frame in the user's code of ``error``'s traceback (or of the
    exceptions it was raised from); for a model from an installed library
    (Hugging Face's ``modeling_*.py``) and no user frame, that library's innermost frame."""
    seen: set[int] = set()
    library: SourceFrame | None = None
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        tb = traceback.extract_tb(error.__traceback__)
        frames = [f for f in tb if is_user_file(f.filename)]
        if frames:
            return _source_frame(frames[-1])
        models = [f for f in tb if f.filename.endswith(".py") and "site-packages" in f.filename
                  and not any(part in f.filename for part in _MACHINERY)]
        if models and library is None:
            library = _source_frame(models[-1])
        error = error.__cause__ or error.__context__
    return library


def _source_frame(f: traceback.FrameSummary) -> SourceFrame:
    text = (f.line or linecache.getline(f.filename, f.lineno)).strip()
    return SourceFrame(f.filename, f.lineno, text)


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else '(no message)'}"


def _is_data_dependent(error: BaseException) -> bool:
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    return isinstance(error, GuardOnDataDependentSymNode) or \
        "data-dependent" in str(error).split("\n", 1)[0]


@contextlib.contextmanager
def exporting() -> Iterator[None]:
    """Turns a failure of ``torch.export`` into a Nova error at the model's line.

    torch prints the graph traced so far to stderr before it re-raises
    (hundreds of lines for a real model, above the error, burying the line the
    error names): what torch writes to stderr meanwhile is held back and
    written out without that graph."""
    shapes_log = logging.getLogger("torch.fx.experimental.symbolic_shapes")
    level = shapes_log.level
    shapes_log.setLevel(logging.ERROR)  # its "cannot find user code" warning, same graph
    held = io.StringIO()
    partial_graph = ""
    try:
        with contextlib.redirect_stderr(held):
            yield
    except NovaError:
        raise
    except Exception as error:  # torch raises many types here; each becomes a Nova error
        partial_graph = str(getattr(error, "partial_fx_graph", "") or "")
        frame = user_frame(error)
        if _is_data_dependent(error):
            raise NovaDataDependentError(
                "cannot export the model: its Python control flow depends on the values "
                "of a tensor, and a Nova program is one static graph (compute both "
                "branches and choose with torch.where, or decide on a Python value "
                f"before the call); torch.export says {_first_line(error)}", frame) from error
        raise NovaTorchExportError(
            f"cannot export the model with torch.export: {_first_line(error)}", frame) from error
    finally:
        shapes_log.setLevel(level)
        text = held.getvalue()
        if partial_graph:  # printed once per nested export wrapper
            text = text.replace(partial_graph + "\n", "")
        sys.stderr.write(text)


def importing_error(error: Exception) -> NovaTorchExportError:
    """A failure of torch-mlir's FX importer (a type or op it has no form for)."""
    return NovaTorchExportError(f"torch-mlir cannot import the model (torch.export traced it): "
                                f"{_first_line(error)}", user_frame(error), OP_FALLBACK_HINT)


#: torch-dialect ops that are operands or glue, never the op that failed to lower.
_GLUE = ("torch.constant.", "torch.prim.", "torch_c.", "torch.derefine", "torch.vtensor.literal")


def lowering_error(module, diagnostics: list[tuple[str, str]], error: Exception) -> NovaError:
    """The op that torch-mlir left unlowered in ``module`` after a failed pipeline
    (the first torch-dialect op that is not glue), named with its location;
    ``diagnostics`` are the (location, message) pairs the pipeline emitted."""
    from torch_mlir import ir

    # The op the conversion failed on, as its diagnostic names it ("failed to
    # legalize operation 'torch.operator'") at its location; the first
    # torch op left is only a fallback (a failed conversion leaves every op
    # of the function in the torch dialect, the model's first line first).
    failed = {m.group(1) for _, text in diagnostics
              for m in [re.search(r"failed to legalize operation '([^']+)'", text)] if m}
    failed_at = {loc for loc, text in diagnostics if "failed to legalize" in text}
    candidates: list = []

    def visit(op):
        name = op.name
        if name in failed if failed else (name.startswith("torch.") and
                                          not name.startswith(_GLUE)):
            candidates.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    found = [op for op in candidates if str(op.location) in failed_at] or candidates
    detail = diagnostics[0][1].split(":", 1)[0] if diagnostics else ""
    if found:
        op = found[0]
        frame = frame_of_location(str(op.location))
        if frame is None and diagnostics:
            frame = frame_of_location(diagnostics[0][0])
        return NovaLoweringError(_op_name(op), frame, detail)
    frame = frame_of_location(diagnostics[0][0]) if diagnostics else None
    what = diagnostics[0][1] if diagnostics else _first_line(error)
    return NovaTorchExportError(f"torch-mlir cannot lower the model to linalg: {what}", frame,
                                OP_FALLBACK_HINT)


def _op_name(op) -> str:
    """The op's name; for torch-mlir's generic ``torch.operator`` (an ATen op its
    dialect has no definition of), the ATen op it stands for: ``torch.aten.special_bessel_j0``."""
    from torch_mlir import ir

    if op.name == "torch.operator" and "name" in op.attributes:
        name = ir.StringAttr(op.attributes["name"]).value
        return name if name.startswith("torch.") else f"torch.{name}"
    return op.name
