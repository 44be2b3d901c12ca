"""A plain system frame (MRF1 bytes) decoded in one pass over its parsed header.

Most systems are one or a few blocks of one-dimensional columns (strings
inline, numbers at offsets) and a meta document of strings.
:func:`plain_system` builds those directly; anything else (a cell, targets,
attributes, a structural shape, masks, precision, bool columns, other meta
tags, a header it is unsure of) gets ``None`` and goes to
:func:`~mrecd.codecs.decode_frame`, which refuses with the rule's message or
accepts. It so accepts a subset of what the general decoder accepts, never
more, and builds the same frame. Used by the LMDB reader (``s`` values) and
the records stream decoder (a record's system on the wire).
"""

from __future__ import annotations

import json
import json.scanner
import struct
from typing import Any, Final

import numpy as np

from ..model import CANONICAL, DTYPES, Block, Column, Frame, numpy_dtype

__all__ = ["plain_system"]

_PREFIX = struct.Struct("<4sI")
_SYSTEM_KEYS: Final = frozenset({"blocks", "meta", "meta_types"})
_BLOCK_KEYS: Final = frozenset({"count", "structural_shape", "columns"})
_STRING_KEYS: Final = frozenset({"dtype", "shape", "values"})
_NUMBER_KEYS: Final = frozenset({"dtype", "shape", "offset"})
#: Numeric dtypes the fast path views (bool buffers need their bytes checked: general path).
_NUMPY: Final[dict[str, np.dtype[Any]]] = {
    d: numpy_dtype(d) for d in DTYPES if d not in ("string", "bool")
}


def _no_constant(token: str) -> Any:
    raise ValueError(f"bare {token} is not JSON")


_SCAN: Final = json.scanner.make_scanner(json.JSONDecoder(parse_constant=_no_constant))  # type: ignore[arg-type]


def plain_system(buf: bytes) -> Frame | None:
    """The system frame of ``buf`` when it is a plain one (see the module's
    docstring), as the general decoder builds it; ``None``: take the general
    decoder. Nothing is refused here."""
    if len(buf) < 8:
        return None
    magic, length = _PREFIX.unpack_from(buf)
    end = 8 + length
    start = end + (-end & 7)
    if magic != b"MRF1" or start > len(buf):
        return None
    try:
        text = buf[8:end].decode()
        header, stop = _SCAN(text, 0)
    except (ValueError, RecursionError, StopIteration):
        return None
    if stop != len(text) or type(header) is not dict or not header.keys() <= _SYSTEM_KEYS:
        return None
    raw_blocks = header.get("blocks")
    if type(raw_blocks) is not dict or "box" in raw_blocks:
        return None
    blocks = {}
    for name, entry in raw_blocks.items():
        block = _block(entry, buf, start) if name else None
        if block is None:
            return None
        blocks[name] = block
    meta = _meta(header.get("meta", {}), header.get("meta_types"))
    if meta is None:
        return None
    return Frame._trusted(blocks, *meta)


def _meta(meta: Any, tags: Any) -> tuple[dict[str, Any], dict[str, str]] | None:
    """The values and tags of a meta document of strings, each tagged ``string``
    (what the general decoder holds them as: the parsed documents, unchanged)."""
    if type(meta) is not dict:
        return None
    if tags is None:
        return None if meta else ({}, {})
    if type(tags) is not dict or tags.keys() != meta.keys() or "meta_types" in meta:
        return None
    for key, tag in tags.items():
        if tag != "string" or type(meta[key]) is not str:
            return None
    return meta, dict.fromkeys(meta, "string")  # in the meta's order, as the general decoder


def _block(entry: Any, buf: bytes, start: int) -> Block | None:
    if type(entry) is not dict or not entry.keys() <= _BLOCK_KEYS:
        return None
    count = entry.get("count")
    raw_columns = entry.get("columns")
    if type(count) is not int or count < 0 or entry.get("structural_shape") is not None:
        return None
    if type(raw_columns) is not dict:
        return None
    columns = {}
    for name, column in raw_columns.items():
        made = _column(name, column, count, buf, start)
        if made is None:
            return None
        columns[name] = made
    return Block._trusted(columns, count)


def _column(name: str, entry: Any, count: int, buf: bytes, start: int) -> Column | None:
    if type(entry) is not dict or not name or name == "_validity":
        return None
    shape = entry.get("shape")
    if type(shape) is not list or len(shape) != 1 or type(shape[0]) is not int:
        return None
    dtype: Any = entry.get("dtype")
    if shape[0] != count or CANONICAL.get(name, dtype) != dtype:
        return None
    if dtype == "string":
        values = entry.get("values")
        if entry.keys() != _STRING_KEYS or type(values) is not list or len(values) != count:
            return None
        try:
            "".join(values)  # every item a str, at C speed
        except TypeError:
            return None
        return Column._lazy_strings(values, (count,))
    np_dtype = _NUMPY.get(dtype) if type(dtype) is str else None
    offset = entry.get("offset")
    if np_dtype is None or entry.keys() != _NUMBER_KEYS or type(offset) is not int:
        return None
    at = start + offset
    if offset < 0 or offset & 7 or at + count * np_dtype.itemsize > len(buf):
        return None
    return Column._trusted(np.frombuffer(buf, np_dtype, count, at), dtype)
