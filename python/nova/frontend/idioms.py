"""The rewrites of real-code idioms that every compile path applies to its
FX graph before torch-mlir (``nova.compile``'s export, ``compile_train_step``'s
step graph, and ``torch.compile``'s forward and backward graphs), so that no
path meets torch-mlir with a form it crashes or loops on:

- fixed-size boolean-mask reads become integer gathers
  (:mod:`nova.frontend.mask_reads`);
- ``.item()`` scalars and runtime asserts (:mod:`nova.frontend.shape_asserts`);
- mask reads that only feed mask writes are kept dense
  (:mod:`nova.frontend.masked_lanes`);
- any other tensor of data-dependent shape is refused at the model's line;
- int8 ops compute in int32 (:func:`nova.frontend.narrow_ints.compute_int8_in_int32`).

Complex tensors and uint8 / int16 change what crosses the program's boundary,
which each path binds its own way; they are rewritten by the callers
(:mod:`nova.frontend.complex_pairs`, :func:`nova.frontend.narrow_ints.widen_narrow_ints`).
"""

from __future__ import annotations

import torch
from torch.fx import Graph


def rewrite_idioms(graph: Graph) -> None:
    """Rewrites ``graph`` in place (see the module docstring)."""
    from nova.frontend.mask_reads import gather_static_mask_reads
    from nova.frontend.masked_lanes import densify_masked_lanes
    from nova.frontend.narrow_ints import compute_int8_in_int32
    from nova.frontend.shape_asserts import lower_item_scalars

    gather_static_mask_reads(graph)
    lower_item_scalars(graph)
    densify_masked_lanes(graph)
    reject_data_dependent_shapes(graph)
    compute_int8_in_int32(graph)


def reject_data_dependent_shapes(graph: Graph) -> None:
    """A tensor whose shape depends on values (``nonzero``, ``argwhere``,
    ``bincount``, ``x[mask]``): torch.export gives it an unbacked size, and a
    Nova program has static shapes; said at the model's line."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    from nova.frontend.errors import NovaDataDependentError
    from nova.frontend.export import frame_of_node

    for node in graph.nodes:
        val = node.meta.get("val")
        vals = val if isinstance(val, (list, tuple)) else [val]
        for v in vals:
            if isinstance(v, torch.Tensor) and free_unbacked_symbols(v.shape):
                raise NovaDataDependentError(
                    f"{node.target} makes a tensor of shape {list(v.shape)}, which depends on "
                    f"the input's values; a Nova program has static shapes (keep a mask, or "
                    f"a result of fixed size, instead)", frame_of_node(node))
