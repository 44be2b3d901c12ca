"""Assembling a force-field section row by row: what every translator (§9) shares.

A translator appends rows (``{column: value}``) to one :class:`TableBuilder`
per style, then :func:`assemble` turns them into blocks and validates the
result as a reader would (a translator never writes what a reader refuses).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np

from ..errors import InvalidRecord
from ..model import CANONICAL, Block, Column
from ._model import ForceField
from ._names import block_name
from ._registry import ANNOTATIONS, ENDPOINT_COLUMNS

__all__ = ["TableBuilder", "assemble", "endpoint_name", "file_digest"]

#: How a wildcard endpoint reads in a generated row name (names are never parsed).
_WILDCARD_IN_NAME: Final = "*"
_STRINGS: Final = frozenset({"name", *ENDPOINT_COLUMNS, *ANNOTATIONS})


def endpoint_name(endpoints: Sequence[str]) -> str:
    """The row name a translator derives from endpoints: ``"CT-HC"``, ``"*-C-N-*"``."""
    return "-".join(e or _WILDCARD_IN_NAME for e in endpoints)


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes, lowercase hex (``source.sha256``, §2.3)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class TableBuilder:
    """The rows of one style table, in insertion order, with unique names.

    Attributes
    ----------
    category, style
        The style entry the table belongs to.
    params
        Style-level parameters of the entry.
    endpoint_key
        ``"type"`` or ``"class"``.
    arity
        Number of endpoint columns (``itom`` ...).
    """

    category: str
    style: str
    params: dict[str, Any] = field(default_factory=dict)
    endpoint_key: str = "type"
    arity: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    _names: set[str] = field(default_factory=set)

    def add(
        self, endpoints: Sequence[str], values: Mapping[str, Any], name: str | None = None
    ) -> str:
        """Append a row; returns its name (derived from the endpoints unless given).

        A derived name that is taken gets a ``#n`` suffix: two rows may state
        the same endpoints (the earlier wins a typing tie, §13 (d)), and type
        names holding ``-`` can join to the same string.
        """
        if len(endpoints) != self.arity:
            raise ValueError(f"{self.category}.{self.style} rows have {self.arity} endpoints")
        base = endpoint_name(endpoints) if name is None else name
        unique, n = base, 1
        while unique in self._names:
            n += 1
            unique = f"{base}#{n}"
        self._names.add(unique)
        row = {"name": unique, **dict(zip(ENDPOINT_COLUMNS, endpoints, strict=False)), **values}
        self.rows.append(row)
        return unique

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def entry(self) -> dict[str, Any]:
        """The ``styles`` entry, as the reference writer stores it."""
        out: dict[str, Any] = {"category": self.category, "style": self.style}
        if self.params:
            out["params"] = dict(self.params)
        if self.endpoint_key != "type":
            out["endpoint_key"] = self.endpoint_key
        return out

    def block(self) -> Block:
        """The table as a :class:`~mrecd.model.Block` (null cells as validity ``false``)."""
        names = ["name", *ENDPOINT_COLUMNS[: self.arity]]
        fixed = len(names)
        for row in self.rows:
            names += [k for k in row if k not in names]
        cells = {n: [row.get(n) for row in self.rows] for n in names}
        # A column no row states is absent, not all-null: the file never named it.
        columns = {
            n: _column(n, c)
            for i, (n, c) in enumerate(cells.items())
            if i < fixed or any(v is not None for v in c)
        }
        return Block(columns, count=len(self.rows))


def _column(name: str, cells: list[Any]) -> Column:
    present = [c for c in cells if c is not None]
    if name in _STRINGS or (present and isinstance(present[0], str)):
        dtype = "string"
    else:
        dtype = CANONICAL.get(name, "f64")
    validity = None if len(present) == len(cells) else [c is not None for c in cells]
    if dtype == "string":
        return Column(["" if c is None else c for c in cells], "string", validity=validity)
    shape = np.shape(present[0]) if present else ()
    filler = np.zeros(shape)
    array = np.array([filler if c is None else c for c in cells], dtype=np.float64)
    if dtype == "u64":
        return Column(array.astype(np.uint64), "u64", validity=validity)
    return Column(array.reshape((len(cells), *shape)), "f64", validity=validity)


def assemble(
    document: Mapping[str, Any], tables: Sequence[TableBuilder], *, where: str
) -> ForceField:
    """Build and validate the section: ``document`` plus one entry and block per table.

    Raises
    ------
    InvalidRecord
        The result breaks a reader's rule (§12.1); the message is prefixed by
        ``where`` (the source file).
    """
    doc = {**document, "styles": [t.entry() for t in tables]}
    blocks = {block_name(t.category, t.style): t.block() for t in tables}
    try:
        return ForceField(doc, blocks)
    except InvalidRecord as exc:
        raise InvalidRecord(f"{where}: {exc.message}", path=exc.path) from None
