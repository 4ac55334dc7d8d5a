"""Complex tensors as pairs of real tensors, rewritten on the FX graph before
torch-mlir imports it (Nova's tiles hold no complex numbers, and torch-mlir
lowers ``aten.complex`` to the ``complex`` dialect, which Nova does not take).

Every node that makes a complex tensor (``complex64``, or ``complex128`` /
``complex32``) is replaced by two real nodes of the same shape, its real and
imaginary parts (``float32``, resp. ``float64`` / ``float16``), computed from
the parts of its operands with torch's formulas:

- ``view_as_complex`` / ``complex`` / ``polar`` make the parts,
  ``view_as_real`` stacks them on a new last axis, ``real`` / ``imag`` (as
  ``view_as_real`` + ``select``) read one;
- ``add`` / ``sub`` / ``mul`` / ``div`` / ``reciprocal`` / ``neg`` / ``conj``
  / ``exp`` / ``sgn`` and ``mm`` / ``bmm`` with complex, real and Python
  (complex) scalar operands; ``abs`` (``sqrt(re² + im²)``) and ``angle``
  (``atan2(im, re)``) give real results;
- ops that move or reduce elements without mixing them (views, ``cat``,
  ``index``, ``sum``, ``mean``, ``where``...) apply to each part.

Autograd runs before this rewrite (the training step is traced with the
backward in it), so the backward's complex ops (``_conj``, products with the
conjugate, ``view_as_real`` of the incoming gradient) are rewritten likewise.

A complex placeholder (an input, a constant such as Llama's ``freqs_cis``)
becomes a real one holding ``view_as_real`` of its value, shape ``(..., 2)``,
and a complex result is returned that way: the caller converts values at the
boundary (:mod:`nova.frontend.signature` binds complex inputs and results).
Any other op on a complex tensor is a NovaUnsupportedOpError at the model's line.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.fx import Graph, Node

from nova.frontend.fx_emit import HOST_DTYPE
from nova.frontend.fx_emit import Emitter as _Emitter
from nova.frontend.fx_emit import Unsupported as _Unsupported
from nova.frontend.fx_emit import set_val as _set_val

aten = torch.ops.aten
prims = torch.ops.prims

#: Node metadata naming the complex dtype a placeholder or result stood for.
COMPLEX_DTYPE = HOST_DTYPE

_PART_DTYPE = {torch.complex64: torch.float32, torch.complex128: torch.float64,
               torch.complex32: torch.float16}

#: Ops that move, pick or sum elements without mixing real and imaginary
#: parts: applied to each part (a real float operand stands for x + 0i).
_PARTWISE = {
    aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.slice.Tensor,
    aten.select.int, aten.permute.default, aten.transpose.int, aten.t.default,
    aten.expand.default, aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims,
    aten.squeeze.default, aten.clone.default, aten.alias.default, aten.detach.default,
    aten.lift_fresh_copy.default, aten.cat.default, aten.stack.default, aten.index.Tensor,
    aten.index_select.default, aten.flip.default, aten.roll.default, aten.repeat.default,
    aten.narrow.default, aten.sum.dim_IntList, aten.sum.default, aten.mean.dim,
    aten.mean.default, aten.where.self, aten.gather.default, aten.slice_scatter.default,
    aten.select_scatter.default, aten.diagonal.default, aten.tril.default, aten.triu.default,
    aten.expand_copy.default, aten.view_copy.default, aten.permute_copy.default,
    aten.unsqueeze_copy.default, aten.squeeze_copy.dims,
    aten.resolve_conj.default, aten.resolve_neg.default, aten.constant_pad_nd.default,
    aten.unfold.default, aten.movedim.int, aten.split.Tensor, aten.split_with_sizes.default,
    aten.unbind.int, aten.chunk.default, operator.getitem,
    aten.zeros_like.default, aten.empty_like.default, aten.copy.default,
    prims.squeeze.default, prims.view_of.default,
}

#: Ops that only check metadata: dropped when they read a complex tensor.
_CHECKS = {aten._assert_tensor_metadata.default}


def _is_complex(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype.is_complex


def _makes_complex(node: Node) -> bool:
    val = node.meta.get("val")
    vals = val if isinstance(val, (list, tuple)) else [val]
    return any(_is_complex(v) for v in vals)


def lower_complex(graph: Graph) -> list[Node]:
    """Rewrites ``graph`` in place (see the module docstring); returns the
    placeholders that were complex (now ``view_as_real`` of their value, their
    :data:`COMPLEX_DTYPE` metadata naming the complex dtype). Results that were
    complex carry the same metadata on the node the output returns."""
    if not any(_makes_complex(n) or any(_makes_complex(a) for a in n.all_input_nodes)
               for n in graph.nodes):
        return []
    parts: dict[Node, tuple[Any, Any]] = {}
    widened = []
    for node in list(graph.nodes):
        if node.op == "placeholder" and _is_complex(node.meta.get("val")):
            widened.append(node)
            _widen_placeholder(graph, node, parts)
        elif node.op == "call_function":
            complex_in = any(a in parts for a in node.all_input_nodes)
            if complex_in or _makes_complex(node):
                _rewrite(graph, node, parts)
        elif node.op == "output":
            _return_pairs(graph, node, parts)
    for node in reversed(list(graph.nodes)):
        if node in parts and node.op != "placeholder" and not node.users:
            graph.erase_node(node)
    graph.lint()
    return widened


def _widen_placeholder(graph: Graph, node: Node, parts: dict) -> None:
    val = node.meta["val"]
    dtype = val.dtype
    _set_val(node, torch.view_as_real(val.resolve_conj()).contiguous())
    node.meta[COMPLEX_DTYPE] = str(dtype).removeprefix("torch.")
    # Its users (in the walk's list, which has not these two) read the parts,
    # made after the last placeholder (the arguments stay together).
    anchor = next(n for n in graph.nodes if n.op != "placeholder")
    emit = _Emitter(graph, anchor, location=node)
    parts[node] = (emit(aten.select.int, node, -1, 0), emit(aten.select.int, node, -1, 1))


def _return_pairs(graph: Graph, output: Node, parts: dict) -> None:
    """Complex results as ``view_as_real`` of their value."""
    emit = _Emitter(graph, output)

    def pair(value):
        if isinstance(value, Node) and value.op == "placeholder":
            return value  # already view_as_real of its value, and marked
        if isinstance(value, Node) and value in parts:
            real, imag = _materialize(emit, parts[value], value)
            stacked = emit(aten.stack.default, [real, imag], -1)
            stacked.meta[COMPLEX_DTYPE] = str(value.meta["val"].dtype).removeprefix("torch.")
            return stacked
        return value

    output.args = torch.fx.node.map_aggregate(output.args, pair)


def _materialize(emit: _Emitter, pair: tuple[Any, Any], like: Node) -> tuple[Node, Node]:
    """Both parts as tensors (an exact zero or a scalar becomes a full tensor)."""
    val = like.meta["val"]
    if val.dtype.is_complex:
        shape, dtype = list(val.shape), _PART_DTYPE[val.dtype]
    else:  # a complex placeholder, already widened to view_as_real of its value
        shape, dtype = list(val.shape[:-1]), val.dtype
    out = []
    for part in pair:
        if not isinstance(part, Node):
            part = emit(aten.full.default, shape, float(part or 0.0), dtype=dtype)
        out.append(part)
    return out[0], out[1]


def _rewrite(graph: Graph, node: Node, parts: dict) -> None:
    from nova.compiler.errors import NovaUnsupportedOpError
    from nova.frontend.export import frame_of_node

    emit = _Emitter(graph, node)
    try:
        result = _lower(emit, node, parts)
    except _Unsupported as error:
        raise NovaUnsupportedOpError(f"{node.target} on a complex tensor{error}",
                                     frame_of_node(node)) from None
    if result is _DROP:
        graph.erase_node(node)
    elif _makes_complex(node):
        parts[node] = result
        if isinstance(result, list):  # split / unbind: the getitems find the pieces
            return
    else:
        node.replace_all_uses_with(result)
        graph.erase_node(node)


_DROP = object()


def _operand(parts: dict, value: Any) -> tuple[Any, Any]:
    """(real, imaginary) of an operand: a complex node's parts, a real node or
    number with no imaginary part (None), a Python complex number's parts."""
    if isinstance(value, Node):
        return parts[value] if value in parts else (value, None)
    if isinstance(value, complex):
        return value.real, value.imag
    return value, None


