"""Lookup answers (forcefield.md §13): small frozen values whose ``to_dict()`` is plain JSON.

Values are returned as stored, in the section's units (never converted); a
null cell is ``None``, never ``0`` or ``NaN``. Array parameters are nested
tuples here and nested lists in ``to_dict()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..errors import AmbiguousLookup

__all__ = [
    "AmbiguousLookup",
    "AtomLookup",
    "Match",
    "MatchLookup",
    "PairLookup",
    "PairTerm",
    "PairValue",
    "TableRow",
    "TermLookup",
]

#: Where a pair parameter came from (§13 (c) step 3, §6.2).
PairSource = Literal["row", "cross_row", "self_row_default", "mixed", "override"]
#: The outcome of one pair style for one pair (§13 common rules).
PairOutcome = Literal["found", "no_value", "unresolved"]


def plain(value: Any) -> Any:
    """Deep copy of a looked-up value as JSON: tuples become lists, mappings dicts."""
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    return value


class _Keyed(Protocol):
    def has(self, key: str) -> bool: ...
    def __getitem__(self, key: str) -> Any: ...
    @property
    def label(self) -> str: ...


def _only(parts: Iterable[_Keyed], key: str, what: str) -> Any:
    """The value of ``key`` in the one part stating it (the short form of every answer)."""
    listed = list(parts)
    holding = [p for p in listed if p.has(key)]
    if len(holding) == 1:
        return holding[0][key]
    if not holding:
        raise KeyError(f"{what}: no {key!r} in {[p.label for p in listed]}")
    raise AmbiguousLookup(
        f"{what}: {key!r} is stated by {len(holding)} answers {[p.label for p in holding]};"
        " pass style= or read the detailed form",
        path=key,
    )


@dataclass(frozen=True, slots=True)
class TableRow:
    """One row of a style table, or the per-instance parameters of a zero-row style.

    Attributes
    ----------
    category, style, table
        The style entry and its block name.
    row
        Row index in the table (stored order); ``None`` for a per-instance style.
    name
        The row's ``name`` (the type name), or the queried type for a per-instance style.
    endpoints
        The row's endpoint strings (informational; ``""`` is the wildcard).
    endpoint_key
        What the endpoints name: ``"type"``, ``"class"`` or ``"smirks"``.
    annotations
        Annotation columns present (``class``, ``element`` ...); ``None`` = null cell.
    params
        Per-type parameter columns present; ``None`` = null cell.
    style_params
        The style-level ``params`` (``cutoff``, ``mixing`` ...).
    expression
        The style's energy expression, or ``None``.
    registered
        Whether the style is registered (§7.2).
    overridden
        Parameters whose value came from per-instance cells (§6 rule 4).
    """

    category: str
    style: str
    table: str
    row: int | None
    name: str
    endpoints: tuple[str, ...]
    endpoint_key: str
    annotations: Mapping[str, str | None]
    params: Mapping[str, Any]
    style_params: Mapping[str, Any]
    expression: str | None
    registered: bool
    overridden: tuple[str, ...] = ()

    @property
    def priceable(self) -> bool:
        """Registered, or carrying an expression; otherwise a consumer refuses it (§7.1)."""
        return self.registered or self.expression is not None

    @property
    def label(self) -> str:
        """``<table>[<name>]``: which row this is, for messages."""
        return f"{self.table}[{self.name}]"

    def has(self, key: str) -> bool:
        """Whether the row has a parameter or annotation column ``key``."""
        return key in self.params or key in self.annotations

    def __getitem__(self, key: str) -> Any:
        """A parameter (or annotation) of the row; ``None`` for a null cell.

        Raises
        ------
        KeyError
            The table has no such column.
        """
        if key in self.params:
            return self.params[key]
        if key in self.annotations:
            return self.annotations[key]
        raise KeyError(f"{self.label} has no column {key!r}")

    def get(self, key: str, default: Any = None) -> Any:
        """``self[key]``, or ``default`` when the table has no such column."""
        return self[key] if self.has(key) else default

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "category": self.category,
            "style": self.style,
            "table": self.table,
            "row": self.row,
            "name": self.name,
            "endpoints": list(self.endpoints),
            "endpoint_key": self.endpoint_key,
            "annotations": dict(self.annotations),
            "params": plain(self.params),
            "style_params": dict(self.style_params),
            "expression": self.expression,
            "registered": self.registered,
            "priceable": self.priceable,
            "overridden": list(self.overridden),
        }


@dataclass(frozen=True, slots=True)
class AtomLookup:
    """Atom type ``type``: its row in each atom table, in ``styles`` order (§13 (a)).

    ``via`` is ``"pair"`` when the force field has no atom table and the type
    was found by name in a smirks-keyed pair table (§6 rule 1).
    """

    type: str
    rows: tuple[TableRow, ...]
    units: Mapping[str, str]
    via: Literal["atom", "pair"] = "atom"

    def __getitem__(self, key: str) -> Any:
        """Short form: ``key`` of the one row that has it.

        Raises
        ------
        KeyError
            No row has ``key``.
        AmbiguousLookup
            Several rows have it (several tables answered).
        """
        return _only(self.rows, key, f"atom type {self.type!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "type": self.type,
            "via": self.via,
            "rows": [r.to_dict() for r in self.rows],
            "units": dict(self.units),
        }


@dataclass(frozen=True, slots=True)
class TermLookup:
    """Relation type ``type`` of ``category``: every matching row (§13 (b)).

    Without a ``style`` every table holding the name applies and their
    energies add; rows come in ``styles`` order.
    """

    category: str
    type: str
    style: str | None
    rows: tuple[TableRow, ...]
    units: Mapping[str, str]

    def __getitem__(self, key: str) -> Any:
        """Short form: ``key`` of the one row that has it.

        Raises
        ------
        KeyError
            No row has ``key``.
        AmbiguousLookup
            Several rows have it (several tables answered).
        """
        return _only(self.rows, key, f"{self.category} type {self.type!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "category": self.category,
            "type": self.type,
            "style": self.style,
            "rows": [r.to_dict() for r in self.rows],
            "units": dict(self.units),
        }


@dataclass(frozen=True, slots=True)
class PairValue:
    """One per-type parameter of a pair: its value and where it came from.

    ``value`` is ``None`` when it cannot be determined (``no_value``); then
    ``source`` is ``None`` too.
    """

    value: Any
    source: PairSource | None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"value": plain(self.value), "source": self.source}


@dataclass(frozen=True, slots=True)
class PairTerm:
    """What one pair style says about one pair of atom types (§13 (c)).

    Attributes
    ----------
    style, table, endpoint_key
        The pair style entry.
    keys
        The endpoint keys looked up (types, or their classes); ``None`` when
        a class could not be resolved.
    outcome
        ``"found"`` (every parameter in ``priced_with`` determined),
        ``"no_value"`` or ``"unresolved"``.
    row, cross
        The row pricing the pair (``None``: none) and whether it is a cross row.
    values
        Every per-type parameter of the style for this pair.
    priced_with
        The parameters that price the pair in the requested mode
        (``epsilon14``/``sigma14`` for a 1-4 pair under ``one_four = "epsilon14"``).
    self_values
        Per-type parameters of the two self rows (``None``: no self row), for
        the per-particle binding ``x1``, ``x2`` (§8.3, ``pair.thole``).
    mixing
        The combining rule in force, or ``None``.
    special
        The special class, ``"lj"`` or ``"coul"`` (§7.3).
    weights
        ``special_bonds[special]`` as ``(w12, w13, w14)``, or ``None``: not declared.
    scale
        A pair override's ``lj_scale``/``coul_scale``: replaces the weight.
    charge_product
        A pair override's ``charge_product`` (electrostatic styles); ``None``:
        qᵢqⱼ from ``atoms.charge``.
    style_params, expression, registered
        As in :class:`TableRow`.
    """

    style: str
    table: str
    endpoint_key: str
    keys: tuple[str, str] | None
    outcome: PairOutcome
    row: int | None
    cross: bool
    values: Mapping[str, PairValue]
    priced_with: tuple[str, ...]
    self_values: tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]
    mixing: str | None
    special: Literal["lj", "coul"]
    weights: tuple[float, float, float] | None
    scale: float | None
    charge_product: float | None
    style_params: Mapping[str, Any]
    expression: str | None
    registered: bool

    @property
    def priceable(self) -> bool:
        """Registered, or carrying an expression (``not_priceable`` otherwise, §13)."""
        return self.registered or self.expression is not None

    def value(self, name: str) -> Any:
        """The pair's value of parameter ``name`` (``None`` when undetermined or absent)."""
        found = self.values.get(name)
        return None if found is None else found.value

    @property
    def label(self) -> str:
        """The style's table, for messages."""
        return self.table

    def has(self, key: str) -> bool:
        """Whether ``key`` is a per-type parameter of the style."""
        return key in self.values

    def __getitem__(self, key: str) -> Any:
        """The pair's value of ``key`` (``None``: ``no_value``).

        Raises
        ------
        KeyError
            ``key`` is no per-type parameter of the style.
        """
        if key not in self.values:
            raise KeyError(f"{self.table} has no parameter {key!r}")
        return self.values[key].value

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "style": self.style,
            "table": self.table,
            "endpoint_key": self.endpoint_key,
            "keys": None if self.keys is None else list(self.keys),
            "outcome": self.outcome,
            "row": self.row,
            "cross": self.cross,
            "values": {k: v.to_dict() for k, v in self.values.items()},
            "priced_with": list(self.priced_with),
            "self_values": [None if s is None else plain(s) for s in self.self_values],
            "mixing": self.mixing,
            "special": self.special,
            "weights": None if self.weights is None else list(self.weights),
            "scale": self.scale,
            "charge_product": self.charge_product,
            "style_params": dict(self.style_params),
            "expression": self.expression,
            "registered": self.registered,
            "priceable": self.priceable,
        }


