"""Names and extents of the record layout (storage.md §3-§5, chunking.md §4.2)."""

from __future__ import annotations

import math
from typing import Final

from ...errors import InvalidRecord

__all__ = [
    "BOX",
    "BRAND",
    "DOCUMENT_SECTIONS",
    "FRAME_SECTIONS",
    "SUBSTANTIVE",
    "VALIDITY",
    "ZIP_BRAND",
    "check_node_name",
    "plan_extents",
]

#: A live record is a directory ``<stem>.mrec``; a packed one ``<stem>.mrec.zip`` (storage.md §1).
BRAND: Final = ".mrec"
ZIP_BRAND: Final = ".mrec.zip"
#: Sections whose presence makes a record (record.md §2 rule 2).
SUBSTANTIVE: Final = ("frame", "system", "trajectory", "forcefield", "status")
#: Document sections: one JSON object as the attributes of an array-free group.
DOCUMENT_SECTIONS: Final = ("meta", "status", "method")
#: Frame-shaped sections this package reads: typed meta (frame, system) or a plain document
#: (forcefield).
FRAME_SECTIONS: Final = ("system", "frame", "forcefield")
#: Reserved child of a frame-shaped group (the cell) and of a block group (masks).
BOX: Final = "box"
VALIDITY: Final = "_validity"

#: Target bytes of one chunk of a fixed-size array (chunking.md §4.2).
CHUNK_TARGET: Final = 524288
#: More chunks than this and the array becomes one shard.
MAX_PLAIN_CHUNKS: Final = 4


def check_node_name(name: object, *, what: str, path: str | None) -> str:
    """Refuse a block or column name that cannot be a Zarr node name on disk.

    Zarr V3 forbids ``/``, the empty name, ``.`` and ``..``, and reserves names
    starting with ``__``; ``zarr.json`` would collide with the parent's
    metadata file and NUL is not a file-name character. (The spec is silent
    on these; a writer refuses them rather than write a store no reader can
    walk.)
    """
    if (
        not isinstance(name, str)
        or name in ("", ".", "..", "zarr.json")
        or "/" in name
        or "\x00" in name
        or name.startswith("__")
    ):
        raise InvalidRecord(
            f"{what} name {name!r} cannot be a Zarr node name (empty, '.', '..', 'zarr.json',"
            " '/', NUL and a leading '__' are refused; storage.md §1)",
            path=path,
        )
    return name


def plan_extents(
    shape: tuple[int, ...], row_bytes: int | None
) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """``(chunk shape, shard shape or None)`` of a fixed-size array (chunking.md §4.2).

    Cut along the leading axis only: ``rows = min(N, max(1, 524288 // row_bytes))``;
    at most four chunks are stored as they are, more become one shard spanning
    the whole array (index at the end). A string array (``row_bytes`` None), an
    empty leading axis, or rows of zero bytes make one chunk holding everything;
    every chunk extent is at least 1 to be valid Zarr.
    """
    if not shape:  # a 0-d array (an observable) is its own single chunk
        return (), None
    rows_total = shape[0]
    trailing = tuple(max(1, n) for n in shape[1:])
    if row_bytes is None or row_bytes == 0 or rows_total == 0:
        return (max(1, rows_total), *trailing), None
    rows = min(rows_total, max(1, CHUNK_TARGET // row_bytes))
    chunks = math.ceil(rows_total / rows)
    if chunks <= MAX_PLAIN_CHUNKS:
        return (rows, *trailing), None
    return (rows, *trailing), (rows * chunks, *trailing)