def _lower(emit: _Emitter, node: Node, parts: dict) -> Any:
    target, args, kwargs = node.target, node.args, node.kwargs
    if target in _CHECKS:
        return _DROP
    if target is aten.view_as_complex.default:
        return emit(aten.select.int, args[0], -1, 0), emit(aten.select.int, args[0], -1, 1)
    if target is aten.complex.default:  # torch broadcasts the parts to one shape
        shape = list(node.meta["val"].shape)
        return tuple(part if list(part.meta["val"].shape) == shape
                     else emit(aten.expand.default, part, shape) for part in args[:2])
    if target is aten.polar.default:
        magnitude, angle = args
        return (emit(aten.mul.Tensor, magnitude, emit(aten.cos.default, angle)),
                emit(aten.mul.Tensor, magnitude, emit(aten.sin.default, angle)))
    if target is aten.view_as_real.default:
        real, imag = _materialize(emit, parts[args[0]], args[0])
        return emit(aten.stack.default, [real, imag], -1)
    if target is aten.as_strided.default and args[0] in parts:
        # Strides count complex elements of the (contiguous) input: on its
        # interleaved form they are twice as long, the parts one apart.
        real, imag = _materialize(emit, parts[args[0]], args[0])
        pairs = emit(aten.stack.default, [real, imag], -1)
        size, stride = list(args[1]), list(args[2])
        offset = args[3] if len(args) > 3 else kwargs.get("storage_offset", 0)
        if not all(isinstance(v, int) for v in [*size, *stride, offset or 0]):
            raise _Unsupported(" (sizes or strides not known at compile time)")
        strided = emit(aten.as_strided.default, pairs, size + [2], [2 * v for v in stride] + [1],
                       2 * (offset or 0))
        return emit(aten.select.int, strided, -1, 0), emit(aten.select.int, strided, -1, 1)
    if target in (aten._conj.default, aten.conj.default, aten.conj_physical.default):
        real, imag = _operand(parts, args[0])
        return real, emit.neg(imag)
    if target in (aten.neg.default, aten._neg_view.default):
        real, imag = _operand(parts, args[0])
        return emit.neg(real), emit.neg(imag)
    if target in (aten.add.Tensor, aten.sub.Tensor, aten.add.Scalar, aten.sub.Scalar):
        (ar, ai), (br, bi) = _operand(parts, args[0]), _operand(parts, args[1])
        alpha = kwargs.get("alpha", 1)
        if alpha != 1:
            (br, bi) = _complex_mul(emit, (br, bi), _operand(parts, alpha))
        if target in (aten.sub.Tensor, aten.sub.Scalar):
            br, bi = emit.neg(br), emit.neg(bi)
        return _like(emit, node, (emit.add(ar, br), emit.add(ai, bi)))
    if target in (aten.mul.Tensor, aten.mul.Scalar):
        product = _complex_mul(emit, _operand(parts, args[0]), _operand(parts, args[1]))
        return _like(emit, node, product)
    if target in (aten.div.Tensor, aten.div.Scalar):
        numerator, denominator = _operand(parts, args[0]), _operand(parts, args[1])
        if denominator[1] is None:  # a real divisor divides each part
            return _like(emit, node, tuple(
                None if p is None else emit(aten.div.Tensor, p, denominator[0])
                if isinstance(p, Node) or isinstance(denominator[0], Node) else p / denominator[0]
                for p in numerator))
        return _like(emit, node, _complex_mul(emit, numerator, _reciprocal(emit, denominator)))
    if target is aten.reciprocal.default:
        return _like(emit, node, _reciprocal(emit, _operand(parts, args[0])))
    if target is aten.exp.default:
        real, imag = _operand(parts, args[0])
        scale = emit(aten.exp.default, real)
        return emit.mul(scale, emit(aten.cos.default, imag)), emit.mul(scale, emit(aten.sin.default, imag))
    if target is aten.abs.default:
        return emit(aten.sqrt.default, _norm2(emit, _operand(parts, args[0])))
    if target is aten.linalg_vector_norm.default:
        # A norm of complex numbers is the norm of their magnitudes.
        magnitude = emit(aten.sqrt.default, _norm2(emit, _operand(parts, args[0])))
        return emit.decomposed(lambda m: torch.ops.aten.linalg_vector_norm.default(
            m, *args[1:], **{k: v for k, v in kwargs.items() if k != "dtype"}), magnitude)
    if target is aten.angle.default:
        real, imag = _materialize(emit, _operand(parts, args[0]), args[0])
        return emit.decomposed(torch.atan2, imag, real)
    if target is aten.sgn.default:
        # z / |z|, and 0 where z is 0 (torch's sgn).
        real, imag = _materialize(emit, _operand(parts, args[0]), args[0])
        magnitude = emit(aten.sqrt.default, _norm2(emit, (real, imag)))
        zero = emit(aten.eq.Scalar, magnitude, 0)
        safe = emit(aten.where.self, zero, emit(aten.full_like.default, magnitude, 1.0), magnitude)
        return tuple(emit(aten.where.self, zero, emit(aten.full_like.default, p, 0.0),
                          emit(aten.div.Tensor, p, safe)) for p in (real, imag))
    if target in (aten.mm.default, aten.bmm.default, aten.matmul.default):
        (ar, ai), (br, bi) = _operand(parts, args[0]), _operand(parts, args[1])
        mm = lambda a, b: None if a is None or b is None else emit(target, a, b)  # noqa: E731
        return _like(emit, node, (emit.sub(mm(ar, br), mm(ai, bi)),
                                  emit.add(mm(ar, bi), mm(ai, br))))
    if target in (aten.eq.Tensor, aten.ne.Tensor):
        like = next(a for a in args[:2] if a in parts)
        pairs = [_materialize(emit, _operand(parts, a), like) for a in args[:2]]
        same = emit(aten.logical_and.default, emit(aten.eq.Tensor, pairs[0][0], pairs[1][0]),
                    emit(aten.eq.Tensor, pairs[0][1], pairs[1][1]))
        return same if target is aten.eq.Tensor else emit(aten.logical_not.default, same)
    if target in (aten._to_copy.default, prims.convert_element_type.default,
                  aten.to.dtype):
        return _convert(emit, node, parts)
    if target in (aten.full.default, aten.scalar_tensor.default, aten.zeros.default,
                  aten.ones.default, aten.empty.memory_format, aten.full_like.default,
                  aten.ones_like.default):
        return _full(emit, node)
    if target in (aten.eye.default, aten.eye.m):
        # The identity: ones on the real part's diagonal, an exact zero imaginary part.
        val = node.meta["val"]
        kwargs = {**kwargs, "dtype": _PART_DTYPE[val.dtype]}
        return emit(target, *args, **kwargs), emit(aten.full.default, list(val.shape), 0.0,
                                                   dtype=_PART_DTYPE[val.dtype])
    if target in _PARTWISE:
        return _partwise(emit, node, parts)
    raise _Unsupported("")


