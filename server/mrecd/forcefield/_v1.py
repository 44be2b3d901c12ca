"""Reading a version-1 force field: exact conversion to version 2, or refusal
(forcefield.md §11.1–§11.2, §12.2).

Version 1 wrote harmonic terms as ½k(x − x0)², angle values and the angle
factor of force constants in ``units.angle`` (radian in every preset), and
named a few styles and columns differently. Every number is converted with
the operations the chapter spells out, in its order, so the result is
bit-for-bit the reference's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from ..errors import InvalidRecord
from ..model import Block, Column
from ._names import block_name
from ._registry import ANNOTATIONS, ENDPOINT_COLUMNS, REGISTERED
from ._tables import per_term_columns
from ._units import unit_equivalent

__all__ = ["DEGREES_PER_RADIAN", "convert_v1"]

#: The double nearest 180/π (§11.1).
DEGREES_PER_RADIAN: Final = 180 / math.pi
_ANGULAR: Final = frozenset({"angle", "dihedral", "improper"})
_PHASES: Final = re.compile(r"^phase\d*$")


@dataclass(frozen=True, slots=True)
class _Rule:
    """How one version-1 style converts (§11.2)."""

    halve: tuple[str, ...] = ()
    angles: tuple[str, ...] = ()
    phases: bool = False  # phase and phase<m>
    per_angle: Mapping[str, int] = field(default_factory=dict)  # constant per Uⁿ
    renames: Mapping[str, str] = field(default_factory=dict)
    swap_ij: bool = False
    new_style: str | None = None


_PERIODIC: Final = _Rule(phases=True)
_RULES: Final[dict[tuple[str, str], _Rule]] = {
    ("bond", "harmonic"): _Rule(halve=("k",)),
    ("drude", "harmonic"): _Rule(halve=("k",)),
    ("angle", "harmonic"): _Rule(halve=("k",), angles=("theta0",), per_angle={"k": 2}),
    ("angle", "class2"): _Rule(angles=("theta0",), per_angle={"k2": 2, "k3": 3, "k4": 4}),
    ("dihedral", "periodic"): _PERIODIC,
    ("improper", "trefoil"): _PERIODIC,
    ("dihedral", "charmm"): _Rule(angles=("phase",)),
    ("improper", "periodic"): _Rule(angles=("phase",)),
    ("dihedral", "class2"): _Rule(angles=("phi1", "phi2", "phi3")),
    ("improper", "harmonic"): _Rule(angles=("chi0",), per_angle={"k": 2}),
    ("bond", "morse"): _Rule(renames={"D": "d0"}),
    # Styles outside the version-1 registry written by molrs <= 0.15:
    ("dihedral", "fourier"): _Rule(phases=True, new_style="periodic"),
    ("pair", "morse"): _Rule(renames={"D0": "d0"}),
    ("pair", "thole"): _Rule(renames={"a_thole": "damp"}),
    ("angle", "mmff_angle"): _Rule(angles=("theta0",)),
    ("angle", "uff_angle"): _Rule(angles=("theta0",)),
    ("improper", "mmff_oop"): _Rule(swap_ij=True),
    ("improper", "uff_inversion"): _Rule(swap_ij=True),
}


def _angle_unit(units: Mapping[str, Any]) -> str | None:
    """*U* of §11.1: ``"radian"``, ``"degree"`` or ``None``; refuses the rest."""
    stated = units.get("angle")
    if stated is None:
        return "radian" if "preset" in units else None
    path = "forcefield.units.angle"
    if not isinstance(stated, str):
        raise InvalidRecord("units.angle must be a string", path=path)
    if unit_equivalent(stated, "radian"):
        return "radian"
    if "preset" in units:
        raise InvalidRecord(
            f"a version-1 preset fixes angles in radian; {stated!r} beside it was invalid in"
            " version 1 (reject-v1-preset-angle-degree, §11.1)",
            path=path,
        )
    if unit_equivalent(stated, "degree"):
        return "degree"
    # §11.1 lets a reader refuse any U but radian and degree: no exact factor.
    raise InvalidRecord(
        f"version-1 angle unit {stated!r} is neither radian nor degree; no exact conversion"
        " (§11.1)",
        path=path,
    )


def _scaled(column: Column, steps: list[float], where: str) -> Column:
    if column.validity is not None and not column.validity.any():
        return column  # every cell null: nothing to convert
    if column.dtype != "f64":
        raise InvalidRecord(
            f"a {column.dtype} column cannot be converted exactly (§11.2)", path=where
        )
    values = np.array(column.values, dtype=np.float64)
    for factor in steps:  # one multiplication per step, as §11.1 spells out
        values = values * factor
    if column.validity is not None:  # null cells are not converted
        values = np.where(
            column.validity.reshape((-1,) + (1,) * (values.ndim - 1)), values, column.values
        )
    return Column(values, "f64", validity=column.validity, precision=column.precision)


def _steps(rule: _Rule, name: str, unit: str | None) -> list[float]:
    steps: list[float] = []
    if name in rule.halve:
        steps.append(0.5)
    if unit == "degree":
        steps.extend([DEGREES_PER_RADIAN] * rule.per_angle.get(name, 0))
    is_angle = name in rule.angles or (rule.phases and _PHASES.match(name) is not None)
    if is_angle and unit == "radian":
        steps.append(DEGREES_PER_RADIAN)
    return steps


def _convert_table(rule: _Rule, table: Block, unit: str | None, where: str) -> Block:
    columns: dict[str, Column] = {}
    for name, column in table.items():
        steps = _steps(rule, name, unit)
        columns[name] = _scaled(column, steps, f"{where}/{name}") if steps else column
    for old, new in rule.renames.items():
        if old in columns:
            if new in columns:
                raise InvalidRecord(
                    f"version-1 column {old!r} renames to {new!r}, which the table already has"
                    " (§11.2)",
                    path=f"{where}/{old}",
                )
            columns = {new if n == old else n: c for n, c in columns.items()}
    if rule.swap_ij:  # the centre was listed second in version 1
        swap = {"itom": "jtom", "jtom": "itom"}
        columns = {swap.get(n, n): c for n, c in columns.items()}
    return Block(
        columns,
        count=table.count,
        structural_shape=table.structural_shape,
        targets=table.targets,
        attributes=table.attributes,
        coerce=False,
        path=where,
    )


def _has_parameters(entry: Mapping[str, Any], table: Block | None) -> bool:
    if entry.get("params"):
        return True
    skip = {"name", *ENDPOINT_COLUMNS, *ANNOTATIONS}
    return table is not None and any(c not in skip for c in table)


def _refusals(
    category: str, style: str, entry: Mapping[str, Any], table: Block | None, where: str
) -> None:
    if category == "pair14":
        raise InvalidRecord(
            "version 1 priced 1-4 pairs from a pair14 style unweighted; version 2 has no form"
            " for it (reject-v1-pair14, §11.2)",
            path=where,
        )
    if (category, style) in _RULES and "expression" in entry:
        raise InvalidRecord(
            f"the expression of {category}.{style} is written in version-1 parameter meanings and"
            " the style converts (reject-v1-expression-on-converted-style, §11.2)",
            path=where,
        )
    if (
        (category, style) == ("improper", "periodic")
        and table is not None
        and per_term_columns(table)
    ):
        raise InvalidRecord(
            f"version-1 improper.periodic with per-term columns {per_term_columns(table)} has no"
            " one-term form (reject-v1-multiterm-improper-periodic, §11.2)",
            path=where,
        )
    known = (category, style) in _RULES or (category, style) in REGISTERED
    if (
        category in _ANGULAR
        and not known
        and ("expression" in entry or _has_parameters(entry, table))
    ):
        raise InvalidRecord(
            f"{category}.{style} is in no registry: its angles cannot be known to convert"
            " (reject-v1-unknown-angular-style, §11.2)",
            path=where,
        )


def _units(units: Any) -> tuple[Any, str | None]:
    if not isinstance(units, Mapping):
        return units, None  # the version-2 check refuses it
    unit = _angle_unit(units)
    out = dict(units)
    if unit is not None:
        out["angle"] = "degree"  # §15.12: stated explicitly, also beside a preset
    return out, unit


def _convert_entry(
    entry: Any, index: int, unit: str | None, source: Mapping[str, Block], out: dict[str, Block]
) -> Any:
    if not isinstance(entry, Mapping):
        return entry
    category, style = entry.get("category"), entry.get("style")
    if not isinstance(category, str) or not isinstance(style, str) or not style:
        return entry
    where = f"forcefield.styles[{index}]"
    old_block = block_name(category, style)
    table = source.get(old_block)
    _refusals(category, style, entry, table, where)
    rule = _RULES.get((category, style))
    if rule is None or table is None:
        return entry
    new_block = block_name(category, rule.new_style or style)
    out.pop(old_block, None)
    if new_block in out:
        raise InvalidRecord(
            f"{old_block} becomes {new_block}, which the section already has (§11.2)", path=where
        )
    out[new_block] = _convert_table(rule, table, unit, f"forcefield/{old_block}")
    return {**entry, "style": rule.new_style} if rule.new_style else entry


def convert_v1(
    document: Mapping[str, Any], tables: Mapping[str, Block]
) -> tuple[dict[str, Any], dict[str, Block]]:
    """Convert a version-1 section to version 2, exactly, or refuse.

    Parameters
    ----------
    document, tables
        The section as stored by a version-1 writer.

    Returns
    -------
    tuple
        ``(document, tables)`` in version-2 meaning; the caller validates them.

    Raises
    ------
    InvalidRecord
        Every refusal of §12.2 for the section, naming the case.
    """
    doc = dict(document)
    doc["units"], unit = _units(doc.get("units"))
    entries = doc.get("styles")
    out = dict(tables)
    if isinstance(entries, list):
        doc["styles"] = [_convert_entry(e, i, unit, tables, out) for i, e in enumerate(entries)]
    return doc, out
