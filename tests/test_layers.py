"""The storage seam holds: only ``mrecd.storage`` touches the file system for records.

No module of the Zarr binding, nor the record-facing API modules, imports
``os``, ``shutil``, ``fcntl``, ``pathlib`` or zarr's ``LocalStore``/``ZipStore``;
only ``mrecd.storage`` imports obstore.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SERVER = Path(__file__).parents[1] / "server" / "mrecd"
BANNED = {"os", "shutil", "fcntl", "pathlib", "obstore"}
BANNED_NAMES = {("zarr.storage", "LocalStore"), ("zarr.storage", "ZipStore")}
SEAMED = [
    *sorted((SERVER / "bindings" / "zarr").glob("*.py")),
    *(
        SERVER / "api" / n
        for n in ("_record.py", "_runsurface.py", "_trajectory.py", "_validate.py")
    ),
]


def imports(path: Path) -> set[tuple[str, str | None]]:
    found: set[tuple[str, str | None]] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {(a.name, None) for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {(node.module, a.name) for a in node.names}
    return found


@pytest.mark.parametrize("path", SEAMED, ids=lambda p: p.name)
def test_no_file_system_calls_outside_the_storage_seam(path: Path) -> None:
    found = imports(path) - {("os", "PathLike")}  # a type, for signatures that accept paths
    assert not {m for m, _ in found if m.split(".")[0] in BANNED}, path
    assert not found & BANNED_NAMES, path


def test_only_storage_imports_obstore() -> None:
    for path in SERVER.rglob("*.py"):
        if "storage" in path.relative_to(SERVER).parts:
            continue
        assert not {m for m, _ in imports(path) if m.split(".")[0] == "obstore"}, path


def test_the_check_sees_a_banned_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nfrom zarr.storage import LocalStore\n")
    assert ("os", None) in imports(bad) and ("zarr.storage", "LocalStore") in imports(bad)


@pytest.mark.parametrize("path", sorted((SERVER / "api").glob("*.py")), ids=lambda p: p.name)
def test_api_uses_the_bindings_public_faces(path: Path) -> None:
    tree = ast.parse(path.read_text())
    private = [
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.module.startswith("bindings.")
        and any(part.startswith("_") for part in node.module.split("."))
    ]
    assert private == [], f"{path.name} imports private binding modules {private}"
