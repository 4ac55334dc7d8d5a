"""Static bounds of every tile address in a program (docs/binary-format.md 7.1).

Registers get their values only from ``li``, ``salu``, ``chip_id`` and loop
induction variables (never from memory), so the range of every register at every
instruction is computable from the code alone. :func:`check_addresses` runs the
code once over abstract values: each register holds an affine form in the
induction variables of the enclosing loops plus an interval (``Value``), or
``None`` (not bounded); ``chip_id`` is the range of the program's chips, a loop's
induction variable ranges over the values it takes and a register written inside
a loop body is unbounded at the body's entry (its value from the previous
iteration is not tracked: loops carry no values, docs/isa.md 1.2); regions that
cannot run are skipped and both arms of an undecided ``if`` are joined. Every
tile operand's ``[lo, hi + extent)`` must then lie inside its memory space; if
that fails over the range of all chips, each chip is tried exactly (``chip_id`` a
constant) before rejecting. One pass over the words per try, linear in the code
size, with its own stack (no recursion: ``if`` has no nesting limit).
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence, Tuple

from nova.binary.isa import NO_TILE, Flag, Opcode, Tile

__all__ = ["AddressBounds", "check_addresses"]

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

_LI, _SALU, _CHIP_ID = int(Opcode.LI), int(Opcode.SALU), int(Opcode.CHIP_ID)
_LOOP, _IF, _ELSE = int(Opcode.LOOP), int(Opcode.IF), int(Opcode.ELSE)
_PEERED = (int(Opcode.DMA_COPY), int(Opcode.SEND), int(Opcode.RECV))
_WRITES_RD = (_LI, _SALU, _CHIP_ID, _LOOP)
# Field positions in WORD_DTYPE's tuples (docs/isa.md 3.1).
_OP, _KIND, _FLAGS, _RD, _RA, _RB, _RC, _RDST = 0, 2, 3, 5, 6, 7, 8, 9
_TA, _TB, _TC, _TD, _TARGET, _IMM0, _IMM1, _IMM2 = 10, 11, 12, 13, 15, 18, 19, 20
#: (tile slot position, address register position) of slots a, b, c, d.
_SLOTS = ((_TA, _RA), (_TB, _RB), (_TC, _RC), (_TD, _RDST))

#: A register's abstract value: ``(terms, lo, hi)`` means ``sum(c * iv for iv, c in
#: terms) + x`` for some ``lo <= x <= hi``, where ``iv`` names the induction variable
#: of an enclosing loop (by the LOOP's index); ``None`` means not bounded.
Value = Optional[Tuple[Tuple[Tuple[int, int], ...], int, int]]


class AddressBounds:
    """The highest byte any instruction may touch, per memory space (hbm, sram, acc)."""

    def __init__(self) -> None:
        self.high = [0, 0, 0]


def _const(v: int) -> Value:
    return ((), v, v)


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _interval_salu(kind: int, a: tuple[int, int], b: tuple[int, int]):
    """div, rem and mul of two plain intervals (docs/isa.md 2.1); None when unbounded."""
    if kind == 2:
        p = [x * y for x in a for y in b]
        return min(p), max(p)
    if kind == 3:  # truncating; a zero divisor faults at run time
        divisors = [d for d in (b[0], b[1], -1, 1) if b[0] <= d <= b[1] and d != 0]
        if not divisors:
            return None
        q = [_tdiv(x, d) for x in a for d in divisors]
        return min(q), max(q)
    m = max(abs(b[0]), abs(b[1])) - 1  # rem: the sign of the dividend, |r| < |b|
    if m < 0:
        return None
    return (0 if a[0] >= 0 else max(a[0], -m)), (0 if a[1] <= 0 else min(a[1], m))


class _Analysis:
    def __init__(self, words: list[tuple], tiles: Sequence[Tile], capacity: Sequence[int],
                 chips: int, fail: Callable[[int, str], Exception]) -> None:
        self.words, self.tiles, self.capacity = words, tiles, capacity
        self.chips, self.fail = chips, fail
        self.bounds = AddressBounds()
        self.written: dict[int, list[int]] = {}
        self.ranges: dict[int, tuple[int, int]] = {}  # induction variable -> [min, max]
        self.tile_info = [(int(t.space), t.extent_bytes) for t in tiles]
        self.checked_spans: set = set()  # (tile, address interval) pairs known to fit

    # -- the abstract domain --------------------------------------------------

    def span(self, v: Value) -> tuple[int, int] | None:
        """The interval of a value under the current induction-variable ranges."""
        if v is None:
            return None
        terms, lo, hi = v
        for iv, c in terms:
            a, b = self.ranges[iv]
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        return (lo, hi) if I64_MIN <= lo and hi <= I64_MAX else None

    def checked(self, v: Value) -> Value:
        return v if self.span(v) is not None else None

    def add(self, a: Value, b: Value, sign: int = 1) -> Value:
        if a is None or b is None:
            return None
        terms = dict(a[0])
        for iv, c in b[0]:
            terms[iv] = terms.get(iv, 0) + sign * c
        lo, hi = (a[1] + b[1], a[2] + b[2]) if sign > 0 else (a[1] - b[2], a[2] - b[1])
        return self.checked((tuple(sorted((k, c) for k, c in terms.items() if c)), lo, hi))

    def mul(self, a: Value, b: Value) -> Value:
        if a is None or b is None:
            return None
        if b[0] == () and b[1] == b[2]:
            a, b = b, a
        if a[0] == () and a[1] == a[2]:  # a constant scales the terms exactly
            k = a[1]
            lo, hi = sorted((k * b[1], k * b[2]))
            return self.checked((tuple((iv, k * c) for iv, c in b[0] if k), lo, hi))
        return self.interval(_interval_salu(2, self.span(a), self.span(b)))

    def interval(self, iv: tuple[int, int] | None) -> Value:
        if iv is None or iv[0] < I64_MIN or iv[1] > I64_MAX:
            return None
        return ((), iv[0], iv[1])

    def salu(self, kind: int, a: Value, b: Value) -> Value:
        if kind == 0:
            return self.add(a, b)
        if kind == 1:
            return self.add(a, b, -1)
        if kind == 2:
            return self.mul(a, b)
        d = self.span(self.add(a, b, -1)) if kind >= 5 else None  # a - b, for comparisons
        if kind in (5, 6) and d is not None:  # min, max: pick a side when it is decided
            if d[1] <= 0:
                return a if kind == 5 else b
            if d[0] >= 0:
                return b if kind == 5 else a
        if kind >= 7:
            if d is None:
                return ((), 0, 1)
            true = {7: d == (0, 0), 8: d[1] < 0 or d[0] > 0, 9: d[1] < 0, 10: d[1] <= 0}[kind]
            false = {7: d[1] < 0 or d[0] > 0, 8: d == (0, 0), 9: d[0] >= 0, 10: d[0] > 0}[kind]
            return _const(1) if true else _const(0) if false else ((), 0, 1)
        x, y = self.span(a), self.span(b)
        if x is None or y is None:
            return None
        if kind == 5:
            return ((), min(x[0], y[0]), min(x[1], y[1]))
        if kind == 6:
            return ((), max(x[0], y[0]), max(x[1], y[1]))
        return self.interval(_interval_salu(kind, x, y))

    def join(self, x: Value, y: Value) -> Value:
        if x == y:
            return x
        if x is None or y is None:
            return None
        if x[0] == y[0]:
            return (x[0], min(x[1], y[1]), max(x[2], y[2]))
        a, b = self.span(x), self.span(y)
        return None if a is None or b is None else ((), min(a[0], b[0]), max(a[1], b[1]))

    def forget(self, v: Value, iv: int) -> Value:
        """``v`` without the induction variable ``iv`` (its range goes to the offset)."""
        if v is None or all(k != iv for k, _ in v[0]):
            return v
        a, b = self.ranges[iv]
        c = dict(v[0])[iv]
        return self.checked((tuple(t for t in v[0] if t[0] != iv),
                             v[1] + min(c * a, c * b), v[2] + max(c * a, c * b)))

    # -- checks ---------------------------------------------------------------

    def check_tiles(self, i: int, w: tuple, regs: list) -> None:
        for slot, reg in _SLOTS:
            t = w[slot]
            if t == NO_TILE:
                continue
            value = regs[w[reg]]
            if value is not None and not value[0]:
                span = (value[1], value[2])  # no induction variable: the interval itself
            else:
                span = self.span(value)
            if (t, span) in self.checked_spans:
                continue
            if span is None:
                raise self.fail(i, f"the address of tile {'abcd'[slot - _TA]} (r{w[reg]}) "
                                   f"cannot be bounded statically (it depends on its own "
                                   f"value in an earlier loop iteration, or it overflows)")
            space, extent = self.tile_info[t]
            end = span[1] + extent
            cap = self.capacity[space]
            if span[0] < 0 or end > cap:
                tile = self.tiles[t]
                at = f"= {span[0]}" if span[0] == span[1] else f"in [{span[0]}, {span[1]}]"
                raise self.fail(i, f"tile {'abcd'[slot - _TA]} at {tile.space.name.lower()} "
                                   f"address r{w[reg]} {at} with extent {extent} bytes "
                                   f"reaches byte {end}, outside its capacity {cap} "
                                   f"(docs/isa.md 1.3)")
            if end > self.bounds.high[space]:
                self.bounds.high[space] = end
            self.checked_spans.add((t, span))

    def check_peer(self, i: int, w: tuple, regs: list) -> None:
        if w[_OP] == _PEERED[0] and not w[_FLAGS] & Flag.PEER:
            return
        peer = self.span(regs[w[_RC]])
        if peer is not None and (peer[1] < 0 or peer[0] >= self.chips):
            raise self.fail(i, f"peer chip r{w[_RC]} in [{peer[0]}, {peer[1]}] is never "
                               f"one of chips 0..{self.chips - 1}")

    # -- walking the code -----------------------------------------------------

    def run(self, start: int, end: int, regs: list, chip: Value) -> list:
        """Runs words [start, end) over ``regs`` (modified and returned). Loops and
        ifs nest without bound (ifs have no depth limit in the ISA), so the walk
        keeps its own stack of open regions instead of recursing."""
        words = self.words
        stack: list[list] = []  # open regions: [kind, region end, ...]
        pc = start
        while True:
            if stack and pc == stack[-1][1]:
                pc, regs = self.close(stack, regs)
                continue
            if pc >= end:
                return regs
            w = words[pc]
            op = w[_OP]
            if op == _LI:
                regs[w[_RD]] = _const(w[_IMM0])
            elif op == _SALU:
                regs[w[_RD]] = self.salu(w[_KIND], regs[w[_RA]], regs[w[_RB]])
            elif op == _CHIP_ID:
                regs[w[_RD]] = chip
            elif op == _LOOP:
                pc, regs = self.open_loop(stack, pc, w, regs)
                continue
            elif op == _IF:
                pc, regs = self.open_if(stack, pc, w, regs)
                continue
            elif w[_TA] != NO_TILE or w[_TB] != NO_TILE or w[_TC] != NO_TILE or w[_TD] != NO_TILE:
                self.check_tiles(pc, w, regs)
                if op in _PEERED:
                    self.check_peer(pc, w, regs)
            pc += 1

    def body_writes(self, start: int, end: int) -> list[int]:
        regs = self.written.get(start)
        if regs is None:
            regs = sorted({w[_RD] for w in self.words[start + 1:end] if w[_OP] in _WRITES_RD})
            self.written[start] = regs
        return regs

    def open_loop(self, stack: list, pc: int, w: tuple, regs: list):
        """Enters a loop body; returns (next pc, registers at the body's entry)."""
        flags = w[_FLAGS]
        bound = lambda flag, reg, imm: self.span(regs[w[reg]]) if flags & flag \
            else (w[imm], w[imm])  # noqa: E731
        lb = bound(Flag.LB_REG, _RA, _IMM0)
        ub = bound(Flag.UB_REG, _RB, _IMM1)
        step = bound(Flag.STEP_REG, _RC, _IMM2)
        end = w[_TARGET]
        if lb is not None and ub is not None and lb[0] >= ub[1]:
            return end + 1, regs  # the body never runs
        ind = w[_RD]
        body = list(regs)
        written = self.body_writes(pc, end)
        for r in written:
            body[r] = None
        if lb is None or ub is None or ind in written:
            # A body that writes its own induction variable steers the loop (ENDLOOP
            # adds the step to whatever it holds): its values are not [lb, ub) then.
            body[ind] = None
        else:
            top = ub[1] - 1
            if lb[0] == lb[1] and ub[0] == ub[1] and step is not None and step[0] == step[1] > 0:
                top = lb[0] + (top - lb[0]) // step[0] * step[0]  # the last value it takes
            self.ranges[pc] = (lb[0], top)
            body[ind] = (((pc, 1),), 0, 0)
        stack.append(["loop", end, pc, regs, lb, ub, step, ind])
        return pc + 1, body

    def open_if(self, stack: list, pc: int, w: tuple, regs: list):
        """Enters the first arm of an ``if`` that may run."""
        cond = self.span(regs[w[_RA]])
        target = w[_TARGET]
        has_else = self.words[target][_OP] == _ELSE
        endif = self.words[target][_TARGET] if has_else else target
        may_then = cond is None or cond != (0, 0)
        may_else = cond is None or cond[0] <= 0 <= cond[1]
        frame = ["if", target, endif, regs, has_else, may_else, []]
        if may_then and not may_else:  # decided: no copy to keep (deep nests stay small)
            frame[3] = None
            stack.append(frame)
            return pc + 1, regs
        if may_then:
            stack.append(frame)
            return pc + 1, list(regs)
        if has_else:  # only the else arm runs
            frame[1], frame[5] = endif, False
            stack.append(frame)
            return target + 1, list(regs)
        return endif + 1, regs

    def close(self, stack: list, regs: list):
        """Leaves the innermost open region at its end: (next pc, registers)."""
        frame = stack[-1]
        if frame[0] == "loop":
            stack.pop()
            _, loop_end, pc, entry, lb, ub, step, ind = frame
            after = regs
            if pc in self.ranges:
                # Only the body's registers and the induction variable can hold
                # it: the others kept their values from before the loop.
                after = list(regs)
                for r in (*self.body_writes(pc, loop_end), ind):
                    after[r] = self.forget(after[r], pc)
                del self.ranges[pc]
            may_skip = lb is None or ub is None or lb[1] >= ub[0]
            last = (None if ub is None or step is None or step[1] <= 0
                    else self.interval((ub[0], ub[1] - 1 + step[1])))
            after[ind] = self.join(entry[ind], last) if may_skip else last
            if may_skip:
                after = [self.join(x, y) for x, y in zip(after, entry)]
            return loop_end + 1, after
        _, region_end, endif, entry, has_else, may_else, states = frame
        states.append(regs)
        if region_end != endif and may_else and has_else:  # the then arm ended: run else
            frame[1], frame[5] = endif, False
            return region_end + 1, list(entry)
        stack.pop()
        if may_else and not has_else:
            states.append(entry)
        joined = states[0]
        for other in states[1:]:
            joined = [self.join(x, y) for x, y in zip(joined, other)]
        return endif + 1, joined


def check_addresses(words: list[tuple], tiles: Sequence[Tile], target: Mapping[str, object],
                    chip_set: Sequence[int], fail: Callable[[int, str, int | None], Exception]
                    ) -> AddressBounds:
    """Checks every tile address of one program (``words`` as ``WORD_DTYPE.tolist()``)
    run by the chips ``chip_set``; ``fail(index, rule, chip)`` builds the error
    (``chip`` None when the rule breaks on every chip). Returns the highest bytes
    touched."""
    capacity = (target["hbm_bytes"], target["sram_bytes"], target["acc_bytes"])
    chips = int(target["chips"])
    regs = [_const(0)] * 256  # every register starts at 0
    whole = ((), min(chip_set), max(chip_set))

    class _Found(Exception):
        def __init__(self, index: int, rule: str) -> None:
            self.index, self.rule = index, rule

    analysis = _Analysis(words, tiles, capacity, chips, lambda i, m: _Found(i, m))
    try:
        analysis.run(0, len(words), list(regs), whole)
        return analysis.bounds
    except _Found as found:
        first = found
    uses_chip = any(w[_OP] == _CHIP_ID for w in words)
    if not uses_chip or whole[1] == whole[2]:
        raise fail(first.index, first.rule, None)
    # Exact per chip: chip_id-dependent addresses and branches become constants.
    high = [0, 0, 0]
    for c in chip_set:
        exact = _Analysis(words, tiles, capacity, chips, lambda i, m: _Found(i, m))
        try:
            exact.run(0, len(words), list(regs), _const(c))
        except _Found as found:
            raise fail(found.index, found.rule, c) from None
        high = [max(x, y) for x, y in zip(high, exact.bounds.high)]
    bounds = AddressBounds()
    bounds.high = high
    return bounds
