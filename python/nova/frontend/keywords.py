"""Which keywords of ``nova.compile`` are the model's inputs.

``nova.compile(model, x, target=..., attention_mask=mask)`` mixes Nova's options
with the model's keyword inputs. A keyword that is not an option goes to the
model when the model's forward names it; when the forward also takes
``**kwargs`` (Hugging Face models do), any keyword goes to the model except one
that looks like a misspelt option. Anything else is an error naming the valid
options, never an input the model silently receives.
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any, Iterable

from nova.compiler.errors import NovaOptionError


def _signature(model: Any) -> inspect.Signature | None:
    function = getattr(model, "function", None) if type(model).__name__ == "FunctionModule" \
        else None
    target = function or getattr(model, "forward", model)
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return None


def check_model_keywords(entry: str, model: Any, keywords: Iterable[str],
                         options: Iterable[str]) -> None:
    """Raises NovaOptionError for a keyword of ``entry`` (``"nova.compile"``) that
    is neither one of its ``options`` nor an input of ``model``'s forward."""
    signature = _signature(model)
    if signature is None:
        return
    params = signature.parameters.values()
    named = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    open_ended = any(p.kind is p.VAR_KEYWORD for p in params)
    options = sorted(options)
    for key in keywords:
        if key in named:
            continue
        close = difflib.get_close_matches(key, options, n=1, cutoff=0.6)
        if open_ended and not close:
            continue
        guess = f" (did you mean {close[0]}=?)" if close else ""
        inputs = ", ".join(named) if named else "none"
        raise NovaOptionError(
            f"{entry}() got an unknown keyword {key!r}{guess}: it is neither one of "
            f"{entry}'s options ({', '.join(options)}) nor a keyword input of the "
            f"model's forward ({inputs})")
