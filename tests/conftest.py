"""Shared test helpers: where the fixtures live, and small frame factories."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA = FIXTURES / "schema"


def schema_cases(kind: str, prefix: str) -> list[Path]:
    """The fixture files ``schema/<kind>/<prefix>-*.json`` (``prefix`` is valid or invalid)."""
    return sorted((SCHEMA / kind).glob(f"{prefix}-*.json"))


def load_json(path: Path) -> Any:
    """Parse a fixture file."""
    return json.loads(path.read_text())


@pytest.fixture
def tmp_store(tmp_path: Path) -> Iterator[Path]:
    """A fresh directory for a store."""
    root = tmp_path / "store"
    root.mkdir()
    yield root
