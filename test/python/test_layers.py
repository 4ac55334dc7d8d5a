"""Layers run one way: every import in python/nova goes to its own floor or one
below it (docs/architecture.md's floors table is the single source), and no module
imports another package's underscore names. Imports inside functions count, and
relative imports are resolved."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nova

ROOT = Path(nova.__file__).resolve().parent  # .../python/nova
DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def floors() -> dict[str, int]:
    """Package or module name -> floor, from the rows of the doc's floors table
    (``| <floor> | `nova.x`, `nova.y` | ...``)."""
    found: dict[str, int] = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for name in re.findall(r"`(nova(?:\.\w+)*)`", cells[1]):
                assert name not in found, f"{name} is on two floors of {DOC.name}"
                found[name] = int(cells[0])
    return found


def floor_of(module: str, table: dict[str, int]) -> tuple[int, str] | None:
    """The floor of the longest table name that is ``module`` or contains it."""
    best = None
    for name, floor in table.items():
        if (module == name or module.startswith(name + ".")) and (best is None or len(name) > len(best[1])):
            best = (floor, name)
    return best


def modules() -> list[tuple[str, str, Path]]:
    """(module name, its package, file) of every .py file under python/nova."""
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        package = ".".join(parts[:-1])
        if parts[-1] == "__init__":
            parts = parts[:-1]
            package = ".".join(parts)
        out.append((".".join(parts), package, path))
    return out


def imports(path: Path, package: str) -> list[tuple[int, str, str | None]]:
    """(line, module imported, name taken from it or None) of every import in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            found += [(node.lineno, base, a.name) for a in node.names]
    return [f for f in found if f[1] == "nova" or f[1].startswith("nova.")]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _package_of(module: str) -> str:
    """The package a module name belongs to (itself when it is a package)."""
    return module if (ROOT.parent / module.replace(".", "/")).is_dir() else module.rsplit(".", 1)[0]


def check() -> tuple[list[str], list[str]]:
    table = floors()
    upward, private = [], []
    for module, package, path in modules():
        mine = floor_of(module, table)
        assert mine is not None, f"{module} is on no floor of {DOC.name}: add its package there"
        for line, target, name in imports(path, package):
            full = target if name is None else f"{target}.{name}"
            theirs = floor_of(full, table) or floor_of(target, table)
            if theirs is not None and theirs[0] > mine[0]:
                upward.append(f"{module}:{line} imports {full} (floor {mine[0]} {mine[1]} -> "
                              f"floor {theirs[0]} {theirs[1]})")
            dotted = full.split(".")
            hidden = [p for p in dotted[1:] if _private(p)]
            if hidden and _package_of(".".join(dotted[: dotted.index(hidden[0])])) != package:
                private.append(f"{module}:{line} imports {full}")
    return upward, private


def test_the_floors_table_places_every_package():
    table = floors()
    assert table["nova.binary"] == 0 and table["nova.sim"] == 1 and table["nova.runtime"] == 2
    assert table["nova.compiler"] < table["nova.frontend"] < table["nova.parallel"]
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert {f"nova.{p}" for p in packages} <= set(table)


def test_no_import_runs_up_a_floor():
    upward, _ = check()
    assert upward == []


def test_no_module_imports_another_packages_private_names():
    _, private = check()
    assert private == []


def test_the_checker_sees_imports_in_functions_and_relative_ones(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from ..runtime.program import _x\n    import nova.cli\n")
    found = imports(source, "nova.sim")
    assert (2, "nova.runtime.program", "_x") in found and (3, "nova.cli", None) in found
