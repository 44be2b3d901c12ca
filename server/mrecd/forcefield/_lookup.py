"""The lookup engine (forcefield.md §13): one index build per force field, then
every lookup is a handful of dictionary probes, never a scan of a table."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from ..errors import InvalidRecord, NotFound
from ..model import Block, Column, finite_json
from ._document import Style
from ._frozen import FrozenDict
from ._registry import COUL_STYLES, REGISTERED
from ._results import (
    AtomLookup,
    Match,
    MatchLookup,
    PairLookup,
    PairOutcome,
    PairSource,
    PairTerm,
    PairValue,
    TableRow,
    TermLookup,
)
from ._tables import Layout

__all__ = ["Index"]

_OVERRIDES: Final = frozenset({"epsilon", "sigma", "charge_product", "lj_scale", "coul_scale"})
#: The per-type parameter a mixed one is paired with in the combining formula (§2.6).
_PARTNER: Final = {
    "epsilon": "sigma",
    "sigma": "epsilon",
    "epsilon14": "sigma14",
    "sigma14": "epsilon14",
}
_BASE_OF_14: Final = {"epsilon14": "epsilon", "sigma14": "sigma"}


def _frozen(value: Any) -> Any:
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _cells(column: Column) -> list[Any]:
    values: list[Any] = column.values.tolist()
    if column.trailing:
        values = [_frozen(v) for v in values]
    if column.validity is not None:
        values = [v if ok else None for v, ok in zip(values, column.validity.tolist(), strict=True)]
    return values


def _combine(rule: str, name: str, eps: tuple[float, float], sig: tuple[float, float]) -> float:
    """Combining rules of §2.6; ``name`` is ``epsilon``/``sigma`` (or their 14 forms)."""
    (ei, ej), (si, sj) = eps, sig
    is_sigma = name.startswith("sigma")
    if rule == "arithmetic":
        return 0.5 * (si + sj) if is_sigma else math.sqrt(ei * ej)
    if rule == "geometric":
        return math.sqrt(si * sj) if is_sigma else math.sqrt(ei * ej)
    six = si**6 + sj**6
    if is_sigma:
        return float((0.5 * six) ** (1.0 / 6.0))
    return 2.0 * math.sqrt(ei * ej) * si**3 * sj**3 / six


class _Table:
    """One style table, indexed: names, pair keys and endpoint patterns to rows."""

    __slots__ = (
        "cells",
        "count",
        "endpoints",
        "layout",
        "names",
        "pairs",
        "patterns",
        "style",
        "style_params",
    )

    def __init__(self, style: Style, layout: Layout, block: Block) -> None:
        self.style = style
        self.layout = layout
        self.count = block.count
        self.style_params: Mapping[str, Any] = FrozenDict(style.params)
        self.cells = {name: _cells(column) for name, column in block.items()}
        names: list[str] = self.cells["name"]
        self.names = {n: r for r, n in enumerate(names)}
        ends = [self.cells[c] for c in layout.endpoints]
        self.endpoints: list[tuple[str, ...]] = (
            list(zip(*ends, strict=True)) if ends else [()] * self.count
        )
        self.patterns: dict[tuple[str, ...], int] = {}
        for row, key in enumerate(self.endpoints):
            self.patterns.setdefault(key, row)  # the lowest row wins a tie (§13 (d) 3)
        self.pairs: dict[tuple[str, str], int] = {}
        if style.category == "pair" and len(layout.endpoints) == 2:
            for row, (i, j) in enumerate(self.endpoints):
                self.pairs.setdefault((i, j) if i <= j else (j, i), row)

    def params_of(self, row: int) -> dict[str, Any]:
        return {p: self.cells[p][row] for p in self.layout.params}

    def row(self, row: int, *, cells: Mapping[str, Any] | None = None) -> TableRow:
        params = self.params_of(row)
        overridden: tuple[str, ...] = ()
        if cells:
            overridden = tuple(k for k, v in cells.items() if v is not None)
            params.update({k: cells[k] for k in overridden})
        return TableRow(
            category=self.style.category,
            style=self.style.style,
            table=self.style.block,
            row=row,
            name=self.cells["name"][row],
            endpoints=self.endpoints[row],
            endpoint_key=self.style.endpoint_key,
            annotations={a: self.cells[a][row] for a in self.layout.annotations},
            params=params,
            style_params=self.style_params,
            expression=self.style.expression,
            registered=self.style.registered,
            overridden=overridden,
        )

    def per_instance(self, name: str, cells: Mapping[str, Any]) -> TableRow:
        """A zero-row style: every parameter from the relation row's cells (§6 rule 4)."""
        params = {k: v for k, v in cells.items() if v is not None}
        return TableRow(
            category=self.style.category,
            style=self.style.style,
            table=self.style.block,
            row=None,
            name=name,
            endpoints=(),
            endpoint_key=self.style.endpoint_key,
            annotations={},
            params=params,
            style_params=self.style_params,
            expression=self.style.expression,
            registered=self.style.registered,
            overridden=tuple(params),
        )


