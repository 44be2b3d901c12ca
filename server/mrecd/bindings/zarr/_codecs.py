"""The reference codec pipelines of chunking.md §5, as Zarr V3 codec JSON.

Inner chunk pipeline = array->bytes (``bytes`` little-endian, or ``vlen-utf8``
for strings), then the bytes->bytes codecs of the table, then ``crc32c``:

=========================================  ==================================
array                                      bytes->bytes codecs
=========================================  ==================================
non-float column, dense array, mask        ``gzip`` level 1
``f64`` column with a declared precision   ``numcodecs.shuffle`` (8), ``zstd`` 3
other float column (f64, c64, c128)        none
=========================================  ==================================
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["CRC32C", "SHARD_INDEX_CODECS", "inner_codecs"]

CRC32C: Final[dict[str, Any]] = {"name": "crc32c"}
GZIP1: Final[dict[str, Any]] = {"name": "gzip", "configuration": {"level": 1}}
SHUFFLE8: Final[dict[str, Any]] = {"name": "numcodecs.shuffle", "configuration": {"elementsize": 8}}
ZSTD3: Final[dict[str, Any]] = {"name": "zstd", "configuration": {"level": 3, "checksum": False}}
#: Codecs of a shard index (Zarr's usual choice; chunking.md leaves it open).
SHARD_INDEX_CODECS: Final[list[dict[str, Any]]] = [
    {"name": "bytes", "configuration": {"endian": "little"}},
    CRC32C,
]


def serializer(dtype: str) -> dict[str, Any]:
    """The array->bytes codec of a column dtype."""
    if dtype == "string":
        return {"name": "vlen-utf8", "configuration": {}}
    return {"name": "bytes", "configuration": {"endian": "little"}}


def inner_codecs(
    dtype: str, *, precision: float | None = None, dense: bool = False
) -> list[dict[str, Any]]:
    """The reference inner pipeline for an array (chunking.md §5), ``crc32c`` last.

    Parameters
    ----------
    dtype
        Column dtype name (``"f64"``, ``"u64"``, ``"string"`` ...).
    precision
        The column's declared precision; selects shuffle + zstd.
    dense
        A dense per-step array (``step``, ``time``, ``meta/*``, ``offset``,
        ``step_index``, ``box/*``) or a mask: gzip 1 whatever the dtype.
    """
    if precision is not None:
        middle = [SHUFFLE8, ZSTD3]
    elif dtype in ("f64", "c64", "c128") and not dense:
        middle = []
    else:
        middle = [GZIP1]
    return [serializer(dtype), *middle, CRC32C]
