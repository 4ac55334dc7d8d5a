"""torch.export a model and import it into linalg-on-tensors with torch-mlir.

The model's state (parameters, buffers persistent or not, and tensor
constants lifted out of ``forward``) becomes the leading arguments of
``@forward``, in the exported program's order: parameters in
``named_parameters()`` order, then buffers in ``named_buffers()`` order, then
lifted constants. A large model's IR stays small and the binary refers to its
state by name. Each state tensor's value comes with the import
(``ImportedProgram.param_values``).

Inputs and outputs are torch pytrees: positional and keyword arguments,
tuples, dicts and Hugging Face ``ModelOutput`` objects. Only their tensor
leaves become function arguments and results; Python scalars among the
inputs (``int``, ``float``, ``bool``, ``str``) are baked into the program at
their export value (a later call must pass the same value), and ``None`` and
scalars among the outputs are returned as exported. The import reads shapes
and dtypes from the exported program's fake tensors: the model never runs on
the host.

Hugging Face models: a KV cache (``past_key_values``, a ``DynamicCache``)
is an object, not a tensor, and has no program form. A model whose
``config.use_cache`` is set is exported with ``use_cache=False`` (unless the
call passes ``use_cache`` itself): the program returns the model's output
without ``past_key_values``, as ``model(..., use_cache=False)`` does.
"""
from __future__ import annotations

import contextlib
import re
import warnings
from dataclasses import dataclass
from typing import Any

import torch

from nova.frontend.decompositions import decomposition_table
from nova.frontend.errors import NovaExportError
from nova.frontend.shape_asserts import name_bare_asserts
from nova.frontend.signature import TensorSpec, read_signature
from nova.runtime.binding import CallBinding


@dataclass(frozen=True)
class ImportedProgram:
    """linalg-on-tensors text plus the meaning of each argument and result.

    ``params`` and ``param_values`` describe the leading (state) arguments,
    ``inputs`` the tensor inputs after them, ``outputs`` the results;
    ``binding`` maps a call with the model's own arguments onto them and the
    results back onto the model's output structure.
    """

    mlir: str
    params: tuple[TensorSpec, ...]
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    param_values: tuple[torch.Tensor, ...] = ()
    binding: CallBinding | None = None
    #: The names of the ops in ``mlir`` (``linalg.generic``, ``cf.assert``...).
    ops: frozenset[str] = frozenset()


_LOWERING = (
    ("builtin.module(func.func(torch-match-quantized-custom-ops), "
     "torchdynamo-export-to-torch-backend-pipeline{ extra-library=})",
     "Lowering TorchFX IR -> Torch Backend IR"),
    ("builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)",
     "Lowering Torch Backend IR -> Linalg-on-Tensors Backend IR"),
)


#: Dialects of torch-mlir's linalg-on-tensors output that Nova compiles.
#: ``cf`` holds torch-mlir's index bounds checks (``cf.assert``); ``scf`` its
#: loops (det, stft), which nova-unroll-loops unrolls or names.
_SUPPORTED_DIALECTS = frozenset(
    {"builtin", "func", "linalg", "tensor", "arith", "math", "ml_program", "cf", "scf"})


def _walk_ops(module) -> tuple[frozenset[str], list[tuple[str, str]]]:
    """The names of the ops in ``module``, and the first op (name, location)
    of each dialect that Nova does not compile."""
    from torch_mlir import ir

    names, foreign = set(), {}

    def visit(op):
        name = op.name
        names.add(name)
        dialect = name.split(".", 1)[0]
        if dialect not in _SUPPORTED_DIALECTS and dialect not in foreign:
            foreign[dialect] = (name, str(op.location))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return frozenset(names), list(foreign.values())


def _reject_foreign_ops(foreign: list[tuple[str, str]]) -> None:
    """torch-mlir lowers a few ops (cumsum, sort, scatter...) to its own
    `tm_tensor` dialect, which Nova does not take; say so at the user's line
    instead of letting nova-opt fail to parse."""
    from nova.compiler.diagnostics import frame_of_location
    from nova.compiler.errors import NovaUnsupportedOpError

    if foreign:
        name, location = foreign[0]
        raise NovaUnsupportedOpError(name, frame_of_location(location))


