"""Exceptions raised while exporting a model."""

from __future__ import annotations

from nova.compiler.errors import NovaError


class NovaExportError(NovaError, ValueError):
    """The model's call signature has no Nova program form (a non-tensor,
    non-scalar input such as a KV-cache object, a buffer the model updates in
    place...); the message says which argument and what to do instead."""
