"""``ForceField``: the force-field document plus one style table (a Block) per style."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidRecord, NotFound
from ..model import Block, check_molrec_version, finite_json
from ._document import Style, check_document
from ._lookup import Index
from ._results import AtomLookup, MatchLookup, PairLookup, TermLookup
from ._tables import Layout, check_tables
from ._units import expand_units
from ._v1 import convert_v1

__all__ = ["ForceField"]


def _check_tables_mapping(tables: Any) -> dict[str, Block]:
    if not isinstance(tables, Mapping):
        raise InvalidRecord("tables is a mapping {block name: Block}", path="forcefield.tables")
    out: dict[str, Block] = {}
    for name, block in tables.items():
        if not isinstance(name, str) or not name:
            raise InvalidRecord(
                f"table name {name!r} must be a non-empty string", path="forcefield.tables"
            )
        if name == "box":  # the cell of a frame-shaped group (conventions.md §9)
            raise InvalidRecord(
                "'box' is reserved in a frame-shaped group; no table takes it",
                path="forcefield/box",
            )
        if not isinstance(block, Block):
            raise InvalidRecord(f"table {name!r} must be a Block", path=f"forcefield/{name}")
        out[name] = block
    return out


class ForceField:
    """A force-field section: ``document`` (plain JSON) and ``tables`` ``{block name: Block}``.

    Construction validates everything a version-2 reader must refuse
    (forcefield.md §12.1); lookups (§13) build one index on first use.

    Parameters
    ----------
    document
        The group's attribute map: ``name``, ``units``, ``styles`` ... Unknown
        keys are preserved verbatim. Style entries are kept as the reference
        writer stores them (empty ``params`` and ``endpoint_key: "type"`` omitted).
    tables
        One style table per style, keyed by block name ``<category>.<style>``
        (percent-encoded). Blocks no style names are preserved unchecked.

    Raises
    ------
    InvalidRecord
        The section breaks a rule of §12.1; the message names the field and rule.
    """

    __slots__ = ("_document", "_index", "_layouts", "_styles", "_tables")

    def __init__(self, document: Mapping[str, Any], tables: Mapping[str, Block]) -> None:
        if not isinstance(document, Mapping):
            raise InvalidRecord("the force-field document is a JSON object", path="forcefield")
        raw: dict[str, Any] = finite_json(dict(document), path="forcefield")
        if "tables" in raw:
            raise InvalidRecord(
                "'tables' is not a document key: tables are blocks", path="forcefield.tables"
            )
        self._tables: dict[str, Block] = _check_tables_mapping(tables)
        self._document, self._styles = check_document(raw)
        self._layouts: dict[str, Layout] = check_tables(self._styles, self._tables)
        self._index: Index | None = None

    @classmethod
    def from_section(
        cls,
        document: Mapping[str, Any],
        tables: Mapping[str, Block],
        *,
        molrec_version: int | None = None,
    ) -> ForceField:
        """Build from the stored form (group attributes + blocks); the bindings' door.

        Parameters
        ----------
        document, tables
            As stored.
        molrec_version
            Version of the record (or collection) the section was read from:
            ``1`` is converted exactly as forcefield.md §11 prescribes, or
            refused; ``None`` (unstamped) and ``2`` read under current rules
            (spec README, "Decisions").

        Raises
        ------
        InvalidRecord
            A refusal of §12.1 or §12.2 (:class:`~mrecd.errors.UnsupportedVersion`
            for a version outside ``1..2``).
        """
        if molrec_version is not None:
            check_molrec_version(molrec_version, path="meta.molrec_version")
        if molrec_version == 1:
            if not isinstance(document, Mapping):
                raise InvalidRecord("the force-field document is a JSON object", path="forcefield")
            document, tables = convert_v1(document, _check_tables_mapping(tables))
        return cls(document, tables)

    def to_section(self) -> tuple[dict[str, Any], dict[str, Block]]:
        """The stored form: ``(document, tables)``, always version 2."""
        return self.document, self.tables

    # -- accessors ------------------------------------------------------------------------

    @property
    def document(self) -> dict[str, Any]:
        """The document (every key but the tables), as stored in the group attributes."""
        return dict(self._document)

    @property
    def tables(self) -> dict[str, Block]:
        """``{block name: Block}``, one style table per style (plus unknown blocks)."""
        return dict(self._tables)

    @property
    def name(self) -> str:
        """The force field's name."""
        return str(self._document["name"])

    @property
    def styles(self) -> tuple[Style, ...]:
        """The style entries, in ``styles`` order."""
        return self._styles

    @property
    def units(self) -> dict[str, str]:
        """The units of every number: the preset expanded, stated quantities over it."""
        return expand_units(self._document["units"])

    @property
    def special_bonds(self) -> dict[str, list[float]] | None:
        """``{"lj": [w12, w13, w14], "coul": [...]}``, or ``None``: not declared."""
        weights = self._document.get("special_bonds")
        return None if weights is None else {k: list(v) for k, v in weights.items()}

    def style(self, category: str, style: str) -> Style:
        """The entry ``(category, style)``.

        Raises
        ------
        NotFound
            No such entry.
        """
        for entry in self._styles:
            if entry.category == category and entry.style == style:
                return entry
        raise NotFound(f"no style entry ({category}, {style})", path="forcefield.styles")

    def table(self, category: str, style: str) -> Block:
        """The table of entry ``(category, style)`` (a :class:`~mrecd.model.Block`).

        Raises
        ------
        NotFound
            No such entry.
        """
        return self._tables[self.style(category, style).block]

    # -- lookups (§13) --------------------------------------------------------------------

    def _lookups(self) -> Index:
        index = self._index
        if index is None:  # built once; a racing second build is identical and harmless
            index = Index(
                self._styles,
                self._layouts,
                self._tables,
                self.units,
                self._document.get("special_bonds"),
            )
            self._index = index
        return index

    def atom(self, type: str) -> AtomLookup:
        """Atom type ``type``: its row in every atom table (§13 (a)).

        Without an atom table, a smirks-keyed force field is searched by name
        in its pair tables (§6 rule 1).

        Raises
        ------
        NotFound
            No row anywhere; the message lists the tables searched.
        """
        return self._lookups().atom(type)

    def term(
        self,
        category: str,
        type: str,
        style: str | None = None,
        *,
        cells: Mapping[str, Any] | None = None,
    ) -> TermLookup:
        """Relation type ``type`` of ``category``: the row named so, per table (§13 (b)).

        Parameters
        ----------
        category
            ``bond``, ``angle``, ``dihedral`` ... (``pair`` is looked up by
            :meth:`pair`, never by name).
        type
            The type name, matched as an exact string.
        style
            Only the table of ``(category, style)``; without it every table of
            the category holding the name (their energies add), in style order.
        cells
            A relation row's per-instance parameter cells (§6 rule 4): each
            non-null one replaces the table value. With ``style`` naming a
            zero-row (per-instance) style, every parameter comes from them.

        Raises
        ------
        NotFound
            No such style, or no row named ``type``; lists the tables searched.
        InvalidRecord
            ``category`` is ``pair``, or a cell is not a finite JSON value.
        """
        return self._lookups().term(category, type, style, cells)

    def pair(
        self,
        a: str,
        b: str,
        style: str | None = None,
        *,
        is_14: bool = False,
        override: Mapping[str, float | None] | None = None,
    ) -> PairLookup:
        """Pair parameters of atom types ``a`` and ``b``, per pair style (§13 (c)).

        A row ``{a, b}`` in either order wins; a parameter it leaves null, and
        pairs with no row, are mixed from the two self rows by the style's
        ``mixing``; ``special_bonds`` weights are reported with each style.

        Parameters
        ----------
        a, b
            Atom type names.
        style
            Only this pair style.
        is_14
            The pair is 1-4: ``pair.lj/charmm`` under ``one_four =
            "epsilon14"`` prices it with ``epsilon14``/``sigma14`` (step 7).
        override
            A ``pairs`` row's overrides (``epsilon``, ``sigma``,
            ``charge_product``, ``lj_scale``, ``coul_scale``); non-null values
            are final (step 8, §6.2).

        Raises
        ------
        NotFound
            No pair style (or not ``style``), or a type no table knows.
        """
        return self._lookups().pair(a, b, style, is_14, override)

    def match(self, category: str, types: Sequence[str], style: str | None = None) -> MatchLookup:
        """Typing match of an atom-type tuple, one result per table (§13 (d)).

        ``""`` endpoints are wildcards; rows match in order or reversed
        (impropers in order only); the fewest wildcards win, then the earliest
        row. Class-keyed tables match the types' ``class``.

        Raises
        ------
        NotFound
            No table of the category, or no row matches in any; lists the tables.
        InvalidRecord
            ``types`` is not as long as the category's arity.
        """
        return self._lookups().match(category, types, style)

    # -- JSON interchange form (§1.1) ----------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON interchange form (forcefield.md §1.1): the document plus ``tables``."""
        return {**self._document, "tables": {n: b.to_dict() for n, b in self._tables.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, molrec_version: int | None = None) -> ForceField:
        """Read the JSON interchange form: every key but ``tables`` is the document.

        ``molrec_version`` is as in :meth:`from_section`.
        """
        if not isinstance(data, Mapping):
            raise InvalidRecord("a force field is a JSON object", path="forcefield")
        raw_tables = data.get("tables", {})
        if not isinstance(raw_tables, Mapping):
            raise InvalidRecord("tables is an object {block name: block}", path="forcefield.tables")
        tables = {
            n: Block.from_dict(b, path=f"forcefield/{n}") if isinstance(b, Mapping) else b
            for n, b in raw_tables.items()
        }
        document = {k: v for k, v in data.items() if k != "tables"}
        return cls.from_section(document, tables, molrec_version=molrec_version)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ForceField):
            return NotImplemented
        return self._document == other._document and self._tables == other._tables

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ForceField({self.name!r}, tables={sorted(self._tables)})"
