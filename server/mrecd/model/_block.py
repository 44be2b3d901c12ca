"""``Block``: named columns sharing one row count (frame.md §4), with row references (§8)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ..errors import InvalidRecord
from ._column import Column
from ._dtypes import CANONICAL, NATIVE_DTYPES, canonical_dtype
from ._typed import finite_json

__all__ = ["ENDPOINTS", "Block", "check_target", "check_targets"]

#: Relation endpoint columns; by convention they reference ``atoms`` (frame.md §8).
ENDPOINTS: Final[tuple[str, ...]] = ("atomi", "atomj", "atomk", "atoml", "atomm")
_TARGET: Final = re.compile(r"^(/[^/]+/[^/]+|[^/]+)$")
#: Attribute names the block group owns; a producer attribute may not take them.
BLOCK_KEYS: Final = frozenset({"count", "structural_shape", "targets"})


def check_target(target: object, *, path: str | None = None) -> str:
    """Return ``target`` if it is ``<block>`` or ``/<section>/<block>``, not into the trajectory."""
    if not isinstance(target, str) or not _TARGET.match(target):
        raise InvalidRecord(
            f"target {target!r} must be '<block>' or '/<section>/<block>' (frame.md §8)", path=path
        )
    if target.startswith("/trajectory/"):
        raise InvalidRecord(
            f"target {target!r} points into the trajectory, whose row count is not fixed"
            " (frame.md §8)",
            path=path,
        )
    return target


def check_targets(
    targets: Mapping[str, Any],
    columns: Mapping[str, tuple[str, tuple[int, ...]]],
    *,
    path: str | None,
) -> dict[str, str]:
    """Check a ``targets`` map against ``{column: (dtype, trailing)}``; return it as a dict."""
    if not isinstance(targets, Mapping):
        raise InvalidRecord("targets is an object {column: target}", path=path)
    out: dict[str, str] = {}
    for column, target in targets.items():
        where = f"{path}.targets.{column}" if path else f"targets.{column}"
        if column not in columns:
            raise InvalidRecord(
                f"targets names {column!r}, which is not a column of the block", path=where
            )
        dtype, trailing = columns[column]
        if dtype != "u64" or trailing:
            raise InvalidRecord(
                f"a row reference is u64[N]; column {column!r} is {dtype}{list(trailing) or ''}"
                " (frame.md §8)",
                path=where,
            )
        out[column] = check_target(target, path=where)
    return out


def _shape(value: Any, path: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0 for n in value
    ):
        raise InvalidRecord("structural_shape is a list of non-negative integers", path=path)
    return tuple(int(n) for n in value)


def _build_column(name: Any, value: Any, coerce: bool, path: str | None) -> Column:
    """One column of a block under construction, canonical keys held to their dtype."""
    if not isinstance(name, str) or not name:
        raise InvalidRecord(f"column name {name!r} must be a non-empty string", path=path)
    where = f"{path}/{name}" if path else name
    if name == "_validity" or "/" in name:
        raise InvalidRecord(
            f"{name!r} cannot name a column ('_validity' is reserved, '/' separates paths)",
            path=where,
        )
    if type(value) is np.ndarray and value.ndim:
        # The common producer input (a native numeric array): the checks of Column(...) and
        # canonical_dtype reduce to one dtype lookup, so wrap it directly.
        dtype = NATIVE_DTYPES.get(value.dtype)
        want = CANONICAL.get(name)
        if dtype is not None and (want is None or (want == dtype and value.ndim == 1)):
            return Column._trusted(value, dtype)
    if isinstance(value, Column):
        column = value
    else:
        # A numpy array keeps its own dtype so that the canonical check below sees it (a u32
        # `id` is widened only when coercing, an i64 `ix` is refused); plain Python values
        # have no width and take the canonical dtype directly.
        want = None if isinstance(value, np.ndarray) else CANONICAL.get(name)
        column = Column(value, want, path=where)
    if name in CANONICAL:
        values, dtype = canonical_dtype(
            name, column.values, column.dtype, coerce=coerce, path=where
        )
        if dtype != column.dtype:
            column = Column(values, dtype, validity=column.validity)
    return column


def _plain_columns(columns: dict[Any, Any]) -> tuple[dict[str, Column], int] | None:
    """The block of native numeric arrays of one length under plain names, else ``None``.

    What a producer presents each frame: every check of :func:`_build_column` and
    :func:`_row_count` reduces to a dtype lookup and a length; anything else (``None``)
    takes the checked path, which refuses what needs refusing.
    """
    built: dict[str, Column] = {}
    rows = -1
    for name, value in columns.items():
        if type(value) is not np.ndarray or not value.ndim or type(name) is not str:
            return None
        dtype = NATIVE_DTYPES.get(value.dtype)
        want = CANONICAL.get(name)
        if (
            dtype is None
            or (want is not None and (want != dtype or value.ndim != 1))
            or not name
            or name == "_validity"
            or "/" in name
            or (rows >= 0 and value.shape[0] != rows)
        ):
            return None
        rows = value.shape[0]
        built[name] = Column._trusted(value, dtype)
    return (built, rows) if rows >= 0 else None


def _row_count(columns: Mapping[str, Column], count: Any, path: str | None) -> int:
    """The block's count: the columns' shared length, which a given ``count`` must equal."""
    if count is not None and (
        isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)) or count < 0
    ):
        raise InvalidRecord(f"count must be a non-negative integer, not {count!r}", path=path)
    lengths = {len(c) for c in columns.values()}
    if len(lengths) > 1:
        detail = ", ".join(f"{n}: {len(c)}" for n, c in columns.items())
        raise InvalidRecord(
            f"columns disagree on the row count ({detail}) (frame.md §4)", path=path
        )
    if lengths:
        (rows,) = lengths
        if count is not None and count != rows:
            raise InvalidRecord(
                f"count {count} does not match the columns' {rows} rows (frame.md §4)", path=path
            )
        return rows
    return 0 if count is None else int(count)


class Block(Mapping[str, Column]):
    """A set of named columns sharing one leading length, the block's ``count``.

    Parameters
    ----------
    columns
        ``{name: Column | array-like}``. A plain array becomes a column; a
        canonical key (``x``, ``id``, ``element`` ...) takes its canonical dtype.
    count
        Row count; required only for a block with no columns.
    structural_shape
        Optional N-d shape whose product is ``count`` (a volumetric grid).
    targets
        Optional ``{column: target}`` row references (``"atoms"``,
        ``"/system/atoms"``); the column must be ``u64[N]``.
    attributes
        Other block attributes of a producer (finite JSON), preserved.
    coerce
        ``True`` (writers): exact widening of canonical keys (``u32`` ids to
        ``u64``). ``False`` (readers): a canonical key at another dtype is refused.
    """

    __slots__ = ("_attributes", "_columns", "_count", "_structural_shape", "_targets")

    def __init__(
        self,
        columns: Mapping[str, Column | npt.ArrayLike] | None = None,
        *,
        count: int | None = None,
        structural_shape: tuple[int, ...] | list[int] | None = None,
        targets: Mapping[str, str] | None = None,
        attributes: Mapping[str, Any] | None = None,
        coerce: bool = True,
        path: str | None = None,
    ) -> None:
        if (
            type(columns) is dict
            and count is None
            and structural_shape is None
            and not targets
            and attributes is None
            and (plain := _plain_columns(columns)) is not None
        ):
            self._columns, self._count = plain
            self._structural_shape = self._targets = None
            self._attributes = {}
            return
        if columns is not None and not isinstance(columns, Mapping):
            raise InvalidRecord("block columns is a mapping {name: column}", path=path)
        built = {
            name: _build_column(name, value, coerce, path)
            for name, value in (columns or {}).items()
        }
        count = _row_count(built, count, path)
        shape = _shape(structural_shape, path)
        if shape is not None and math.prod(shape) != count:
            raise InvalidRecord(
                f"structural_shape {list(shape)} has product {math.prod(shape)}, not the count"
                f" {count} (frame.md §4)",
                path=path,
            )
        self._columns = built
        self._count = int(count)
        self._structural_shape = shape
        self._targets = None
        if targets:
            layout = {n: (c.dtype, c.trailing) for n, c in built.items()}
            self._targets = check_targets(targets, layout, path=path)
        if attributes is not None and not isinstance(attributes, Mapping):
            raise InvalidRecord("block attributes is a mapping {name: JSON value}", path=path)
        attrs: dict[str, Any] = finite_json(dict(attributes), path=path) if attributes else {}
        clash = BLOCK_KEYS & attrs.keys()
        if clash:
            raise InvalidRecord(
                f"block attributes may not use the reserved names {sorted(clash)}", path=path
            )
        self._attributes = attrs

    @classmethod
    def _trusted(
        cls,
        columns: dict[str, Column],
        count: int,
        structural_shape: tuple[int, ...] | None = None,
        targets: dict[str, str] | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> Block:
        """Wrap parts a decoder has already validated."""
        block = object.__new__(cls)
        block._columns = columns
        block._count = count
        block._structural_shape = structural_shape
        block._targets = targets or None
        block._attributes = attributes or {}
        return block

    # -- Mapping --------------------------------------------------------------------------

    def __getitem__(self, name: str) -> Column:
        return self._columns[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    # -- accessors ------------------------------------------------------------------------

    @property
    def columns(self) -> dict[str, Column]:
        """``{name: Column}`` (a copy of the mapping)."""
        return dict(self._columns)

    @property
    def count(self) -> int:
        """The row count ``N``."""
        return self._count

    @property
    def structural_shape(self) -> tuple[int, ...] | None:
        """The N-d shape whose product is ``count``, or ``None`` for a flat table."""
        return self._structural_shape

    @property
    def targets(self) -> dict[str, str] | None:
        """Declared row references ``{column: target}``, or ``None``."""
        return None if self._targets is None else dict(self._targets)

    @property
    def attributes(self) -> dict[str, Any]:
        """A producer's other block attributes (preserved verbatim)."""
        return dict(self._attributes)

    def rows(self, start: int, stop: int) -> Block:
        """Rows ``[start, stop)`` of every column (views)."""
        columns = {n: c.rows(start, stop) for n, c in self._columns.items()}
        return Block._trusted(
            columns, max(0, min(stop, self._count) - start), None, self._targets, self._attributes
        )

    def select(self, names: list[str] | tuple[str, ...] | set[str]) -> Block:
        """The block restricted to ``names`` (targets on dropped columns are dropped)."""
        columns = {n: c for n, c in self._columns.items() if n in names}
        targets = {k: v for k, v in (self._targets or {}).items() if k in columns}
        return Block._trusted(
            columns, self._count, self._structural_shape, targets, self._attributes
        )

    # -- equality -------------------------------------------------------------------------

    def same_content(self, other: Block) -> bool:
        """Bitwise equality of count and columns (masks included), ignoring attributes."""
        if self._count != other._count or self._columns.keys() != other._columns.keys():
            return False
        return all(c.same_values(other._columns[n]) for n, c in self._columns.items())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Block):
            return NotImplemented
        return (
            self._count == other._count
            and self._structural_shape == other._structural_shape
            and (self._targets or None) == (other._targets or None)
            and self._attributes == other._attributes
            and self._columns == other._columns
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        cols = ", ".join(
            f"{n}: {c.dtype}{list(c.trailing) or ''}" for n, c in self._columns.items()
        )
        return f"Block(count={self._count}, {{{cols}}})"

    # -- JSON interchange form ------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """``{count, columns, structural_shape?, targets?, **attributes}``."""
        out: dict[str, Any] = {
            "count": self._count,
            "columns": {n: c.to_dict() for n, c in self._columns.items()},
        }
        if self._structural_shape is not None:
            out["structural_shape"] = list(self._structural_shape)
        if self._targets:
            out["targets"] = dict(self._targets)
        out.update(self._attributes)
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, path: str | None = None, coerce: bool = False
    ) -> Block:
        """Read the JSON form (extra keys are producer attributes, preserved).

        A reader's path by default: canonical keys must already hold their dtype.
        """
        if not isinstance(data, Mapping):
            raise InvalidRecord("a block is a JSON object", path=path)
        if data.get("count") is None:
            raise InvalidRecord("a block states its count, even with no columns", path=path)
        raw_columns = data.get("columns", {})
        if not isinstance(raw_columns, Mapping):
            raise InvalidRecord("block columns is an object {name: column}", path=path)
        columns = {
            name: Column.from_dict(col, path=f"{path}/{name}" if path else name)
            for name, col in raw_columns.items()
        }
        attributes = {k: v for k, v in data.items() if k not in BLOCK_KEYS | {"columns"}}
        return cls(
            columns,
            count=data.get("count"),
            structural_shape=data.get("structural_shape"),
            targets=data.get("targets"),
            attributes=attributes,
            coerce=coerce,
            path=path,
        )