class FunctionModule(torch.nn.Module):
    """A plain function as a module without state, so that ``nova.compile(fn, x)``
    exports it as ``nova.compile(module, x)`` does (torch.export takes modules)."""

    def __init__(self, function: Any) -> None:
        super().__init__()
        self.function = function

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


def as_module(model: Any) -> torch.nn.Module:
    """``model`` itself, a function wrapped in a :class:`FunctionModule`, or a
    NovaExportError for anything else."""
    if isinstance(model, torch.nn.Module):
        return model
    if callable(model):
        return FunctionModule(model)
    raise NovaExportError(f"nova.compile takes a torch.nn.Module or a function, "
                          f"got {type(model).__name__}")


def export(model: torch.nn.Module, args: tuple[Any, ...],
           kwargs: dict[str, Any] | None = None) -> torch.export.ExportedProgram:
    """``torch.export`` (non-strict) of ``model`` (a module or a function) in eval
    mode at ``args`` / ``kwargs``, decomposed to the ops torch-mlir lowers to
    linalg. torch's failures become Nova errors at the model's line
    (:mod:`nova.frontend.torch_errors`)."""
    from nova.frontend.torch_errors import exporting

    model = as_module(model).eval()
    kwargs = dict(kwargs or {})
    with warnings.catch_warnings(), _without_kv_cache(model, kwargs), exporting():
        # torch's pytree deprecation (LeafSpec), raised inside its export.
        warnings.simplefilter("ignore", FutureWarning)
        exported = torch.export.export(model, tuple(args), kwargs, strict=False)
        name_bare_asserts(exported.graph_module)
        return exported.run_decompositions(decomposition_table())


@contextlib.contextmanager
def _without_kv_cache(model: torch.nn.Module, kwargs: dict[str, Any]):
    """Turns a Hugging Face config's ``use_cache`` off while exporting (see
    the module docstring); a call that passes ``use_cache`` decides itself."""
    config = getattr(model, "config", None)
    if "use_cache" in kwargs or getattr(config, "use_cache", None) is not True:
        yield
        return
    config.use_cache = False
    try:
        yield
    finally:
        config.use_cache = True


def import_model(model: torch.nn.Module, *example_args: Any, func_name: str = "forward",
                 **example_kwargs: Any) -> ImportedProgram:
    """Exports ``model`` at ``example_args`` / ``example_kwargs`` and returns
    its linalg-on-tensors IR (see the module docstring for what becomes an
    argument)."""
    return import_exported(export(model, example_args, example_kwargs), func_name=func_name)


def import_exported(exported: torch.export.ExportedProgram, *, func_name: str = "forward",
                    reject_foreign_ops: bool = True) -> ImportedProgram:
    """torch-mlir import of a program made by :func:`export` (its graph is
    rewritten in place). ``reject_foreign_ops=False`` keeps ops outside the
    dialects Nova compiles (``tm_tensor.*``) in the text, for inspection."""
    from nova.frontend.complex_pairs import lower_complex
    from nova.frontend.idioms import rewrite_idioms
    from nova.frontend.narrow_ints import widen_narrow_ints
    from nova.frontend.zero_size import drop_zero_size, fold_zero_size

    rewrite_idioms(exported.graph)
    lower_complex(exported.graph)
    widen_narrow_ints(exported.graph)
    has_empty = fold_zero_size(exported.graph)
    signature = read_signature(exported)
    if has_empty:
        drop_zero_size(exported.graph)
    _reject_unsigned(exported.graph)
    _reject_random(exported.graph)
    _reject_zero_size(exported.graph)
    mlir, ops = import_fx_graph(exported.graph, func_name=func_name,
                                reject_foreign_ops=reject_foreign_ops)
    return ImportedProgram(
        mlir=mlir,
        params=signature.params, inputs=signature.inputs, outputs=signature.outputs,
        param_values=signature.param_values, binding=signature.binding, ops=ops)


_UNSIGNED = {torch.uint8, torch.uint16, torch.uint32, torch.uint64}


