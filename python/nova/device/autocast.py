"""``torch.autocast("nova")``: filled in below."""
from __future__ import annotations


def install() -> None:
    pass