def _not_found(what: str, searched: Sequence[str]) -> NotFound:
    where = ", ".join(searched) if searched else "no table (none of that category)"
    return NotFound(f"{what} not found; searched {where}", path="forcefield")


class Index:
    """Every lookup of §13 over a validated force field.

    Parameters
    ----------
    styles, layouts, tables
        The validated styles, their table layouts and the tables.
    units
        The expanded ``units`` returned with every answer.
    special_bonds
        The document's ``special_bonds``, or ``None``.
    """

    def __init__(
        self,
        styles: Sequence[Style],
        layouts: Mapping[str, Layout],
        tables: Mapping[str, Block],
        units: Mapping[str, str],
        special_bonds: Mapping[str, Any] | None,
    ) -> None:
        self.units: Mapping[str, str] = FrozenDict(units)
        self.special_bonds = special_bonds
        self.tables = {s.block: _Table(s, layouts[s.block], tables[s.block]) for s in styles}
        self.by_style = {(t.style.category, t.style.style): t for t in self.tables.values()}
        self.by_category: dict[str, list[_Table]] = {}
        for style in styles:
            self.by_category.setdefault(style.category, []).append(self.tables[style.block])
        self.classes = self._classes()
        self.known_types = self._known_types()

    def _classes(self) -> dict[str, str]:
        # Several atom tables holding one name: the first non-null class in
        # styles order wins (§15.7 leaves it open).
        classes: dict[str, str] = {}
        for table in self.by_category.get("atom", []):
            column = table.cells.get("class")
            if column is None:
                continue
            for name, row in table.names.items():
                if column[row] is not None:
                    classes.setdefault(name, column[row])
        return classes

    def _known_types(self) -> frozenset[str]:
        known: set[str] = set()
        for table in self.by_category.get("atom", []):
            known.update(table.names)
        for table in self.by_category.get("pair", []):
            if table.style.endpoint_key == "smirks":
                known.update(table.names)
            elif table.style.endpoint_key == "type":
                for ends in table.endpoints:
                    known.update(ends)
        return frozenset(known)

    # -- (a) atom types ------------------------------------------------------------------

    def atom(self, name: str) -> AtomLookup:
        """§13 (a): the row named ``name`` in each atom table."""
        _check_name(name, "type")
        tables = self.by_category.get("atom", [])
        via: Literal["atom", "pair"] = "atom"
        if not tables:  # rule 1: smirks-keyed force fields name atoms.type in the pair table
            tables = [
                t for t in self.by_category.get("pair", []) if t.style.endpoint_key == "smirks"
            ]
            via = "pair"
        rows = tuple(t.row(t.names[name]) for t in tables if name in t.names)
        if not rows:
            raise _not_found(f"atom type {name!r}", [t.style.block for t in tables])
        return AtomLookup(name, rows, self.units, via)

    # -- (b) relation rows by name -------------------------------------------------------

    def _table(self, category: str, style: str) -> _Table:
        table = self.by_style.get((category, style))
        if table is not None:
            return table
        searched = [t.style.block for t in self.by_category.get(category, [])]
        raise _not_found(f"style ({category}, {style})", searched)

    def term(
        self, category: str, name: str, style: str | None, cells: Mapping[str, Any] | None
    ) -> TermLookup:
        """§13 (b): the rows named ``name`` in the tables of ``category``."""
        _check_name(category, "category")
        _check_name(name, "type")
        if category == "pair":
            raise InvalidRecord(
                "pair rows are never linked by name: look pairs up by their two atom types"
                " (§13 (b) 1)",
                path="forcefield.pair",
            )
        cells = _check_cells(cells)
        if style is not None:
            _check_name(style, "style")
            table = self._table(category, style)
            if table.count == 0 and cells is not None:
                return TermLookup(
                    category, name, style, (table.per_instance(name, cells),), self.units
                )
            tables = [table]
        else:
            tables = self.by_category.get(category, [])
        rows = tuple(t.row(t.names[name], cells=cells) for t in tables if name in t.names)
        if not rows:
            raise _not_found(f"{category} type {name!r}", [t.style.block for t in tables])
        return TermLookup(category, name, style, rows, self.units)

    # -- (c) pair parameters ---------------------------------------------------------------

    def pair(
        self,
        a: str,
        b: str,
        style: str | None,
        is_14: bool,
        override: Mapping[str, Any] | None,
    ) -> PairLookup:
        """§13 (c): every pair style's parameters for atom types ``a``, ``b``."""
        _check_name(a, "type")
        _check_name(b, "type")
        checked = _check_override(override)
        tables = (
            [self._table("pair", style)] if style is not None else self.by_category.get("pair", [])
        )
        searched = [t.style.block for t in tables]
        if not tables:
            raise _not_found("pair style", searched)
        for name in (a, b):
            if name not in self.known_types:
                raise _not_found(f"atom type {name!r}", self._type_tables())
        terms = tuple(_PairQuery(self, t, a, b, is_14, checked).term() for t in tables)
        return PairLookup(a, b, is_14, terms, self.units)

    def _type_tables(self) -> list[str]:
        return [t.style.block for c in ("atom", "pair") for t in self.by_category.get(c, [])]

    # -- (d) typing match ------------------------------------------------------------------

    def match(self, category: str, types: Sequence[str], style: str | None) -> MatchLookup:
        """§13 (d): per table of ``category``, the row typing ``types``."""
        _check_name(category, "category")
        if isinstance(types, str) or not all(isinstance(t, str) for t in types):
            raise InvalidRecord("types is a sequence of type names", path="forcefield.match.types")
        query = tuple(types)
        if style is not None:
            _check_name(style, "style")
        candidates = (
            [self._table(category, style)]
            if style is not None
            else self.by_category.get(category, [])
        )
        tables = [t for t in candidates if t.style.endpoint_key != "smirks" and t.layout.endpoints]
        if not tables:
            raise _not_found(
                f"{category} tables with endpoints", [t.style.block for t in candidates]
            )
        arities = {len(t.layout.endpoints) for t in tables}
        tables = [t for t in tables if len(t.layout.endpoints) == len(query)]
        if not tables:
            raise InvalidRecord(
                f"{category} tables have arity {sorted(arities)}; got {len(query)} types",
                path="forcefield.match.types",
            )
        matches = tuple(m for t in tables if (m := self._match_table(t, query)) is not None)
        searched = tuple(t.style.block for t in tables)
        if not matches:
            raise _not_found(f"{category} row matching {list(query)}", searched)
        return MatchLookup(category, query, matches, searched, self.units)

    def _keys(self, table: _Table, types: tuple[str, ...]) -> tuple[str, ...] | None:
        if table.style.endpoint_key != "class":
            return types
        keys = tuple(self.classes.get(t) for t in types)
        return None if any(k is None for k in keys) else keys  # type: ignore[return-value]

    def _match_table(self, table: _Table, types: tuple[str, ...]) -> Match | None:
        keys = self._keys(table, types)
        if keys is None:
            return None
        directions: list[tuple[str, tuple[str, ...]]] = [("forward", keys)]
        if table.style.category != "improper":  # impropers match in order only
            directions.append(("reversed", keys[::-1]))
        best: tuple[int, int, str, tuple[str, ...]] | None = None
        for direction, ordered in directions:
            for pattern in _wildcard_patterns(ordered):
                row = table.patterns.get(pattern)
                if row is None:
                    continue
                found = (pattern.count(""), row, direction, ordered)
                if best is None or found[:2] < best[:2]:
                    best = found
        if best is None:
            return None
        wildcards, row, direction, ordered = best
        return Match(
            table.row(row), "forward" if direction == "forward" else "reversed", wildcards, ordered
        )


