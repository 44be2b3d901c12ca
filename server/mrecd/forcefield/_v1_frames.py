"""Version-1 frames: per-instance parameters and out-of-plane rows converted with the
force field they link to (forcefield.md §11.3).

A relation row's parameter columns convert as the same-named parameter of the
style(s) its row resolves to; columns named as angle values convert in every
style, resolved or not. The force field is the *version-1* section as stored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from ..errors import InvalidRecord
from ..model import CANONICAL, ENDPOINTS, Block, Column, Frame
from ._names import block_name
from ._v1 import _RULES, DEGREES_PER_RADIAN, _angle_unit, _Rule

__all__ = ["convert_v1_frame"]

_ANGLE_VALUE: Final = re.compile(r"^(theta0|chi0|phase\d*|phi[123])$")
_LINKING: Final = frozenset({*ENDPOINTS, "type", "type_id", "style", *CANONICAL})
_OUT_OF_PLANE: Final = frozenset({"mmff_oop", "uff_inversion"})
_OUT_OF_PLANE_MARKERS: Final = ("koop", "K")  # MMFF, UFF


def _styles_by_category(
    document: Mapping[str, Any] | None, tables: Mapping[str, Block] | None
) -> dict[str, list[tuple[str, frozenset[str]]]]:
    """``{category: [(style, names in its table), ...]}`` of a version-1 section."""
    out: dict[str, list[tuple[str, frozenset[str]]]] = {}
    entries = (document or {}).get("styles")
    for entry in entries if isinstance(entries, list) else []:
        category = entry.get("category") if isinstance(entry, Mapping) else None
        style = entry.get("style") if isinstance(entry, Mapping) else None
        if not isinstance(category, str) or not isinstance(style, str):
            continue
        table = (tables or {}).get(block_name(category, style))
        names = table.get("name") if table is not None else None
        held = (
            frozenset(names.values.tolist())
            if names is not None and names.dtype == "string"
            else frozenset()
        )
        out.setdefault(category, []).append((style, held))
    return out


def _unit(document: Mapping[str, Any] | None) -> str | None:
    if document is None:
        return "radian"  # no force field in the record: U is radian (§11.3)
    units = document.get("units")
    return _angle_unit(units) if isinstance(units, Mapping) else None


def _steps(rule: _Rule | None, name: str, unit: str | None) -> tuple[float, ...]:
    steps: list[float] = []
    if rule is not None and name in rule.halve:
        steps.append(0.5)
    if rule is not None and unit == "degree":
        steps.extend([DEGREES_PER_RADIAN] * rule.per_angle.get(name, 0))
    if unit == "radian" and _ANGLE_VALUE.match(name):
        steps.append(DEGREES_PER_RADIAN)
    return tuple(steps)


def _strings(block: Block, name: str) -> list[str | None]:
    column = block.get(name)
    if column is None or column.dtype != "string":
        return [None] * block.count
    values: list[str | None] = column.values.tolist()
    if column.validity is not None:
        values = [v if ok else None for v, ok in zip(values, column.validity.tolist(), strict=True)]
    return values


class _Relations:
    """One relation block of a version-1 frame, converted row by row."""

    def __init__(
        self,
        name: str,
        block: Block,
        category: str,
        styles: list[tuple[str, frozenset[str]]],
        unit: str | None,
    ) -> None:
        self.name, self.block, self.category, self.unit = name, block, category, unit
        types, chosen = _strings(block, "type"), _strings(block, "style")
        self.resolved: list[tuple[str, ...]] = [
            (c,) if c is not None else tuple(s for s, held in styles if t is not None and t in held)
            for t, c in zip(types, chosen, strict=True)
        ]
        self._plans: dict[tuple[tuple[str, ...], str], tuple[float, ...]] = {}

    def _row_steps(self, row: int, column: str) -> tuple[float, ...]:
        resolved = self.resolved[row]
        plan = self._plans.get((resolved, column))
        if plan is None:
            plan = self._plans[(resolved, column)] = self._plan(row, resolved, column)
        return plan

    def _plan(self, row: int, resolved: tuple[str, ...], column: str) -> tuple[float, ...]:
        rules = [_RULES.get((self.category, s)) for s in resolved]
        for style, rule in zip(resolved, rules, strict=True):
            if rule is not None and column in rule.renames:
                raise InvalidRecord(
                    f"row {row} resolves to {self.category}.{style}, which renames {column!r}:"
                    " a relation cell cannot be renamed (§11.3)",
                    path=f"{self.name}/{column}",
                )
        plans = {_steps(rule, column, self.unit) for rule in rules} or {
            _steps(None, column, self.unit)
        }
        if len(plans) > 1:
            raise InvalidRecord(
                f"row {row} resolves to styles {list(resolved)} that convert {column!r} differently"
                " (§11.3)",
                path=f"{self.name}/{column}",
            )
        return plans.pop()

    def _column(self, column: str, values: Column) -> Column:
        valid = (
            np.ones(self.block.count, dtype=bool) if values.validity is None else values.validity
        )
        plans = {row: self._row_steps(row, column) for row in np.flatnonzero(valid).tolist()}
        if not any(plans.values()):
            return values
        if values.dtype != "f64":
            raise InvalidRecord(
                f"a {values.dtype} column cannot be converted exactly (§11.3)",
                path=f"{self.name}/{column}",
            )
        out = np.array(values.values, dtype=np.float64)
        for row, steps in plans.items():
            for factor in steps:  # one multiplication per step, in order
                out[row] = out[row] * factor
        return Column(out, "f64", validity=values.validity, precision=values.precision)

    def _swaps(self) -> list[bool]:
        if self.category != "improper":
            return [False] * self.block.count
        markers = [self.block.get(m) for m in _OUT_OF_PLANE_MARKERS]
        swaps = []
        for row, resolved in enumerate(self.resolved):
            kinds = {s in _OUT_OF_PLANE for s in resolved}
            if len(kinds) > 1:
                raise InvalidRecord(
                    f"row {row} resolves to out-of-plane and other styles {list(resolved)}; its"
                    " centre cannot be both (§11.3)",
                    path=f"{self.name}",
                )
            if not resolved:  # unresolved: out-of-plane when it carries koop or K
                kinds = {
                    any(
                        m is not None and (m.validity is None or bool(m.validity[row]))
                        for m in markers
                    )
                }
            swaps.append(kinds.pop())
        return swaps

    def _swapped(self, columns: dict[str, Column]) -> dict[str, Column]:
        swaps = np.array(self._swaps(), dtype=bool)
        if not swaps.any() or "atomi" not in columns or "atomj" not in columns:
            return columns
        i, j = columns["atomi"], columns["atomj"]
        out = dict(columns)
        out["atomi"] = _pick(swaps, j, i)
        out["atomj"] = _pick(swaps, i, j)
        return out

    def converted(self) -> Block:
        columns: dict[str, Column] = {}
        for column, values in self.block.items():
            columns[column] = values if column in _LINKING else self._column(column, values)
        if self.category == "dihedral" and "style" in columns:
            columns["style"] = _renamed_styles(columns["style"])
        columns = self._swapped(columns)
        return Block(
            columns,
            count=self.block.count,
            structural_shape=self.block.structural_shape,
            targets=self.block.targets,
            attributes=self.block.attributes,
            coerce=False,
            path=self.name,
        )


def _pick(mask: np.ndarray[Any, Any], where: Column, otherwise: Column) -> Column:
    values = np.where(mask, where.values, otherwise.values)
    validity = None
    if where.validity is not None or otherwise.validity is not None:
        a = np.ones(mask.shape, bool) if where.validity is None else where.validity
        b = np.ones(mask.shape, bool) if otherwise.validity is None else otherwise.validity
        validity = np.where(mask, a, b)
    return Column(values, where.dtype, validity=validity)


def _renamed_styles(column: Column) -> Column:
    if column.dtype != "string":
        return column
    values = ["periodic" if v == "fourier" else v for v in column.values.tolist()]
    return Column(np.array(values, dtype=column.values.dtype), "string", validity=column.validity)


def convert_v1_frame(
    frame: Frame,
    document: Mapping[str, Any] | None = None,
    tables: Mapping[str, Block] | None = None,
) -> Frame:
    """Convert a version-1 frame (``system``, ``frame`` or a trajectory frame) to version 2.

    Parameters
    ----------
    frame
        The frame as stored by a version-1 writer.
    document, tables
        The record's (or collection's) version-1 ``forcefield`` section as
        stored, before :meth:`ForceField.from_section` converts it; ``None``
        when the record has none (then the angle unit is radian).

    Returns
    -------
    Frame
        The frame with every relation block (a block with ``atomi``) converted:
        per-instance parameter cells as their resolved style converts them,
        angle-valued columns to degrees, ``style`` cells ``fourier`` →
        ``periodic``, out-of-plane ``impropers`` rows centre first. Null cells
        are left alone; other blocks are returned unchanged.

    Raises
    ------
    InvalidRecord
        Two resolved styles converting one cell differently, a cell a rule
        would rename, or an angle unit §11.1 refuses.
    """
    unit = _unit(document)
    styles = _styles_by_category(document, tables)
    blocks: dict[str, Block] = {}
    for name, block in frame.items():
        category = name[:-1] if name.endswith("s") else None
        if category is None or "atomi" not in block or category in ("pair", "exclusion", "member"):
            blocks[name] = block
            continue
        blocks[name] = _Relations(name, block, category, styles.get(category, []), unit).converted()
    return frame.replace(blocks=blocks)
