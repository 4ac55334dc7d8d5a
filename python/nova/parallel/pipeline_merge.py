"""Per-chip programs of a pipeline schedule, assembled at the ``nova``
(tiles) level from separately lowered bodies.

Each body (a stage's F, B, B_acc or U, :mod:`nova.parallel.pipeline_bodies`)
is lowered alone with ``nova-lower-to-tiles`` and printed with
``--mlir-print-local-scope``. :func:`parse_body` reads its one function;
:class:`ChipFunction` then writes chip ``c``'s ``func.func`` by inlining the
bodies in schedule order (each use gets its own SSA names, the body's
arguments replaced by the values the schedule feeds it) with the
``nova.send`` / ``nova.recv`` / ``nova.wait`` between them. Every chip's
function has the same signature (the binary has one I/O table);
``nova.aliasing_output`` on the parameters and optimizer state makes the
updates in place on each chip. The module then goes through
``nova-tiles-to-isa`` (``nova-verify-collectives`` checks every send has
its receive) as the forward pipeline's ``nova-merge-stages`` output does.

Textual inlining, not a pass: the bodies are one-block functions of
buffers, MLIR prints one op per line with SSA names ``%[A-Za-z0-9_$.]+``
(nested block arguments numbered after the function's), and globals are
renamed per body, so a rename of ``%name`` and ``@name`` tokens is exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nova.parallel.errors import PipelineError

_VALUE = re.compile(r"%([A-Za-z0-9_$.]+)")
_SYMBOL = re.compile(r"@([A-Za-z0-9_$.]+)")


@dataclass
class LoweredBody:
    """One lowered body: its module header, globals, signature and ops."""

    header: str
    globals: list[str]
    arg_types: list[str]
    result_types: list[str]
    lines: list[str]
    returns: list[str]


def _split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets and strings."""
    parts, depth, start, quoted = [], 0, 0, False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            # ``->`` inside an affine map is not a closing bracket.
            if not (ch == ">" and i and text[i - 1] == "-"):
                depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def _matching(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``start``."""
    pairs = {"(": ")", "<": ">", "[": "]", "{": "}"}
    depth, quoted = 0, False
    for i in range(start, len(text)):
        ch = text[i]
        if ch == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif ch in pairs:
            depth += 1
        elif ch in pairs.values() and not (ch == ">" and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return i
    raise PipelineError("unbalanced brackets in a lowered body")


def _first_type(text: str) -> str:
    """The type at the start of ``text`` (up to a top-level space)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}" and not (ch == ">" and text[i - 1] == "-"):
            depth -= 1
        elif ch == " " and depth == 0:
            return text[:i]
    return text


def parse_body(text: str) -> LoweredBody:
    lines = text.splitlines()
    header = next(l for l in lines if l.startswith("module"))
    start = next(i for i, l in enumerate(lines) if l.startswith("  func.func @"))
    signature = lines[start]
    open_ = signature.index("(")
    close = _matching(signature, open_)
    arg_types = []
    for piece in _split_top(signature[open_ + 1:close]):
        arg_types.append(_first_type(piece.split(": ", 1)[1]))
    rest = signature[close + 1:].strip()
    result_types: list[str] = []
    if rest.startswith("->"):
        rest = rest[2:].strip()
        if rest.startswith("("):
            end = _matching(rest, 0)
            result_types = _split_top(rest[1:end])
        else:
            result_types = [_first_type(rest)]
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("  }"))
    body = lines[start + 1:end]
    ret = [i for i, l in enumerate(body) if l.startswith("    return")]
    if len(ret) != 1 or ret[0] != len(body) - 1:
        raise PipelineError("a lowered body must be one block ending in its return")
    ret_line = body[-1].strip()[len("return"):].strip()
    operands = ret_line.split(" : ", 1)[0] if " : " in ret_line else ""
    returns = [o.strip() for o in operands.split(",") if o.strip()]
    globals_ = [l for l in lines[:start] + lines[end + 1:] if l.startswith("  memref.global")]
    return LoweredBody(header, globals_, arg_types, result_types, body[:-1], returns)


