"""The ``index`` value (lmdb.md §4): one block ``records`` of ``R`` rows.

The four binding columns (``first_frame``, ``n_frames``, ``n_atoms``,
``has_trajectory``) come first, then the collection's own columns
(collection.md §2.3), declared at creation.

While it fits one page (:data:`~._meta.PAGE_ROWS` rows) the index is the one
``index`` value of lmdb.md §4, rewritten in every commit. Beyond, mrecd splits
it in pages of that many rows under ``i ‖ u64be(p)`` (its extension, marked
in ``meta``; see the README): a commit rewrites only the pages its rows fall
in, so an append costs the same at any ``R``. A writer keeps the index decoded
in an :class:`IndexTable`: columns with spare capacity (doubling), so an
append copies nothing already written. Tables are values: :meth:`IndexTable.extended` returns a new
table that may share the old one's buffers, writing only past the old row
count, so a reader holding the old table never sees a change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ...codecs import decode_blocks, encode_blocks
from ...errors import InvalidRecord
from ...model import (
    CANONICAL,
    STRING_DTYPE,
    Block,
    Column,
    as_column_array,
    check_dtype_name,
    check_precision,
    numpy_dtype,
    quantize,
)
from ._keys import index_page_key

__all__ = [
    "RESERVED",
    "IndexColumnSpec",
    "IndexRow",
    "IndexTable",
    "decode_index",
    "decode_pages",
    "parse_index_columns",
    "reopen_index_columns",
]

#: Binding columns, in header order; a collection's own column may not take these names.
RESERVED: Final[dict[str, str]] = {
    "first_frame": "u64",
    "n_frames": "u64",
    "n_atoms": "u64",
    "has_trajectory": "bool",
}
_SPEC_KEYS: Final = frozenset({"dtype", "trailing", "precision", "nullable", "derive"})
_MIN_CAPACITY: Final = 64


@dataclass(frozen=True, slots=True)
class IndexColumnSpec:
    """One index column: ``dtype``, ``trailing`` shape, optional ``precision``.

    ``nullable`` lets a record give ``None`` (a null row); ``derive`` is a
    local callable ``record -> value`` used when a record brings no value.
    Neither is stored: the file records a column's dtype, shape and
    precision only.
    """

    dtype: str
    trailing: tuple[int, ...] = ()
    precision: float | None = None
    nullable: bool = False
    derive: Callable[[Any], Any] | None = None

    def convert(self, value: Any, name: str) -> npt.NDArray[Any] | None:
        """Hold one record's value to this column (exact conversions only)."""
        where = f"index.{name}"
        if value is None:
            if not self.nullable:
                raise InvalidRecord("the value is None but the column is not nullable", path=where)
            return None
        if self.dtype == "string":
            raw = np.asarray(value, dtype=object)
            if not all(isinstance(v, str) for v in raw.flat):
                raise InvalidRecord(f"a string column holds text, not {value!r}", path=where)
            array: npt.NDArray[Any] = raw.astype(STRING_DTYPE)
        else:
            raw = value if isinstance(value, np.ndarray) else np.asarray(value)
            if raw.dtype.kind == "b" and self.dtype != "bool":
                raise InvalidRecord(f"a boolean is not a {self.dtype} value", path=where)
            array = as_column_array(raw[None, ...], self.dtype, path=where)[0][0]
        if array.shape != self.trailing:
            raise InvalidRecord(
                f"value of shape {list(array.shape)} does not match the declared trailing shape"
                f" {list(self.trailing)}",
                path=where,
            )
        if self.precision is not None:
            array = quantize(array, self.precision)
        return array

    def to_dict(self) -> dict[str, Any]:
        """The declared form ``{dtype, trailing, precision?}`` (what travels over HTTP)."""
        out: dict[str, Any] = {"dtype": self.dtype, "trailing": list(self.trailing)}
        if self.precision is not None:
            out["precision"] = self.precision
        if self.nullable:
            out["nullable"] = True
        return out


def _trailing(value: Any, where: str) -> tuple[int, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value
    ):
        raise InvalidRecord("trailing is a list of non-negative integers", path=f"{where}.trailing")
    return tuple(value)


