"""``ForceField``: the force-field document plus one style table (a Block) per style."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidRecord
from ..model import Block, finite_json

__all__ = ["ForceField"]


class ForceField:
    """A force-field section: ``document`` (plain JSON) and ``tables`` ``{block name: Block}``.

    Parameters
    ----------
    document
        The group's attribute map: ``name``, ``units``, ``styles`` ... Unknown
        keys are preserved verbatim.
    tables
        One style table per style, keyed by block name ``<category>.<style>``
        (percent-encoded).
    """

    __slots__ = ("_document", "_tables")

    def __init__(self, document: Mapping[str, Any], tables: Mapping[str, Block]) -> None:
        if not isinstance(document, Mapping):
            raise InvalidRecord("the force-field document is a JSON object", path="forcefield")
        self._document: dict[str, Any] = finite_json(dict(document), path="forcefield")
        self._tables: dict[str, Block] = dict(tables)

    @classmethod
    def from_section(
        cls,
        document: Mapping[str, Any],
        tables: Mapping[str, Block],
        *,
        molrec_version: int | None = None,
    ) -> ForceField:
        """Build from the stored form (group attributes + blocks); the bindings' door.

        ``molrec_version`` is the version of the record (or collection) the
        section was read from: a version-1 section is converted as
        forcefield.md §11 prescribes; ``None`` (unstamped) and ``2`` read as is.
        """
        return cls(document, tables)

    def to_section(self) -> tuple[dict[str, Any], dict[str, Block]]:
        """The stored form: ``(document, tables)``."""
        return self.document, self.tables

    @property
    def document(self) -> dict[str, Any]:
        """The document (every key but the tables), as stored in the group attributes."""
        return dict(self._document)

    @property
    def tables(self) -> dict[str, Block]:
        """``{block name: Block}``, one style table per style."""
        return dict(self._tables)

    @property
    def name(self) -> str:
        """The force field's name."""
        return str(self._document.get("name", ""))

    def to_dict(self) -> dict[str, Any]:
        """JSON interchange form (forcefield.md §1.1): the document plus ``tables``."""
        return {**self._document, "tables": {n: b.to_dict() for n, b in self._tables.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ForceField:
        """Read the JSON interchange form: every key but ``tables`` is the document."""
        if not isinstance(data, Mapping):
            raise InvalidRecord("a force field is a JSON object", path="forcefield")
        raw_tables = data.get("tables") or {}
        if not isinstance(raw_tables, Mapping):
            raise InvalidRecord("tables is an object {block name: block}", path="forcefield.tables")
        tables = {n: Block.from_dict(b, path=f"forcefield/{n}") for n, b in raw_tables.items()}
        return cls({k: v for k, v in data.items() if k != "tables"}, tables)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ForceField):
            return NotImplemented
        return self._document == other._document and self._tables == other._tables

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ForceField({self.name!r}, tables={sorted(self._tables)})"