@dataclass
class ChipFunction:
    """Chip ``chip``'s function, written op by op (see the module docstring)."""

    chip: int
    arg_types: list[str]
    result_types: list[str]
    donated: dict[int, int]
    lines: list[str] = field(default_factory=list)
    uses: int = 0
    pending: list[str] = field(default_factory=list)

    def arg(self, k: int) -> str:
        return f"%arg{k}"

    def inline(self, body: LoweredBody, prefix: str, args: list[str]) -> list[str]:
        """Inlines ``body`` with its arguments bound to ``args`` (SSA names);
        returns the SSA names of its results."""
        if len(args) != len(body.arg_types):
            raise PipelineError(f"{prefix}: body takes {len(body.arg_types)} arguments, "
                                f"given {len(args)}")
        self.uses += 1
        tag = f"u{self.uses}_"
        n = len(args)

        def value(match: re.Match) -> str:
            name = match.group(1)
            if name.startswith("arg") and name[3:].isdigit() and int(name[3:]) < n:
                return args[int(name[3:])]
            return f"%{tag}{name}"

        def symbol(match: re.Match) -> str:
            return f"@{prefix}{match.group(1)}"

        for line in body.lines:
            self.lines.append(_SYMBOL.sub(symbol, _VALUE.sub(value, line)))
        return [_VALUE.sub(value, r) for r in body.returns]

    def alloc(self, type_: str) -> str:
        self.uses += 1
        name = f"%buf{self.uses}"
        self.lines.append(f"    {name} = memref.alloc() {{alignment = 64 : i64}} : {type_}")
        return name

    def concat(self, values: list[str], type_: str, dim: int = 0) -> str:
        """A new buffer of ``type_`` holding ``values`` (equal buffers of an
        identity layout) one after the other along dimension ``dim``: DMA
        copies into its slices (strided views when ``dim`` is not the
        outermost), started together."""
        buffer = self.alloc(type_)
        shape, element, space = _memref(type_)
        if not 0 <= dim < len(shape) or shape[dim] % len(values):
            raise PipelineError(f"{type_} does not split into {len(values)} along "
                                f"dimension {dim}")
        size = shape[dim] // len(values)
        part_shape = [size if d == dim else n for d, n in enumerate(shape)]
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * shape[d + 1]
        part = "x".join(str(d) for d in part_shape)
        plain = f"memref<{part}x{element}, {space}>"
        sizes = ", ".join(str(d) for d in part_shape)
        ones = ", ".join(["1"] * len(shape))
        tokens = []
        for i, value in enumerate(values):
            self.uses += 1
            view = f"%cat{self.uses}"
            offsets = ", ".join(str(i * size if d == dim else 0) for d in range(len(shape)))
            layout = (f"strided<[{', '.join(str(t) for t in strides)}], "
                      f"offset: {i * size * strides[dim]}>")
            sliced = f"memref<{part}x{element}, {layout}, {space}>"
            self.lines.append(f"    {view} = memref.subview {buffer}[{offsets}] [{sizes}] "
                              f"[{ones}] : {type_} to {sliced}")
            token = f"%cp{self.uses}"
            self.lines.append(f"    {token} = nova.dma_start {value}, {view} : {plain} -> "
                              f"{sliced}")
            tokens.append(token)
        self.lines.append(f"    nova.wait {', '.join(tokens)}")
        return buffer

    def send(self, value: str, type_: str, peer: int, channel: int) -> None:
        self.uses += 1
        token = f"%send{self.uses}"
        self.lines.append(f"    {token} = nova.send ins({value} : {type_}) to {peer} "
                          f"channel {channel}")
        self.pending.append(token)

    def recv(self, type_: str, peer: int, channel: int) -> str:
        buffer = self.alloc(type_)
        self.uses += 1
        token = f"%recv{self.uses}"
        self.lines.append(f"    {token} = nova.recv outs({buffer} : {type_}) from {peer} "
                          f"channel {channel}")
        self.lines.append(f"    nova.wait {token}")
        return buffer

    def wait_sends(self, keep: int = 0) -> None:
        """Waits for the sends issued before the last ``keep``."""
        done = self.pending[:len(self.pending) - keep] if keep else self.pending
        if done:
            self.lines.append(f"    nova.wait {', '.join(done)}")
        self.pending = self.pending[len(done):]

    def text(self, results: list[str]) -> str:
        self.wait_sends()
        args = []
        for k, t in enumerate(self.arg_types):
            attr = (f" {{nova.aliasing_output = {self.donated[k]} : i64}}"
                    if k in self.donated else "")
            args.append(f"%arg{k}: {t}{attr}")
        res = ", ".join(self.result_types)
        head = (f"  func.func @chip{self.chip}({', '.join(args)}) -> ({res}) "
                f"attributes {{nova.chips = array<i64: {self.chip}>}} {{")
        ret = f"    return {', '.join(results)} : {res}"
        return "\n".join([head, *self.lines, ret, "  }"])


def _memref(type_: str) -> tuple[list[int], str, str]:
    """``memref<4x8xbf16, #nova.memory_space<hbm>>`` -> ([4, 8], "bf16", "#nova...")."""
    match = re.fullmatch(r"memref<((?:\d+x)*)(\w+), (#nova\.memory_space<\w+>)>", type_)
    if match is None:
        raise PipelineError(f"cannot concatenate buffers of type {type_}")
    dims = [int(d) for d in match.group(1).split("x") if d]
    if not dims:
        raise PipelineError(f"cannot concatenate scalars ({type_})")
    return dims, match.group(2), match.group(3)


def module_text(header: str, globals_: list[str], functions: list[str]) -> str:
    return "\n".join([header, *globals_, *functions, "}"]) + "\n"


def renamed_globals(body: LoweredBody, prefix: str) -> list[str]:
    return [_SYMBOL.sub(lambda m: f"@{prefix}{m.group(1)}", g) for g in body.globals]
