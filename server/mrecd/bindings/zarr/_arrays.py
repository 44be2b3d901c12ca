"""One array: its column dtype, its decoded values, and how a writer lays it down.

Reading decodes with zarr-python from the strictly parsed ``zarr.json`` the
tree already holds (no second parse). Writing uses ``zarr.create_array`` with
the reference pipelines of :func:`inner_codecs` and the fixed-size extents of
chunking.md §4.2.
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import zarr
from zarr.core.array import Array, AsyncArray
from zarr.core.metadata.v3 import ArrayV3Metadata
from zarr.storage import StorePath

from ...errors import InvalidRecord
from ...model import DTYPE_OF_ZARR, STRING_DTYPE, ZARR_DATA_TYPE, numpy_dtype
from ...storage import Location
from ._codecs import inner_codecs
from ._layout import plan_extents
from ._tree import Node, Tree
from ._zarr_store import ZarrAdapter

__all__ = ["array_dtype", "array_shape", "read_values", "write_array"]

_NARROW_FLOATS: Final = frozenset({"float16", "float32", "bfloat16"})
_FILL: Final[dict[str, Any]] = {"bool": False, "string": ""}


def _data_type_name(node: Node) -> str:
    raw = node.metadata.get("data_type")
    name = raw.get("name") if isinstance(raw, dict) else raw
    if not isinstance(name, str):
        raise InvalidRecord(
            f"data_type {raw!r} is not a Zarr V3 data type (storage.md §6)", path=node.path
        )
    return name


def array_dtype(node: Node) -> str:
    """The column dtype of an array node; refuse every Zarr type outside the closed set.

    ``float16``/``float32`` are refused, never widened (frame.md §2); fixed-length
    strings, raw bytes and ``r*`` types are not columns (storage.md §6).
    """
    name = _data_type_name(node)
    if name in _NARROW_FLOATS:
        raise InvalidRecord(
            f"data_type {name} is refused, never widened: f64 is the only real dtype (frame.md §2)",
            path=node.path,
        )
    dtype = DTYPE_OF_ZARR.get(name)
    if dtype is None:
        raise InvalidRecord(
            f"data_type {name} is not a column dtype (fixed-length strings, raw bytes and r* types"
            " are refused; storage.md §6)",
            path=node.path,
        )
    return dtype


def array_shape(node: Node) -> tuple[int, ...]:
    """The array's shape; refuse one that is not a list of non-negative integers."""
    shape = node.metadata.get("shape")
    if not isinstance(shape, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    ):
        raise InvalidRecord(
            f"shape {shape!r} is not a list of non-negative integers (storage.md §5)",
            path=node.path,
        )
    return tuple(shape)


def read_values(tree: Tree, node: Node, dtype: str) -> npt.NDArray[Any]:
    """Decode the whole array as its in-memory column form (little-endian, ``StringDType``).

    Missing chunks read as the array's ``fill_value`` (storage.md §1); either
    endianness decodes (storage.md §6).
    """
    try:
        metadata = ArrayV3Metadata.from_dict(dict(node.metadata))
        array = Array(AsyncArray(metadata, StorePath(tree.zarr_store, node.path)))
        values = np.asarray(array[...])
    except Exception as exc:  # zarr raises many unrelated classes for a broken array
        raise InvalidRecord(
            f"array cannot be decoded: {type(exc).__name__}: {exc} (chunking.md §1)", path=node.path
        ) from None
    target = numpy_dtype(dtype)
    if dtype == "string":
        return values if values.dtype == STRING_DTYPE else values.astype(STRING_DTYPE)
    if values.dtype != target:  # big-endian storage, or zarr's native spelling of the type
        values = values.astype(target)
    return values


def _row_bytes(dtype: str, shape: tuple[int, ...]) -> int | None:
    if dtype == "string":
        return None  # a string array is one chunk (storage.md §6.1)
    return numpy_dtype(dtype).itemsize * math.prod(shape[1:])


def write_array(
    store: ZarrAdapter,
    name: str,
    values: npt.NDArray[Any],
    dtype: str,
    *,
    precision: float | None = None,
    dense: bool = False,
    attributes: dict[str, Any] | None = None,
) -> None:
    """Write one array at ``name`` (relative to ``store``) with the reference codecs and extents.

    Parameters
    ----------
    store
        A writable store rooted at the section being written.
    name
        ``/``-separated array path under the store root.
    values
        Shape ``[N, *trailing]``; numeric values are written little-endian.
    dtype
        The column dtype (one of the thirteen).
    precision
        The declared precision: attribute ``precision`` and shuffle + zstd.
    dense
        A mask or a box array: gzip 1 whatever the dtype (chunking.md §5).
    attributes
        Further array attributes (carried-over unknown ones).
    """
    codecs = inner_codecs(dtype, precision=precision, dense=dense)
    shape = tuple(int(n) for n in values.shape)
    chunks, shards = plan_extents(shape, _row_bytes(dtype, shape))
    attrs = dict(attributes or {})
    if precision is not None:
        attrs["precision"] = precision
    array = zarr.create_array(
        store,
        name=name,
        shape=shape,
        dtype=ZARR_DATA_TYPE[dtype],
        chunks=chunks,
        shards=shards,
        filters=None,
        serializer=codecs[0],
        compressors=codecs[1:],
        fill_value=_FILL.get(dtype, 0),
        attributes=attrs,
        chunk_key_encoding={"name": "default", "separator": "/"},
    )
    if values.size:
        array[...] = values


def zarr_store_at(root: Location) -> ZarrAdapter:
    """A writable zarr-python store rooted at ``root``."""
    return ZarrAdapter(root.as_store())
