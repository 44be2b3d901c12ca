"""Only ``mrecd.cli`` imports the service, and the service reaches storage through the API."""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).parents[2] / "server" / "mrecd"
SERVICE = SERVER / "service"


def _modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found |= {base} | {
                f"{base}.{a.name}" if node.module else base + a.name for a in node.names
            }
    return found


def test_only_the_cli_imports_the_service() -> None:
    for path in SERVER.rglob("*.py"):
        if SERVICE in path.parents or path.name == "cli.py":
            continue
        assert not any("service" in m.split(".") for m in _modules(path)), path


def test_the_service_uses_neither_bindings_nor_storage() -> None:
    for path in SERVICE.rglob("*.py"):
        banned = {
            m for m in _modules(path) if {"bindings", "storage", "zarr", "lmdb"} & set(m.split("."))
        }
        assert not banned, (path, banned)


def test_the_check_sees_the_cli_import() -> None:
    assert any("service" in m.split(".") for m in _modules(SERVER / "cli.py"))
