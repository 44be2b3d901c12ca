"""What a collection append takes, checked the same way locally and in the client.

A record's system and frames arrive as :class:`Frame` objects or their
constructor mappings; its own index row comes per record or as columns.
Both the LMDB binding and the typed client turn them into model values here,
so a refusal reads the same on either side of the wire.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..errors import InvalidRecord
from ._frame import Frame

__all__ = ["FRAME_KEYS", "frame_input", "index_rows"]

#: The keys a frame mapping may hold (the :class:`Frame` constructor's arguments).
FRAME_KEYS: Final = frozenset({"blocks", "meta", "meta_types", "box", "step", "time"})


def frame_input(value: Any, path: str, *, update: bool) -> Frame:
    """``value`` as a :class:`Frame`: itself, or built from its constructor mapping.

    Parameters
    ----------
    value
        A :class:`Frame` or a mapping of :data:`FRAME_KEYS`.
    path
        Where the value sits, for errors.
    update
        ``True`` for a trajectory frame; ``False`` for a system, which has no
        step or time.

    Raises
    ------
    InvalidRecord
        Not a frame or a mapping, an unknown key, or a system with a step or time.
    """
    if isinstance(value, Frame):
        return value
    if not isinstance(value, Mapping):
        raise InvalidRecord(f"expected a Frame or a mapping, not {type(value).__name__}", path=path)
    unknown = set(value) - FRAME_KEYS
    if unknown:
        raise InvalidRecord(f"unknown frame keys {sorted(unknown)}", path=path)
    if not update and (value.get("step") is not None or value.get("time") is not None):
        raise InvalidRecord("a system is not a trajectory update: no step or time", path=path)
    return Frame(
        value.get("blocks"),
        meta=value.get("meta"),
        meta_types=value.get("meta_types"),
        box=value.get("box"),
        step=value.get("step"),
        time=value.get("time"),
        path=path,
    )


def index_rows(
    index: Sequence[Mapping[str, Any] | None] | Mapping[str, Sequence[Any]] | None, n: int
) -> list[Mapping[str, Any] | None]:
    """One own-index row per record from ``index`` (rows, or ``{column: values}``).

    Raises
    ------
    InvalidRecord
        A column or the row list does not hold ``n`` values.
    """
    if index is None:
        return [None] * n
    if isinstance(index, Mapping):
        columns = dict(index)
        for name, values in columns.items():
            if isinstance(values, (str, bytes)) or len(values) != n:
                raise InvalidRecord(
                    f"index column {name!r} needs {n} values, one per record", path=f"index.{name}"
                )
        return [{name: values[k] for name, values in columns.items()} for k in range(n)]
    rows = list(index)
    if len(rows) != n:
        raise InvalidRecord(f"index has {len(rows)} rows for {n} records", path="index")
    return rows
