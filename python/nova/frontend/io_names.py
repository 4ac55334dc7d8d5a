"""Names for the program's inputs and outputs in the binary's I/O table.

The table names each entry (``nova.name`` on the function's arguments and
results; ``arg<index>`` without one). A model's inputs and outputs are named as
its call names them (:func:`nova.frontend.signature.leaf_name`: ``attention_mask``,
``logits``), a positional input by the ``forward`` argument it binds (``x``; ``input0``
when the signature does not say), and a parameter by its state name
(``blocks.0.attn.qkv.weight``; nova-roll-layers names a stack of per-layer parameters
``blocks.*.attn.qkv.weight``).

Applied by ``nova.compile`` to the imported text, not by the importer, so
that a graph's linalg (what the torch.compile backend caches binaries by) is
the same whatever its inputs are called.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

from nova.frontend.export import ImportedProgram


def _unique(names: Sequence[str], taken: set[str]) -> list[str]:
    """``names`` made distinct from each other and from ``taken`` (``#2``,
    ``#3``... on a repeat: the I/O table needs distinct names); "" stays ""."""
    unique = []
    for name in names:
        candidate, n = name, 1
        while name and candidate in taken:
            n += 1
            candidate = f"{name}#{n}"
        if candidate:
            taken.add(candidate)
        unique.append(candidate)
    return unique


def positional_names(forward: Callable[..., Any] | None) -> list[str]:
    """The names of ``forward``'s positional parameters (without ``self``), up to a
    ``*args``; empty when the signature cannot be read."""
    if forward is None:
        return []
    try:
        parameters = inspect.signature(forward).parameters.values()
    except (TypeError, ValueError):
        return []
    names = []
    for p in parameters:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break
        names.append(p.name)
    return names


def _input_name(name: str, positional: Sequence[str]) -> str:
    """``input<i>[.rest]`` as the ``forward`` argument it binds, when known."""
    head, _, rest = name.partition(".")
    if head.startswith("input") and head[5:].isdigit() and int(head[5:]) < len(positional):
        return positional[int(head[5:])] + (f".{rest}" if rest else "")
    return name


def named_mlir(imported: ImportedProgram, func_name: str = "forward",
               forward: Callable[..., Any] | None = None) -> str:
    """``imported.mlir`` with ``nova.name`` on the model's parameters, inputs and
    results (``forward``: the model's, whose argument names name the positional
    inputs). A function whose argument or result count differs from the
    signature's (a graph rewritten after it was read) keeps the text as it is."""
    from torch_mlir import ir

    positional = positional_names(forward)
    args = ([p.name for p in imported.params]
            + [_input_name(t.name, positional) for t in imported.inputs])
    results = [t.name for t in imported.outputs]
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(imported.mlir)
        for op in module.body.operations:
            if op.operation.name != "func.func" or \
                    ir.StringAttr(op.attributes["sym_name"]).value != func_name:
                continue
            kind = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            if len(kind.inputs) != len(args) or len(kind.results) != len(results):
                return imported.mlir
            taken: set[str] = set()
            for key, names in (("arg_attrs", args), ("res_attrs", results)):
                if not names:
                    continue
                old = (list(ir.ArrayAttr(op.attributes[key])) if key in op.attributes
                       else [ir.DictAttr.get({})] * len(names))
                attrs = []
                for entry, name in zip(old, _unique(names, taken)):
                    fields = {a.name: a.attr for a in ir.DictAttr(entry)}
                    if name:
                        fields["nova.name"] = ir.StringAttr.get(name)
                    attrs.append(ir.DictAttr.get(fields))
                op.attributes[key] = ir.ArrayAttr.get(attrs)
        return module.operation.get_asm(enable_debug_info=True)