def _like(emit: _Emitter, node: Node, pair: tuple[Any, Any]) -> tuple[Node, Node]:
    """A result pair as tensors of the node's shape (a real operand broadcast
    against a complex one: both parts must have the result's shape)."""
    val = node.meta["val"]
    out = []
    for part in pair:
        if not isinstance(part, Node) or tuple(part.meta["val"].shape) != tuple(val.shape):
            full = emit(aten.full.default, list(val.shape), 0.0, dtype=_PART_DTYPE[val.dtype])
            part = full if part is None else emit.add(full, part)
        out.append(part)
    return out[0], out[1]


def _complex_mul(emit: _Emitter, a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
    (ar, ai), (br, bi) = a, b
    return (emit.sub(emit.mul(ar, br), emit.mul(ai, bi)),
            emit.add(emit.mul(ar, bi), emit.mul(ai, br)))


def _norm2(emit: _Emitter, pair: tuple[Any, Any]) -> Any:
    real, imag = pair
    return emit.add(emit.mul(real, real), emit.mul(imag, imag))


def _reciprocal(emit: _Emitter, pair: tuple[Any, Any]) -> tuple[Any, Any]:
    """1 / z = conj(z) / |z|²."""
    real, imag = pair
    scale = _norm2(emit, pair)
    if isinstance(scale, Node):
        scale = emit(aten.reciprocal.default, scale)
    else:
        scale = 1.0 / scale
    return emit.mul(real, scale), emit.neg(emit.mul(imag, scale))


def _convert(emit: _Emitter, node: Node, parts: dict) -> Any:
    """Dtype conversions into, out of and between complex dtypes."""
    source = node.args[0]
    dtype = node.args[1] if len(node.args) > 1 else node.kwargs.get("dtype")
    val = node.meta["val"]
    if not isinstance(dtype, torch.dtype):
        dtype = val.dtype
    real, imag = _operand(parts, source)
    if dtype.is_complex:
        part_dtype = _PART_DTYPE[dtype]
        real = emit(prims.convert_element_type.default, real, part_dtype)
        if imag is None:
            return real, None
        return real, emit(prims.convert_element_type.default, imag, part_dtype)
    # complex -> real keeps the real part (torch warns that it discards the imaginary one).
    return emit(prims.convert_element_type.default, real, dtype)


def _full(emit: _Emitter, node: Node) -> tuple[Any, Any]:
    val = node.meta["val"]
    value = {aten.zeros.default: 0, aten.ones.default: 1, aten.ones_like.default: 1,
             aten.empty.memory_format: 0}.get(node.target)
    if value is None:
        value = node.args[1] if node.target in (aten.full.default, aten.full_like.default) \
            else node.args[0]
    value = complex(value)
    dtype = _PART_DTYPE[val.dtype]
    return tuple(emit(aten.full.default, list(val.shape), p, dtype=dtype)
                 for p in (value.real, value.imag))


def _partwise(emit: _Emitter, node: Node, parts: dict) -> Any:
    """``node``'s op on each part (a real float operand is its own real part
    and a zero imaginary one); complex dtype arguments become the part dtype."""
    target = node.target
    if target is operator.getitem:
        pieces = parts[node.args[0]]
        return pieces[node.args[1]]
    val = node.meta["val"]

    def pick(index: int):
        def substitute(a):
            if isinstance(a, Node) and a in parts:
                part = parts[a][index]
                if part is None or not isinstance(part, Node):
                    part = _materialize(emit, parts[a], a)[index]
                return part
            if isinstance(a, Node) and index == 1 and _is_float(a):
                return emit(aten.zeros_like.default, a)
            if isinstance(a, torch.dtype) and a.is_complex:
                return _PART_DTYPE[a]
            if isinstance(a, complex):
                return a.imag if index else a.real
            return a
        return substitute

    results = []
    for index in (0, 1):
        substitute = pick(index)
        args = torch.fx.node.map_aggregate(node.args, substitute)
        kwargs = torch.fx.node.map_aggregate(dict(node.kwargs), substitute)
        if target is aten.constant_pad_nd.default and index == 1:
            # A real padding value v is v + 0j: the imaginary part pads with 0.
            if len(args) > 2 and isinstance(node.args[2], (int, float)):
                args = (*args[:2], 0.0, *args[3:])
            if isinstance(node.kwargs.get("value"), (int, float)):
                kwargs["value"] = 0.0
        results.append(emit(target, *args, **kwargs))
    if isinstance(val, (list, tuple)):  # several complex results: each piece a pair
        pieces = []
        for k in range(len(val)):
            pieces.append(tuple(emit(operator.getitem, r, k) for r in results))
        return pieces
    return results[0], results[1]


def _is_float(node: Node) -> bool:
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.dtype.is_floating_point