def _parse_one(name: Any, entry: Any) -> IndexColumnSpec:
    where = f"index_columns.{name}"
    if not isinstance(name, str) or not name or "/" in name or name == "_validity":
        raise InvalidRecord(f"{name!r} cannot name an index column", path="index_columns")
    if name in RESERVED:
        raise InvalidRecord(
            f"{name!r} is reserved for the binding (collection.md §2.3, lmdb.md §4)", path=where
        )
    if not isinstance(entry, Mapping):
        raise InvalidRecord("an index column is declared as {dtype, trailing?, ...}", path=where)
    unknown = set(entry) - _SPEC_KEYS
    if unknown:
        raise InvalidRecord(
            f"unknown keys {sorted(unknown)}; allowed: {sorted(_SPEC_KEYS)}", path=where
        )
    dtype = check_dtype_name(entry.get("dtype"), path=f"{where}.dtype")
    trailing = _trailing(entry.get("trailing"), where)
    want = CANONICAL.get(name)
    if want is not None and (dtype != want or trailing):
        raise InvalidRecord(f"canonical key {name!r} is {want}[N] (conventions.md §2)", path=where)
    precision = entry.get("precision")
    if precision is not None:
        precision = check_precision(precision, path=f"{where}.precision")
        if dtype != "f64":
            raise InvalidRecord(
                f"precision is declared only on f64 columns, not {dtype} (frame.md §7.2)",
                path=f"{where}.precision",
            )
    nullable = entry.get("nullable", False)
    derive = entry.get("derive")
    if not isinstance(nullable, bool):
        raise InvalidRecord("nullable is a boolean", path=f"{where}.nullable")
    if derive is not None and not callable(derive):
        raise InvalidRecord("derive is a callable record -> value", path=f"{where}.derive")
    return IndexColumnSpec(dtype, trailing, precision, nullable, derive)


def parse_index_columns(columns: Mapping[str, Any] | None) -> dict[str, IndexColumnSpec]:
    """The collection's own index columns from ``{name: {dtype, trailing?, precision?,
    nullable?, derive?}}``; reserved and malformed names are refused."""
    if columns is None:
        return {}
    if not isinstance(columns, Mapping):
        raise InvalidRecord("index_columns is a mapping {name: declaration}", path="index_columns")
    return {name: _parse_one(name, entry) for name, entry in columns.items()}


def _stored_spec(column: Column) -> IndexColumnSpec:
    return IndexColumnSpec(
        column.dtype, column.trailing, column.precision, nullable=column.validity is not None
    )


