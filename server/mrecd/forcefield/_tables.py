"""Style tables: the columns of each table and every rule on them (forcefield.md §3–§7,
§12.1 F10 and F13–F25)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from ..errors import InvalidRecord
from ..model import CANONICAL, Block, Column
from ._document import Style
from ._registry import ANNOTATIONS, CATEGORY_ARITY, ENDPOINT_COLUMNS

__all__ = ["Layout", "check_tables"]

_COEFFICIENT: Final = re.compile(r"^a(\d+)$")
_PER_TERM: Final = re.compile(r"^(k|periodicity|phase)\d+$")


@dataclass(frozen=True, slots=True)
class Layout:
    """How one style table's columns divide (§3.3–§3.6).

    Attributes
    ----------
    endpoints
        The endpoint columns present, ``itom`` first (empty for smirks-keyed tables).
    annotations
        Annotation columns present (``class``, ``element`` ...).
    params
        Every other column but ``name``: the per-type parameters, in stored order.
    """

    endpoints: tuple[str, ...]
    annotations: tuple[str, ...]
    params: tuple[str, ...]


def _where(style: Style, column: str | None = None) -> str:
    return f"forcefield/{style.block}" + (f"/{column}" if column else "")


def _one_per_row(style: Style, name: str, column: Column, rule: str) -> None:
    if column.trailing:
        raise InvalidRecord(
            f"{name!r} is one value per row ([T]); it has trailing axes {list(column.trailing)}"
            f" ({rule})",
            path=_where(style, name),
        )


def _check_name(style: Style, table: Block) -> None:
    column = table.get("name")
    if column is None:
        raise InvalidRecord("a style table needs a name column (F13, §3.3)", path=_where(style))
    if column.dtype != "string":
        raise InvalidRecord(
            f"name must be string, not {column.dtype} (F13, §3.3)", path=_where(style, "name")
        )
    _one_per_row(style, "name", column, "F13, §3.3")
    if column.validity is not None:
        row = int(np.flatnonzero(~column.validity)[0])
        raise InvalidRecord(
            f"name is never null; row {row} is (F13, §3.3)", path=_where(style, "name")
        )
    seen: set[str] = set()
    for name in column.values.tolist():
        if name in seen:
            raise InvalidRecord(
                f"type name {name!r} occurs twice; names are unique within a table (F13, §3.3)",
                path=_where(style, "name"),
            )
        seen.add(name)


def _expected_endpoints(style: Style, table: Block) -> tuple[str, ...]:
    present = tuple(c for c in ENDPOINT_COLUMNS if c in table)
    if style.endpoint_key == "smirks":
        if present:
            raise InvalidRecord(
                f"a smirks-keyed table has no endpoint columns; found {list(present)} (F14, §4)",
                path=_where(style),
            )
        return ()
    arity = CATEGORY_ARITY.get(style.category)
    if arity is not None:
        expected = ENDPOINT_COLUMNS[:arity]
        if present != expected:
            raise InvalidRecord(
                f"category {style.category!r} has arity {arity}: endpoint columns must be exactly"
                f" {list(expected)}, found {list(present)} (F14, §3.4)",
                path=_where(style),
            )
        return expected
    if present != ENDPOINT_COLUMNS[: len(present)]:
        raise InvalidRecord(
            f"the endpoint columns of category {style.category!r} must be a prefix of"
            f" {list(ENDPOINT_COLUMNS)}; found {list(present)} (F14, §5)",
            path=_where(style),
        )
    return present


def _check_string_column(
    style: Style, name: str, column: Column, *, nullable: bool, rule: str
) -> None:
    if column.dtype != "string":
        raise InvalidRecord(
            f"{name!r} must be string, not {column.dtype} ({rule})", path=_where(style, name)
        )
    _one_per_row(style, name, column, rule)
    if not nullable and column.validity is not None:
        row = int(np.flatnonzero(~column.validity)[0])
        raise InvalidRecord(
            f"{name!r} is never null; row {row} is ({rule})", path=_where(style, name)
        )


def _check_smirks(style: Style, table: Block) -> None:
    column = table.get("smirks")
    if column is None:
        raise InvalidRecord(
            "a smirks-keyed table needs a smirks column (F15, §4)", path=_where(style)
        )
    _check_string_column(style, "smirks", column, nullable=False, rule="F15, §4")


def _check_finite(style: Style, name: str, column: Column, rule: str) -> None:
    values = column.values if column.validity is None else column.values[column.validity]
    if values.size and not bool(np.isfinite(values).all()):
        raise InvalidRecord(
            f"{name!r} holds a non-finite value in a non-null row; a missing parameter is null,"
            f" never NaN ({rule})",
            path=_where(style, name),
        )


def _check_param(style: Style, name: str, column: Column) -> None:
    canonical = CANONICAL.get(name)
    if canonical is not None:
        if column.dtype != canonical:
            raise InvalidRecord(
                f"canonical key {name!r} must be {canonical}, not {column.dtype} (F17, §3.6)",
                path=_where(style, name),
            )
        _one_per_row(style, name, column, "F19, §3.7")
    elif column.dtype not in ("f64", "string"):
        raise InvalidRecord(
            f"parameter {name!r} must be f64 or string, not {column.dtype} (F17, §3.6)",
            path=_where(style, name),
        )
    elif column.dtype == "string":
        _one_per_row(style, name, column, "F19, §3.7")
    if 0 in column.trailing:
        raise InvalidRecord(
            f"array parameter {name!r} has a trailing axis of length 0 {list(column.shape)}"
            " (F20, §3.7)",
            path=_where(style, name),
        )
    if column.dtype == "f64":
        # §3.7 states finiteness for array columns (F21); scalars are an open
        # point (§15.5): refused too, since §3.6 forbids NaN as a sentinel.
        _check_finite(style, name, column, "F21, §3.6-§3.7")


def _check_grid(style: Style, table: Block) -> None:
    column = table.get("grid")
    if style.category != "cmap" or column is None:
        return
    trailing = column.trailing
    if column.dtype != "f64" or len(trailing) != 2 or trailing[0] != trailing[1] or trailing[0] < 2:
        raise InvalidRecord(
            f"a cmap grid is f64[T, N, N] with N >= 2; got {column.dtype}{list(column.shape)}"
            " (F22, §3.8)",
            path=_where(style, "grid"),
        )


def _check_nharmonic(style: Style, layout: Layout, count: int) -> None:
    if (style.category, style.style) != ("dihedral", "nharmonic"):
        return
    orders = sorted(int(m.group(1)) for p in layout.params if (m := _COEFFICIENT.match(p)))
    # One reading of "a gap" (§15.10): the coefficient columns themselves.
    # A null cell only makes that row unpriceable, like any null parameter.
    if orders != list(range(1, len(orders) + 1)) or (count and not orders):
        names = [f"a{n}" for n in orders]
        raise InvalidRecord(
            f"dihedral.nharmonic coefficients must be contiguous from a1; found {names}"
            " (F25, §7.2)",
            path=_where(style),
        )


def _cell(column: Column, row: int) -> Any:
    if column.validity is not None and not column.validity[row]:
        return None
    value = column.values[row]
    return value.tobytes() if isinstance(value, np.ndarray) else value


def _check_pair_restatements(style: Style, table: Block, layout: Layout) -> None:
    if style.category != "pair" or len(layout.endpoints) != 2 or table.count < 2:
        return
    itom = table["itom"].values.tolist()
    jtom = table["jtom"].values.tolist()
    params = [table[p] for p in layout.params]
    first: dict[tuple[str, str], int] = {}
    for row, (i, j) in enumerate(zip(itom, jtom, strict=True)):
        key = (i, j) if i <= j else (j, i)
        if key not in first:
            first[key] = row
            continue
        other = first[key]
        for name, column in zip(layout.params, params, strict=True):
            if _cell(column, row) != _cell(column, other):
                raise InvalidRecord(
                    f"rows {other} and {row} both price the pair {{{key[0]!r}, {key[1]!r}}} but"
                    f" differ in {name!r}; restatements must be equal (F23, §6 rule 3)",
                    path=_where(style, name),
                )


def _layout(style: Style, table: Block) -> Layout:
    endpoints = _expected_endpoints(style, table)
    for name in endpoints:
        _check_string_column(style, name, table[name], nullable=False, rule="F14, §3.4")
    annotations = tuple(c for c in table if c in ANNOTATIONS)
    for name in annotations:
        _check_string_column(style, name, table[name], nullable=True, rule="F17, §3.5")
    skip = {"name", *endpoints, *annotations}
    params = tuple(c for c in table if c not in skip)
    for name in params:
        _check_param(style, name, table[name])
    return Layout(endpoints, annotations, params)


def _check_table(style: Style, table: Block) -> Layout:
    if table.structural_shape is not None:
        raise InvalidRecord("a style table has no structural shape (§3.2)", path=_where(style))
    for name, column in table.items():
        if column.precision is not None:
            raise InvalidRecord(
                "force-field parameters are stored exactly: no column declares a precision"
                " (F18, §3.6)",
                path=_where(style, name),
            )
    _check_name(style, table)
    if style.endpoint_key == "smirks":
        _check_smirks(style, table)
    layout = _layout(style, table)
    _check_grid(style, table)
    _check_nharmonic(style, layout, table.count)
    _check_pair_restatements(style, table, layout)
    return layout


def _check_class_key(styles: Sequence[Style], tables: Mapping[str, Block]) -> None:
    keyed = next((s for s in styles if s.endpoint_key == "class"), None)
    if keyed is None:
        return
    for style in styles:
        if style.category == "atom" and "class" not in tables[style.block]:
            raise InvalidRecord(
                f"style {keyed.category}.{keyed.style} is class-keyed, so every atom table carries"
                f" class; {style.block} does not (F16, §4)",
                path=_where(style),
            )


def check_tables(styles: Sequence[Style], tables: Mapping[str, Block]) -> dict[str, Layout]:
    """Check every style's table; return ``{block name: Layout}``.

    Blocks no style names are unknown content: preserved, never checked.

    Raises
    ------
    InvalidRecord
        F10, F13–F23 and F25 of §12.1, naming the block, column and rule.
    """
    layouts: dict[str, Layout] = {}
    for style in styles:
        table = tables.get(style.block)
        if table is None:
            raise InvalidRecord(
                f"style ({style.category}, {style.style}) has no table {style.block!r} (F10, §2.5)",
                path=_where(style),
            )
        layouts[style.block] = _check_table(style, table)
    _check_class_key(styles, tables)
    return layouts


def per_term_columns(table: Block) -> list[str]:
    """Columns named as terms of a multi-term series (``k2``, ``periodicity3``, ``phase1``)."""
    return [c for c in table if _PER_TERM.match(c)]
