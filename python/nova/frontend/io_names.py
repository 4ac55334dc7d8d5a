"""Names for the program's inputs and outputs in the binary's I/O table.

The table names each entry (``nova.name`` on the function's arguments and
results; ``arg<index>`` without one). A model's inputs and outputs are named as
its call names them (:func:`nova.frontend.signature.leaf_name`: ``input0``,
``attention_mask``, ``logits``). The bound parameters stay unnamed: nova-roll-layers
stacks only arguments without attributes, and a name is one.

Applied by ``nova.compile`` to the imported text, not by the importer, so
that a graph's linalg (what the torch.compile backend caches binaries by) is
the same whatever its inputs are called.
"""

from __future__ import annotations

from typing import Sequence

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


def named_mlir(imported: ImportedProgram, func_name: str = "forward") -> str:
    """``imported.mlir`` with ``nova.name`` on the model's inputs and results.
    A function whose argument or result count differs from the signature's (a
    graph rewritten after it was read) keeps the text as it is."""
    from torch_mlir import ir

    args = [""] * len(imported.params) + [t.name for t in imported.inputs]
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