def reopen_index_columns(
    stored: Mapping[str, IndexColumnSpec], given: Mapping[str, Any] | None
) -> dict[str, IndexColumnSpec]:
    """Stored column declarations, completed by what a reopening writer passes.

    ``given`` may add ``derive`` and ``nullable`` (the file cannot record
    them); a ``dtype``, ``trailing`` or ``precision`` it restates must match
    the file's.
    """
    out = dict(stored)
    for name, entry in (given or {}).items():
        if name not in stored:
            raise InvalidRecord(
                f"{name!r} is not an index column of this collection; it has {sorted(stored)}",
                path=f"index_columns.{name}",
            )
        if not isinstance(entry, Mapping):
            raise InvalidRecord("an index column entry is a mapping", path=f"index_columns.{name}")
        have = stored[name]
        parsed = _parse_one(name, {"dtype": have.dtype, **entry})
        if "trailing" not in entry:
            parsed = replace(parsed, trailing=have.trailing)
        if "precision" not in entry:
            parsed = replace(parsed, precision=have.precision)
        if (parsed.dtype, parsed.trailing, parsed.precision) != (
            have.dtype,
            have.trailing,
            have.precision,
        ):
            raise InvalidRecord(
                f"declared {parsed.to_dict()} differs from the stored {have.to_dict()}",
                path=f"index_columns.{name}",
            )
        out[name] = replace(parsed, nullable=parsed.nullable or have.nullable)
    return out


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One record's index row: the binding's four values and its own columns."""

    n_frames: int
    n_atoms: int
    has_trajectory: bool
    own: dict[str, npt.NDArray[Any] | None]


def _allocate(spec: IndexColumnSpec, capacity: int) -> npt.NDArray[Any]:
    shape = (capacity, *spec.trailing)
    if spec.dtype == "string":
        return np.full(shape, "", dtype=STRING_DTYPE)
    return np.zeros(shape, dtype=numpy_dtype(spec.dtype))


class IndexTable:
    """The decoded index with spare capacity; immutable from the outside.

    Parameters
    ----------
    specs
        Every column in header order: the four binding columns, then the
        collection's own.
    """

    __slots__ = ("_block", "_valid", "_values", "n", "specs")

    def __init__(
        self,
        specs: dict[str, IndexColumnSpec],
        n: int,
        values: dict[str, npt.NDArray[Any]],
        valid: dict[str, npt.NDArray[np.bool_] | None],
    ) -> None:
        self.specs = specs
        self.n = n
        self._values = values
        self._valid = valid
        self._block: Block | None = None

    @classmethod
    def empty(cls, own: Mapping[str, IndexColumnSpec]) -> IndexTable:
        """A table of zero rows with the binding columns and ``own``."""
        specs = {name: IndexColumnSpec(dtype) for name, dtype in RESERVED.items()} | dict(own)
        values = {name: _allocate(spec, _MIN_CAPACITY) for name, spec in specs.items()}
        return cls(specs, 0, values, dict.fromkeys(specs))

    @classmethod
    def from_block(cls, block: Block) -> IndexTable:
        """A table holding a decoded, checked ``records`` block (copied, with capacity).

        Columns are found by name: the four binding columns first in the
        file is the reference writer's order (lmdb.md §4, (ref)), not a rule.
        The table puts them first, so a rewritten index is in that order.
        """
        order = [*RESERVED, *(name for name in block if name not in RESERVED)]
        specs = {name: _stored_spec(block[name]) for name in order}
        n = block.count
        capacity = max(_MIN_CAPACITY, n + n // 2)
        values: dict[str, npt.NDArray[Any]] = {}
        valid: dict[str, npt.NDArray[np.bool_] | None] = {}
        for name in order:
            column = block[name]
            values[name] = _allocate(specs[name], capacity)
            values[name][:n] = column.values
            mask = None
            if column.validity is not None:
                mask = np.ones(capacity, dtype=np.bool_)
                mask[:n] = column.validity
            valid[name] = mask
        return cls(specs, n, values, valid)

    @property
    def own(self) -> dict[str, IndexColumnSpec]:
        """The collection's own columns."""
        return {n: s for n, s in self.specs.items() if n not in RESERVED}

    @property
    def first_frame(self) -> npt.NDArray[np.uint64]:
        """``u64[R]``, global ordinal of each record's first frame."""
        return self._values["first_frame"][: self.n]

    @property
    def n_frames(self) -> npt.NDArray[np.uint64]:
        """``u64[R]``, frames per record."""
        return self._values["n_frames"][: self.n]

    @property
    def has_trajectory(self) -> npt.NDArray[np.bool_]:
        """``bool[R]``, whether each record has a trajectory."""
        return self._values["has_trajectory"][: self.n]

    def row(self, r: int) -> tuple[int, int, bool]:
        """``(first_frame, n_frames, has_trajectory)`` of record ``r < n`` as Python values."""
        return (
            int(self._values["first_frame"][r]),
            int(self._values["n_frames"][r]),
            bool(self._values["has_trajectory"][r]),
        )

    @property
    def total_frames(self) -> int:
        """Frames over all records."""
        if not self.n:
            return 0
        return int(self.first_frame[-1]) + int(self.n_frames[-1])

    # -- growing --------------------------------------------------------------------------

    def _grown(self, rows: int) -> tuple[dict[str, npt.NDArray[Any]], dict[str, Any]]:
        capacity = len(self._values["first_frame"])
        if self.n + rows <= capacity:
            return dict(self._values), dict(self._valid)
        capacity = max(2 * capacity, self.n + rows)
        values = {}
        valid: dict[str, Any] = {}
        for name, spec in self.specs.items():
            values[name] = _allocate(spec, capacity)
            values[name][: self.n] = self._values[name][: self.n]
            mask = self._valid[name]
            if mask is not None:
                valid[name] = np.ones(capacity, dtype=np.bool_)
                valid[name][: self.n] = mask[: self.n]
            else:
                valid[name] = None
        return values, valid

    def extended(self, rows: Iterable[IndexRow]) -> IndexTable:
        """A new table with ``rows`` appended (``first_frame`` computed here)."""
        batch = list(rows)
        values, valid = self._grown(len(batch))
        start = self.total_frames
        for k, row in enumerate(batch):
            at = self.n + k
            values["first_frame"][at] = start
            values["n_frames"][at] = row.n_frames
            values["n_atoms"][at] = row.n_atoms
            values["has_trajectory"][at] = row.has_trajectory
            start += row.n_frames
            for name, value in row.own.items():
                if value is None:
                    if valid[name] is None:
                        mask = np.ones(len(values[name]), dtype=np.bool_)
                        valid[name] = mask
                    valid[name][at] = False
                else:
                    values[name][at] = value
                    if valid[name] is not None:
                        valid[name][at] = True
        return IndexTable(self.specs, self.n + len(batch), values, valid)

    def appended(self, block: Block, skip: int) -> IndexTable:
        """A new table with the rows of ``block`` from ``skip`` on appended (read
        from the file: checked by the caller against this table's columns)."""
        rows = block.count - skip
        values, valid = self._grown(rows)
        specs = dict(self.specs)
        stop = self.n + rows
        for name, spec in self.specs.items():
            column = block[name]
            values[name][self.n : stop] = column.values[skip:]
            if column.validity is not None and valid[name] is None:
                valid[name] = np.ones(len(values[name]), dtype=np.bool_)
                specs[name] = replace(spec, nullable=True)
            if valid[name] is not None:
                valid[name][self.n : stop] = (
                    True if column.validity is None else column.validity[skip:]
                )
        return IndexTable(specs, stop, values, valid)

    # -- the stored form ------------------------------------------------------------------

    def rows(self, start: int, stop: int) -> Block:
        """Rows ``start .. stop`` as a ``records`` block (read-only views)."""
        columns = {}
        for name, spec in self.specs.items():
            mask = self._valid[name]
            columns[name] = Column._trusted(
                self._values[name][start:stop],
                spec.dtype,
                None if mask is None else mask[start:stop],
                spec.precision,
            )
        return Block._trusted(columns, stop - start)

    def encode_page(self, p: int, page_rows: int) -> bytes:
        """Index page ``p``: rows ``p * page_rows ..`` as frame bytes (like ``index``)."""
        start = p * page_rows
        block = self.rows(start, min(self.n, start + page_rows))
        return encode_blocks({"records": block}, {"meta": {}})

    def block(self) -> Block:
        """The ``records`` block (read-only views of the first ``R`` rows)."""
        if self._block is None:
            self._block = self.rows(0, self.n)
        return self._block

    def encode(self) -> bytes:
        """The ``index`` value: frame bytes, header ``meta`` ``{}`` (reference)."""
        return encode_blocks({"records": self.block()}, {"meta": {}})