def frame_of_node(node: torch.fx.Node):
    """The model's line an FX node came from (its last frame in the user's code)."""
    from nova.compiler.diagnostics import SourceFrame, is_user_file

    frame = None
    for file, line in re.findall(r'File "([^"]+)", line (\d+)', node.meta.get("stack_trace") or ""):
        if is_user_file(file):
            import linecache
            frame = SourceFrame(file, int(line), linecache.getline(file, int(line)).strip())
    return frame


def _reject_zero_size(graph: torch.fx.Graph) -> None:
    """Nova compiles no tensor without elements (a normal-form error in nova-opt),
    and torch-mlir's lowering can die of SIGFPE on one (a 0x3x4 batched matmul):
    the zero-size pass leaves none; any left is refused here, at the model's
    line, before torch-mlir runs."""
    from nova.frontend.errors import NovaZeroSizeError

    for node in graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and node.users and 0 in tuple(val.shape):
            what = (f"input '{node.target}' is" if node.op == "placeholder" else
                    f"{node.target} makes")
            raise NovaZeroSizeError(what, tuple(val.shape), frame_of_node(node))


def _reject_unsigned(graph: torch.fx.Graph) -> None:
    """torch-mlir lowers unsigned tensors to signless integers with signed
    conversions, so their numbers would come out wrong: uint8 (and int16, which
    has no tile type) are carried in int32 before this check
    (:mod:`nova.frontend.narrow_ints`); the wider unsigned types get a clear
    error at the model's line."""
    from nova.compiler.errors import NovaUnsupportedOpError

    for node in graph.nodes:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        dtype = str(val.dtype).removeprefix("torch.")
        if val.dtype in _UNSIGNED or val.dtype == torch.int16:
            raise NovaUnsupportedOpError(
                f"{node.target} producing a {dtype} tensor "
                f"(of the unsigned integers only uint8 is supported; use int32/int64)",
                frame_of_node(node))


def _reject_random(graph: torch.fx.Graph) -> None:
    """Ops that draw from torch's generator (dropout in training mode,
    ``torch.rand``, sdpa's ``dropout_p``): torch-mlir lowers them to its own
    generator, whose seed lives in a global that Nova does not compile, and
    whose numbers are not torch's anyway. Nova draws random bits only from a
    seed input, in training steps (:mod:`nova.frontend.dropout`); an
    inference program says so at the model's line."""
    from nova.compiler.errors import NovaUnsupportedOpError

    for node in graph.nodes:
        tags = getattr(node.target, "tags", ()) if node.op == "call_function" else ()
        if torch.Tag.nondeterministic_seeded in tags:
            raise NovaUnsupportedOpError(
                f"{node.target} (a random op: inference programs draw no random numbers; "
                f"call model.eval(), set the dropout probability to 0, or compile a "
                f"training step, which draws dropout masks from a seed input)",
                frame_of_node(node))


#: Prefix of the name location that carries an op's module path
#: (``module:blocks.0.attn``); nova-translate writes it into the binary's DEBUG
#: entries, and ``nova profile --by module`` groups by it.
MODULE_LOCATION_PREFIX = "module:"


