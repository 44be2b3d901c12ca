"""``mrecd_client`` imports only the model, the codecs, the errors, httpx and the standard library.

The force field is part of the model layer (``mrecd.forcefield`` holds the
``ForceField`` value type and imports no storage); the subprocess checks of
``tests/test_client_install.py`` confirm that nothing heavy loads at run time.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

CLIENT = Path(__file__).parents[2] / "client" / "mrecd_client"
#: mrecd._record: the Record value class (model and force field only), what collections hand back
ALLOWED = {"mrecd.model", "mrecd.codecs", "mrecd.errors", "mrecd.forcefield", "mrecd._record"}
THIRD_PARTY = {"httpx", "httpx_sse", "numpy"}


def imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def refused(modules: set[str]) -> set[str]:
    out = set()
    for module in modules:
        top = module.split(".")[0]
        if top == "mrecd":
            if not any(module == a or module.startswith(a + ".") for a in ALLOWED):
                out.add(module)
        elif top not in THIRD_PARTY and top not in sys.stdlib_module_names:
            out.add(module)
    return out


@pytest.mark.parametrize("path", sorted(CLIENT.glob("*.py")), ids=lambda p: p.name)
def test_the_client_imports_only_its_layers(path: Path) -> None:
    assert refused(imported(path)) == set()


def test_the_check_sees_a_refused_import() -> None:
    assert refused({"mrecd.api", "fastapi", "mrecd.model", "json"}) == {"mrecd.api", "fastapi"}
