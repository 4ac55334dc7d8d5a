"""A compile's stages by name, each read as text.

The tools hand the tiled and the ISA stage to each other as MLIR bytecode
(:class:`~nova.compiler.driver.Bytecode`); such a stage is printed as text the
first time someone reads it, so a compile nobody inspects never prints them.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any, Iterable

from nova.compiler.driver import Bytecode, run_opt


class StageTexts(MutableMapping):
    """``{stage name: text}`` (the ``binary`` stage: its bytes) whose bytecode
    values are printed on first read."""

    def __init__(self, items: Iterable[tuple[str, Any]] | dict[str, Any] = ()) -> None:
        self._items: dict[str, Any] = dict(items)

    def __getitem__(self, name: str) -> Any:
        value = self._items[name]
        if isinstance(value, Bytecode):
            value = self._items[name] = run_opt(value)
        return value

    def raw(self, name: str) -> Any:
        """The stage as kept (bytecode not printed): for handing it to a tool."""
        return self._items[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self._items[name] = value

    def __delitem__(self, name: str) -> None:
        del self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"StageTexts({list(self._items)})"