def _module_path(node: torch.fx.Node) -> str | None:
    """The qualified name of the innermost module an FX node ran in, from
    torch.export's ``nn_module_stack`` (``blocks.0.attn``), or None."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return None
    path = list(stack.values())[-1][0]
    # Dynamo-style paths (L['self'].blocks[0].attn) to module names.
    path = re.sub(r"^L\['self'\]\.?", "", path)
    path = re.sub(r"\[(\d+)\]", r".\1", path).strip(".")
    return path or None


def _name_locations_by_module(importer, asserts: dict[torch.fx.Node, int],
                              assert_locations: dict[int, Any]) -> None:
    """Makes torch-mlir wrap the location of every node in a name location
    holding its module path, so that each instruction can be attributed to
    the module it came from (``blocks.3.attn``) as well as to its line; and
    the location of each assert's conversion in one naming the assert
    (:mod:`nova.frontend.shape_asserts`), its own location going into
    ``assert_locations``."""
    from torch_mlir.extras.fx_importer import ContextCache
    from torch_mlir.ir import Location

    from nova.frontend.shape_asserts import ASSERT_LOCATION_PREFIX

    class ModuleNamingCache(ContextCache):
        __slots__ = ()

        def get_node_location(self, node):
            loc = super().get_node_location(node)
            if node in asserts:
                # The assert's own location (its source line) is kept for its cf.assert.
                source = loc if loc is not None else Location.unknown(self._c)
                assert_locations[asserts[node]] = source
                loc = Location.name(f"{ASSERT_LOCATION_PREFIX}{asserts[node]}",
                                    childLoc=source, context=self._c)
            path = _module_path(node)
            if loc is None or path is None:
                return loc
            return Location.name(MODULE_LOCATION_PREFIX + path, childLoc=loc, context=self._c)

    importer._cc = ModuleNamingCache(importer._c, py_attr_tracker=importer._py_attr_tracker)


def import_fx_graph(graph: torch.fx.Graph, *, func_name: str = "forward",
                    reject_foreign_ops: bool = True,
                    donated: dict[int, int] | None = None) -> tuple[str, frozenset[str]]:
    """torch-mlir import of a stateless FX graph (every tensor a placeholder)
    lowered to linalg-on-tensors: the text, with source locations, and the
    names of its ops. Shared by :func:`import_exported` and the training
    frontend (:mod:`nova.frontend.train_export`). ``donated`` maps argument
    indices to the result each is donated to (``nova.aliasing_output``: the
    compiled program writes that result into the argument's buffer)."""
    from torch_mlir import ir
    from torch_mlir.compiler_utils import run_pipeline_with_repro_report
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras.fx_importer import FxImporter

    from torch_mlir.compiler_utils import TorchMlirCompilerError

    from nova.frontend.shape_asserts import assert_messages, insert_asserts
    from nova.frontend.torch_errors import importing_error, lowering_error

    context = ir.Context()
    torch_d.register_dialect(context)
    # torch-mlir's diagnostics, kept for the error (rather than printed).
    diagnostics: list[tuple[str, str]] = []

    def keep(diagnostic) -> bool:
        if diagnostic.severity == ir.DiagnosticSeverity.ERROR:
            diagnostics.append((str(diagnostic.location), diagnostic.message))
        return True

    context.attach_diagnostic_handler(keep)
    importer = FxImporter(context=context)
    asserts = assert_messages(graph)
    assert_locations: dict[int, Any] = {}
    _name_locations_by_module(importer, asserts, assert_locations)
    try:
        importer.import_stateless_graph(graph, func_name=func_name)
    except Exception as error:  # the importer's own NotImplementedError, KeyError...
        raise importing_error(error) from error
    module = importer.module
    # Lowered here rather than by export_and_import(output_type=linalg...),
    # which loses the FX nodes' source locations on the way; diagnostics
    # need them to point at the user's line of Python.
    for pipeline, what in _LOWERING:
        try:
            run_pipeline_with_repro_report(module, pipeline, what)
        except TorchMlirCompilerError as error:
            raise lowering_error(module, diagnostics, error) from error
    if asserts:
        insert_asserts(module, asserts, assert_locations)
    ops, foreign = _walk_ops(module)
    if reject_foreign_ops:
        _reject_foreign_ops(foreign)
    if donated:
        _donate_arguments(module, func_name, donated)
    return module.operation.get_asm(enable_debug_info=True), ops


def _donate_arguments(module, func_name: str, donated: dict[int, int]) -> None:
    from torch_mlir import ir

    with module.context:
        for op in module.body.operations:
            if op.operation.name != "func.func" or \
                    ir.StringAttr(op.attributes["sym_name"]).value != func_name:
                continue
            count = len(op.regions[0].blocks[0].arguments)
            old = (list(ir.ArrayAttr(op.attributes["arg_attrs"]))
                   if "arg_attrs" in op.attributes else [ir.DictAttr.get({})] * count)
            i64 = ir.IntegerType.get_signless(64)
            attrs = []
            for i, entry in enumerate(old):
                fields = {a.name: a.attr for a in ir.DictAttr(entry)}
                if i in donated:
                    fields["nova.aliasing_output"] = ir.IntegerAttr.get(i64, donated[i])
                attrs.append(ir.DictAttr.get(fields))
            op.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
