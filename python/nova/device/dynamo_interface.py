"""Dynamo's device interface for ``nova``: filled in below."""
from __future__ import annotations


def install() -> None:
    pass
