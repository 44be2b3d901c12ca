"""The import graph of the pure layers: the model imports nothing above it, and no cycles.

Read from the source with ``ast`` (every import statement, including the
deferred ones inside functions), so a cycle fails here even when Python's
import order happens to tolerate it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

import mrecd

PACKAGE = Path(mrecd.__file__).parent

#: Deferred or typing-only imports out of the model that are allowed: the
#: compatibility alias ``mrecd.model.Record`` for the record type's new home.
ALLOWED_DEFERRED = {("mrecd.model", "mrecd._record")}


@dataclass(frozen=True)
class Edge:
    """One import statement's target, and whether it runs when the module is imported."""

    source: str
    target: str
    eager: bool


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _edges(path: Path) -> list[Edge]:
    module, is_package = _module_name(path)
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[Edge] = []

    def visit(node: ast.AST, eager: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend(Edge(module, a.name, eager) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = ".".join(package[: len(package) - child.level + 1]) if child.level else ""
                if child.module:
                    target = f"{base}.{child.module}" if base else child.module
                    found.append(Edge(module, target, eager))
                else:
                    found.extend(Edge(module, f"{base}.{a.name}", eager) for a in child.names)
            deferred = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            typing_only = isinstance(child, ast.If) and _is_type_checking(child)
            visit(child, eager and not deferred and not typing_only)

    visit(ast.parse(path.read_text(), str(path)), True)
    return found


def _package_edges(*packages: str) -> list[Edge]:
    paths: list[Path] = []
    for name in packages:
        target = PACKAGE / name.replace(".", "/")
        paths.extend(
            sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]
        )
    return [e for p in paths for e in _edges(p) if e.target.startswith("mrecd")]


def _within(target: str, *packages: str) -> bool:
    return any(target == p or target.startswith(p + ".") for p in packages)


def _layer(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_the_model_imports_nothing_from_the_force_field() -> None:
    edges = _package_edges("model")
    assert edges, "the scan found no imports"
    assert [e for e in edges if _within(e.target, "mrecd.forcefield")] == []


def test_importing_the_model_loads_only_the_model_and_errors() -> None:
    edges = _package_edges("model")
    eager = [e for e in edges if e.eager and not _within(e.target, "mrecd.model", "mrecd.errors")]
    assert eager == []
    lazy = {
        (e.source, e.target) for e in edges if not _within(e.target, "mrecd.model", "mrecd.errors")
    }
    assert lazy <= ALLOWED_DEFERRED


def test_the_force_field_builds_on_the_model_only() -> None:
    edges = _package_edges("forcefield")
    assert any(_within(e.target, "mrecd.model") for e in edges if e.eager)
    allowed = ("mrecd.model", "mrecd.errors", "mrecd.forcefield")
    assert [e for e in edges if not _within(e.target, *allowed)] == []


def test_no_cycle_between_the_layers() -> None:
    graph: dict[str, set[str]] = {}
    for edge in _package_edges("model", "forcefield", "errors", "_record", "codecs"):
        allowed = (edge.source, edge.target) in ALLOWED_DEFERRED and not edge.eager
        if _layer(edge.source) != _layer(edge.target) and not allowed:
            graph.setdefault(_layer(edge.source), set()).add(_layer(edge.target))
    assert graph["mrecd._record"] >= {"mrecd.model", "mrecd.forcefield"}
    assert _cycle(graph) is None


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as a path, or ``None`` (depth-first search with colours)."""
    done: set[str] = set()

    def walk(node: str, trail: list[str]) -> list[str] | None:
        if node in trail:
            return [*trail[trail.index(node) :], node]
        if node in done:
            return None
        for target in sorted(graph.get(node, ())):
            cycle = walk(target, [*trail, node])
            if cycle:
                return cycle
        done.add(node)
        return None

    return next((c for n in sorted(graph) if (c := walk(n, [])) is not None), None)


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None


@pytest.mark.parametrize("name", ["Record", "SUBSTANTIVE_SECTIONS"])
def test_the_record_type_keeps_its_old_name(name: str) -> None:
    from mrecd import _record

    assert getattr(mrecd.model, name) is getattr(_record, name)
    assert mrecd.Record is _record.Record
    with pytest.raises(AttributeError):
        mrecd.model.Nothing  # type: ignore[attr-defined]  # noqa: B018