def _check_reserved(block: Block) -> None:
    for name, dtype in RESERVED.items():
        column = block.get(name)
        where = f"index/records/{name}"
        if column is None:
            raise InvalidRecord(
                f"the index lacks the binding column {name!r} (lmdb.md §4)", path=where
            )
        if column.dtype != dtype or column.trailing or column.validity is not None:
            raise InvalidRecord(f"{name} is {dtype}[R] without a mask (lmdb.md §4)", path=where)


def _check_counts(
    block: Block, n_records: int, n_frames: int, first_row: int = 0, base: int = 0
) -> None:
    """``block`` holds records ``first_row ..`` whose frames start at ``base``."""
    if first_row + block.count != n_records:
        raise InvalidRecord(
            f"the index has {first_row + block.count} rows but meta.n_records is {n_records}"
            " (lmdb.md §4)",
            path="index/records",
        )
    first = block["first_frame"].values
    counts = block["n_frames"].values
    if block.count and base + float(counts.astype(np.float64).sum()) > 2.0**63:
        raise InvalidRecord("n_frames sums past 2^63", path="index/records/n_frames")
    expected = np.full(block.count, base, dtype=np.uint64)
    if block.count > 1:
        np.cumsum(counts[:-1], out=expected[1:])
        expected[1:] += np.uint64(base)
    bad = np.flatnonzero(first != expected)
    if bad.size:
        k = int(bad[0])
        raise InvalidRecord(
            f"first_frame[{first_row + k}] is {int(first[k])}, not the exclusive prefix sum"
            f" {int(expected[k])} of n_frames (lmdb.md §4)",
            path="index/records/first_frame",
        )
    total = int(first[-1]) + int(counts[-1]) if block.count else base
    if total != n_frames:
        raise InvalidRecord(
            f"the index counts {total} frames but meta.n_frames is {n_frames} (lmdb.md §4)",
            path="index/records/n_frames",
        )
    orphans = np.flatnonzero(~block["has_trajectory"].values & (counts > 0))
    if orphans.size:
        raise InvalidRecord(
            f"record {first_row + int(orphans[0])} has frames but has_trajectory is false",
            path="index/records/has_trajectory",
        )


def decode_index(raw: bytes | memoryview, n_records: int, n_frames: int) -> IndexTable:
    """Read and check the ``index`` value against the ``meta`` counts (lmdb.md §4)."""
    blocks, _ = decode_blocks(raw, copy=True)
    if list(blocks) != ["records"]:
        raise InvalidRecord(
            f"the index holds exactly one block 'records', not {list(blocks)} (lmdb.md §4)",
            path="index",
        )
    block = blocks["records"]
    _check_reserved(block)
    _check_counts(block, n_records, n_frames)
    return IndexTable.from_block(block)


def _one_block(raw: bytes | memoryview, where: str) -> Block:
    blocks, _ = decode_blocks(raw, copy=False)
    if list(blocks) != ["records"]:
        raise InvalidRecord(
            f"the index holds exactly one block 'records', not {list(blocks)} (lmdb.md §4)",
            path=where,
        )
    return blocks["records"]