@dataclass(frozen=True, slots=True)
class PairLookup:
    """Pair parameters of atom types ``a``, ``b``: one term per pair style, in ``styles`` order."""

    a: str
    b: str
    is_14: bool
    terms: tuple[PairTerm, ...]
    units: Mapping[str, str]

    def term(self, style: str) -> PairTerm:
        """The term of pair style ``style``.

        Raises
        ------
        KeyError
            No such style among the terms.
        """
        for term in self.terms:
            if term.style == style:
                return term
        raise KeyError(style)

    def __getitem__(self, key: str) -> Any:
        """Short form: the pair's ``key`` from the one pair style having it (``epsilon``).

        Raises
        ------
        KeyError
            No pair style has ``key``.
        AmbiguousLookup
            Several pair styles have it.
        """
        return _only(self.terms, key, f"pair ({self.a!r}, {self.b!r})")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "a": self.a,
            "b": self.b,
            "is_14": self.is_14,
            "terms": [t.to_dict() for t in self.terms],
            "units": dict(self.units),
        }


@dataclass(frozen=True, slots=True)
class Match:
    """The row of one table that types a tuple (§13 (d)).

    ``direction`` is ``"forward"`` or ``"reversed"``; ``wildcards`` counts the
    row's ``""`` endpoints; ``keys`` are the looked-up keys in the row's order.
    """

    row: TableRow
    direction: Literal["forward", "reversed"]
    wildcards: int
    keys: tuple[str, ...]

    @property
    def label(self) -> str:
        """The matched row, for messages."""
        return self.row.label

    def has(self, key: str) -> bool:
        """Whether the matched row has column ``key``."""
        return self.row.has(key)

    def __getitem__(self, key: str) -> Any:
        """``key`` of the matched row."""
        return self.row[key]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "row": self.row.to_dict(),
            "direction": self.direction,
            "wildcards": self.wildcards,
            "keys": list(self.keys),
        }


@dataclass(frozen=True, slots=True)
class MatchLookup:
    """Typing matches of ``types`` in every searched table of ``category``, one per table."""

    category: str
    types: tuple[str, ...]
    matches: tuple[Match, ...]
    searched: tuple[str, ...]
    units: Mapping[str, str]

    def __getitem__(self, key: str) -> Any:
        """Short form: ``key`` of the one matched row having it.

        Raises
        ------
        KeyError
            No matched row has ``key``.
        AmbiguousLookup
            Rows of several tables matched and have it.
        """
        return _only(self.matches, key, f"{self.category} match {list(self.types)}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "category": self.category,
            "types": list(self.types),
            "matches": [m.to_dict() for m in self.matches],
            "searched": list(self.searched),
            "units": dict(self.units),
        }
