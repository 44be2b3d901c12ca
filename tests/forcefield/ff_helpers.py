"""Builders for force-field sections in the JSON interchange form (forcefield.md §1.1).

Imported by the tests of this directory (pytest puts it on ``sys.path``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parents[1] / "fixtures" / "schema" / "core"
FF_FIXTURES = FIXTURES / "forcefield"


def fixture(name: str) -> dict[str, Any]:
    """A force-field fixture by file stem (``valid-charmm``)."""
    data: dict[str, Any] = json.loads((FF_FIXTURES / f"{name}.json").read_text())
    return data


def _shape(values: Any) -> list[int]:
    shape = [len(values)]
    first = next((v for v in values if v is not None), None)
    while isinstance(first, list):
        shape.append(len(first))
        first = first[0] if first else None
    return shape


def _leaf(values: Any) -> Any:
    for v in values:
        while isinstance(v, list):
            v = v[0] if v else None
        if v is not None:
            return v
    return None


def col(values: list[Any], dtype: str | None = None, **extra: Any) -> dict[str, Any]:
    """A column; ``None`` entries become null rows (validity ``false``, placeholder value)."""
    leaf = _leaf(values)
    if dtype is None:
        dtype = "string" if isinstance(leaf, str) or leaf is None else "f64"
    shape = _shape(values)
    placeholder: Any = "" if dtype == "string" else 0
    if len(shape) > 1:
        placeholder = _fill(shape[1:], placeholder)
    if dtype == "f64":
        placeholder = _floats(placeholder)
    out: dict[str, Any] = {
        "dtype": dtype,
        "shape": shape,
        "values": [placeholder if v is None else v for v in values],
    }
    if any(v is None for v in values):
        out["validity"] = [v is not None for v in values]
    out.update(extra)
    return out


def _fill(shape: list[int], value: Any) -> Any:
    return [_fill(shape[1:], value) for _ in range(shape[0])] if shape else value


def _floats(value: Any) -> Any:
    return [_floats(v) for v in value] if isinstance(value, list) else float(value)


def table(**columns: Any) -> dict[str, Any]:
    """A block: each keyword is a column dict or a list of values (see :func:`col`)."""
    built = {n: c if isinstance(c, dict) else col(c) for n, c in columns.items()}
    count = built["name"]["shape"][0] if "name" in built else 0
    if built:
        count = next(iter(built.values()))["shape"][0]
    return {"count": count, "columns": built}


def section(
    styles: list[Any],
    tables: dict[str, Any],
    *,
    units: Any = None,
    name: str = "test",
    **document: Any,
) -> dict[str, Any]:
    """A section; a style given as ``"bond.harmonic"`` or ``("bond", "harmonic", {params})``."""
    entries = []
    for style in styles:
        if isinstance(style, str):
            category, _, form = style.partition(".")
            entries.append({"category": category, "style": form})
        elif isinstance(style, tuple):
            entry = {"category": style[0], "style": style[1]}
            if len(style) > 2:
                entry.update(style[2])
            entries.append(entry)
        else:
            entries.append(style)
    return {
        "name": name,
        "units": {"preset": "real"} if units is None else units,
        "styles": entries,
        **document,
        "tables": copy.deepcopy(tables),
    }


def atoms(*names: str, **columns: Any) -> dict[str, Any]:
    """An ``atom.full`` table of the given type names (plus other columns)."""
    return table(name=list(names), **columns)


def pairs(rows: list[tuple[str, str, str]], **params: list[Any]) -> dict[str, Any]:
    """A pair table: ``rows`` = ``[(name, itom, jtom), ...]``, then parameter columns."""
    return table(
        name=[r[0] for r in rows],
        itom=[r[1] for r in rows],
        jtom=[r[2] for r in rows],
        **params,
    )