def _page(get: Callable[[bytes], Any], p: int, page_rows: int, n_records: int) -> Block:
    where = f"index page {p}"
    raw = get(index_page_key(p))
    if raw is None:
        raise InvalidRecord(
            f"index page {p} (key i‖{p}) is missing: {n_records} records need"
            f" {-(-n_records // page_rows)} pages of {page_rows} rows",
            path=where,
        )
    block = _one_block(raw, where)
    rows = min(page_rows, n_records - p * page_rows)
    if block.count != rows:
        raise InvalidRecord(
            f"index page {p} has {block.count} rows; with {n_records} records in pages of"
            f" {page_rows} it holds {rows}",
            path=where,
        )
    return block


def _signature(column: Column) -> tuple[str, tuple[int, ...], float | None]:
    return column.dtype, column.trailing, column.precision


def _mask_of(page: Block, name: str) -> npt.NDArray[np.bool_]:
    mask = page[name].validity
    return np.ones(page.count, np.bool_) if mask is None else mask


def _joined(pages: list[Block], first_page: int) -> Block:
    """One block of the pages' rows (copied out of the transaction's buffers)."""
    head = pages[0]
    for k, page in enumerate(pages[1:], first_page + 1):
        if page.columns.keys() != head.columns.keys() or any(
            _signature(page[name]) != _signature(head[name]) for name in head
        ):
            raise InvalidRecord(
                f"index page {k}'s columns differ from page {first_page}'s: every page holds the"
                " same columns",
                path=f"index page {k}",
            )
    columns = {}
    for name, column in head.items():
        masks = [page[name].validity for page in pages]
        validity = None
        if any(m is not None for m in masks):
            validity = np.concatenate([_mask_of(page, name) for page in pages])
        values = np.concatenate([page[name].values for page in pages])
        columns[name] = Column._trusted(values, column.dtype, validity, column.precision)
    return Block._trusted(columns, sum(page.count for page in pages))


def decode_pages(
    get: Callable[[bytes], Any],
    page_rows: int,
    n_records: int,
    n_frames: int,
    old: IndexTable | None = None,
) -> IndexTable:
    """Read and check a paged index (mrecd's extension) against the ``meta`` counts.

    With ``old`` (the table of an earlier state of the same file, which only
    appends) only the pages holding rows past ``old.n`` are read.
    """
    n_pages = -(-n_records // page_rows)
    if get(index_page_key(n_pages)) is not None:
        raise InvalidRecord(
            f"index page {n_pages} exists past the {n_pages} pages {n_records} records fill",
            path=f"index page {n_pages}",
        )
    if old is not None and not 0 < old.n <= n_records:
        old = None
    first_page = 0 if old is None else old.n // page_rows
    if first_page == n_pages:
        pages: list[Block] = []
    else:
        pages = [_page(get, p, page_rows, n_records) for p in range(first_page, n_pages)]
    if old is None:
        block = _joined(pages, 0) if pages else IndexTable.empty({}).block()
        _check_reserved(block)
        _check_counts(block, n_records, n_frames)
        return IndexTable.from_block(block)
    return _extended_by_pages(old, pages, first_page, page_rows, n_records, n_frames)


def _extended_by_pages(
    old: IndexTable,
    pages: list[Block],
    first_page: int,
    page_rows: int,
    n_records: int,
    n_frames: int,
) -> IndexTable:
    """``old`` with the rows of ``pages`` (from ``first_page`` on) past ``old.n``."""
    if not pages:  # old.n == n_records, a whole number of pages
        _check_counts(old.rows(0, 0), n_records, n_frames, old.n, old.total_frames)
        return old
    block = _joined(pages, first_page)
    _check_reserved(block)
    if block.columns.keys() != old.specs.keys() or any(
        _signature(block[n]) != (s.dtype, s.trailing, s.precision) for n, s in old.specs.items()
    ):
        raise InvalidRecord(
            f"index page {first_page}'s columns differ from the index read before",
            path=f"index page {first_page}",
        )
    skip = old.n - first_page * page_rows
    new_rows = Block._trusted(
        {name: _tail(column, skip) for name, column in block.items()}, block.count - skip
    )
    _check_counts(new_rows, n_records, n_frames, old.n, old.total_frames)
    return old.appended(block, skip)


def _tail(column: Column, skip: int) -> Column:
    validity = None if column.validity is None else column.validity[skip:]
    return Column._trusted(column.values[skip:], column.dtype, validity, column.precision)
