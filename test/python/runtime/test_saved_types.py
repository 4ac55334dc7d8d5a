"""A saved program's call signature names the modules of its output types; the
nova command imports only packages that define such types (transformers,
torch, nova), so a crafted file cannot make it import arbitrary modules."""

import json
import sys

import pytest

from nova.runtime.binding import _load_spec
from nova.runtime.errors import NovaRuntimeError


def _spec_naming(type_name: str) -> str:
    return json.dumps([1, {"type": type_name, "context": "[\"a\"]",
                           "children_spec": [{"type": None, "context": None, "children_spec": []}]}])


def test_unlisted_module_is_not_imported(tmp_path, monkeypatch) -> None:
    (tmp_path / "nova_crafted_types.py").write_text("IMPORTED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(NovaRuntimeError, match="nova_crafted_types.Out"):
        _load_spec(_spec_naming("nova_crafted_types.Out"), import_types=True)
    assert "nova_crafted_types" not in sys.modules


def test_known_spec_loads() -> None:
    assert _load_spec(_spec_naming("builtins.dict")).num_children == 1