def _wildcard_patterns(keys: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every tuple that is ``keys`` with some positions replaced by the wildcard ``""``."""
    patterns: list[tuple[str, ...]] = [()]
    for key in keys:
        patterns = [(*p, k) for p in patterns for k in (key, "")]
    return patterns


def _check_name(value: Any, what: str) -> None:
    if not isinstance(value, str):
        raise InvalidRecord(
            f"a {what} is a string, not {type(value).__name__}", path=f"forcefield.{what}"
        )


def _check_cells(cells: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if cells is None:
        return None
    if not isinstance(cells, Mapping):
        raise InvalidRecord(
            "per-instance cells are an object {parameter: value}", path="forcefield.cells"
        )
    checked: dict[str, Any] = finite_json(dict(cells), path="forcefield.cells")
    for key, value in checked.items():
        if isinstance(value, bool):
            raise InvalidRecord(
                f"cell {key!r}: true/false is not a parameter value", path="forcefield.cells"
            )
    return {k: _frozen(v) for k, v in checked.items()}


def _check_override(override: Mapping[str, Any] | None) -> dict[str, float]:
    if override is None:
        return {}
    if not isinstance(override, Mapping):
        raise InvalidRecord(
            "a pair override is an object {column: number}", path="forcefield.override"
        )
    unknown = set(override) - _OVERRIDES
    if unknown:
        raise InvalidRecord(
            f"pair overrides are {sorted(_OVERRIDES)}; got {sorted(unknown)} (§6.2)",
            path="forcefield.override",
        )
    out: dict[str, float] = {}
    for key, value in override.items():
        if value is None:
            continue  # null leaves the style value
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise InvalidRecord(
                f"override {key!r} must be a finite number or null",
                path=f"forcefield.override.{key}",
            )
        out[key] = float(value)
    return out


class _PairQuery:
    """One pair style answering for one pair (§13 (c) steps 1–8)."""

    def __init__(
        self,
        index: Index,
        table: _Table,
        a: str,
        b: str,
        is_14: bool,
        override: Mapping[str, float],
    ) -> None:
        self.index, self.table, self.a, self.b = index, table, a, b
        self.is_14, self.override = is_14, override
        style = table.style
        self.charmm = style.style == "lj/charmm" and style.registered
        mixing = style.params.get("mixing", "arithmetic" if self.charmm else None)
        self.mixing: str | None = mixing if isinstance(mixing, str) else None
        self.special = _special_class(style)

    def _rows(self, keys: tuple[str, str]) -> tuple[int | None, int | None, int | None]:
        table, (ka, kb) = self.table, keys
        if table.style.endpoint_key == "smirks":  # self rows by name, never a cross row
            raa, rbb = table.names.get(ka), table.names.get(kb)
            return (raa if ka == kb else None), raa, rbb
        pairs = table.pairs
        return (
            pairs.get((ka, kb) if ka <= kb else (kb, ka)),
            pairs.get((ka, ka)),
            pairs.get((kb, kb)),
        )

    def _self_value(self, row: int | None, name: str) -> tuple[Any, bool]:
        """A self row's value; ``lj/charmm``'s null ``epsilon14``/``sigma14`` use the base."""
        if row is None:
            return None, False
        cells = self.table.cells
        value = cells[name][row] if name in cells else None
        if value is None and self.charmm and name in _BASE_OF_14:
            base = _BASE_OF_14[name]
            return (cells[base][row] if base in cells else None), True
        return value, False

    def _mixed(self, name: str, raa: int | None, rbb: int | None) -> float | None:
        mixable = name in ("epsilon", "sigma") or (self.charmm and name in ("epsilon14", "sigma14"))
        if not mixable or self.mixing is None:
            return None  # mixing never covers other parameters
        is_sigma = name.startswith("sigma")
        eps_name, sig_name = (_PARTNER[name], name) if is_sigma else (name, _PARTNER[name])
        ei, ej = (self._self_value(r, eps_name)[0] for r in (raa, rbb))
        si, sj = (self._self_value(r, sig_name)[0] for r in (raa, rbb))
        # epsilon14 pairs with sigma14 in the formula; only sixthpower's ε needs the σs.
        needed = (
            [si, sj] if is_sigma else [ei, ej] + ([si, sj] if self.mixing == "sixthpower" else [])
        )
        if not all(isinstance(v, float) for v in needed):
            return None  # a missing self row or value: no_value (§15.2)
        return _combine(self.mixing, name, (_num(ei), _num(ej)), (_num(si), _num(sj)))

    def _value(
        self, name: str, keys: tuple[str, str], rows: tuple[int | None, int | None, int | None]
    ) -> PairValue:
        rab, raa, rbb = rows
        like = keys[0] == keys[1]
        column = self.table.cells.get(name)
        if rab is not None and column is not None and column[rab] is not None:
            return PairValue(column[rab], "row" if like else "cross_row")
        if like:
            value, defaulted = self._self_value(raa, name)
            source: PairSource = "self_row_default" if defaulted else "row"
            return PairValue(value, source) if value is not None else PairValue(None, None)
        mixed = self._mixed(name, raa, rbb)
        return PairValue(mixed, "mixed") if mixed is not None else PairValue(None, None)

    def _param_names(self) -> tuple[str, ...]:
        names = list(self.table.layout.params)
        registered = REGISTERED.get((self.table.style.category, self.table.style.style))
        names += [p for p in registered or () if p not in names]
        return tuple(names)

    def _priced_with(self, names: tuple[str, ...]) -> tuple[str, ...]:
        if not self.charmm:
            return names
        one_four = self.table.style.params.get("one_four", "regular")
        if self.is_14 and one_four == "epsilon14":
            return ("epsilon14", "sigma14")
        return ("epsilon", "sigma")

    def _keys(self) -> tuple[str, str] | None:
        if self.table.style.endpoint_key != "class":
            return self.a, self.b
        ka, kb = self.index.classes.get(self.a), self.index.classes.get(self.b)
        return None if ka is None or kb is None else (ka, kb)

    def _apply_override(self, values: dict[str, PairValue], priced: tuple[str, ...]) -> None:
        if self.special != "lj":
            return
        for base in ("epsilon", "sigma"):
            if base not in self.override:
                continue
            target = next((p for p in priced if p.startswith(base)), None)
            if target is not None and target in values:
                values[target] = PairValue(self.override[base], "override")

    def term(self) -> PairTerm:
        keys = self._keys()
        names = self._param_names()
        priced = self._priced_with(names)
        values: dict[str, PairValue] = {}
        self_values: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None)
        row: int | None = None
        outcome: PairOutcome = "unresolved"
        if keys is not None:
            rab, raa, rbb = rows = self._rows(keys)
            row = rab
            values = {n: self._value(n, keys, rows) for n in names}
            self_values = (self._params(raa), self._params(rbb))
        self._apply_override(values, priced)
        if keys is not None:
            outcome = "found" if all(values[p].value is not None for p in priced) else "no_value"
        return self._build(keys, outcome, row, values, priced, self_values)

    def _params(self, row: int | None) -> dict[str, Any] | None:
        return None if row is None else self.table.params_of(row)

    def _build(
        self,
        keys: tuple[str, str] | None,
        outcome: PairOutcome,
        row: int | None,
        values: dict[str, PairValue],
        priced: tuple[str, ...],
        self_values: tuple[dict[str, Any] | None, dict[str, Any] | None],
    ) -> PairTerm:
        style = self.table.style
        weights: tuple[float, float, float] | None = None
        if self.index.special_bonds is not None:
            w12, w13, w14 = self.index.special_bonds[self.special]
            weights = (float(w12), float(w13), float(w14))
        scale = self.override.get("lj_scale" if self.special == "lj" else "coul_scale")
        charge_product = self.override.get("charge_product") if self.special == "coul" else None
        return PairTerm(
            style=style.style,
            table=style.block,
            endpoint_key=style.endpoint_key,
            keys=keys,
            outcome=outcome,
            row=row,
            cross=row is not None and keys is not None and keys[0] != keys[1],
            values=values,
            priced_with=priced,
            self_values=self_values,
            mixing=self.mixing,
            special=self.special,
            weights=weights,
            scale=scale,
            charge_product=charge_product,
            style_params=self.table.style_params,
            expression=style.expression,
            registered=style.registered,
        )


def _num(value: Any) -> float:
    return value if isinstance(value, float) else math.nan


def _special_class(style: Style) -> Literal["lj", "coul"]:
    if style.registered:
        return "coul" if style.style in COUL_STYLES else "lj"
    return "coul" if style.params.get("special") == "coul" else "lj"
