"""MRF1 frame bytes (lmdb.md §6): the one array-to-bytes form of a frame.

Used by LMDB values (``index``, ``ff``, ``s``, ``f`` keys) and by the HTTP
wire, so the two cannot drift::

    offset 0   4 bytes        magic "MRF1"
    offset 4   4 bytes        header length, u32 little-endian
    offset 8   header bytes   UTF-8 JSON
    then       0-7 zeros      pad to a multiple of 8 from the start of the value
    then       payload        raw little-endian column buffers, each at an offset
                              (relative to the payload) that is a multiple of 8

Decoding views numeric buffers in place; every malformed input raises
:class:`~mrecd.errors.FrameBytesError` and nothing else.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ..errors import FrameBytesError, InvalidRecord
from ..model import (
    DTYPES,
    STRING_DTYPE,
    Block,
    Box,
    Column,
    Frame,
    canonical_dtype,
    check_precision,
    check_target,
    decode_element,
    decode_meta_document,
    encode_element,
    encode_meta,
    finite_json,
    numpy_dtype,
)

__all__ = ["MAGIC", "decode_blocks", "decode_frame", "encode_blocks", "encode_frame"]

MAGIC: Final = b"MRF1"
_PREFIX = struct.Struct("<4sI")
_ZEROS: Final = bytes(8)
_NUMERIC: Final = frozenset(DTYPES) - {"string"}
_COLUMN_KEYS: Final = frozenset({"dtype", "shape", "offset", "values", "validity", "precision"})
_BLOCK_KEYS: Final = frozenset({"count", "structural_shape", "columns", "targets", "attributes"})
_HEADER_KEYS: Final = frozenset({"blocks", "meta", "meta_types", "step", "time", "box"})


def _pad(n: int) -> int:
    return -n % 8


# -- encoding -------------------------------------------------------------------------------


def encode_blocks(
    blocks: Mapping[str, Block], header: Mapping[str, Any], *, attributes: bool = True
) -> bytes:
    """Frame bytes for ``blocks`` with the other header keys taken from ``header``.

    ``header`` holds ``meta`` and whatever else the value carries (``step``,
    ``time``, ``box``, ``meta_types``), already in JSON form; it follows
    ``blocks`` in the header, in its own order. Buffers are laid out in block
    and column order, each column's mask right after its values, every buffer
    zero-padded to 8 bytes.
    """
    entries: dict[str, Any] = {}
    buffers: list[Any] = []
    offset = 0
    for name, block in blocks.items():
        columns: dict[str, Any] = {}
        for column_name, column in block.items():
            entry: dict[str, Any] = {"dtype": column.dtype, "shape": list(column.shape)}
            if column.dtype == "string":
                entry["values"] = column.values.ravel().tolist()
            else:
                data = np.ascontiguousarray(column.values, dtype=numpy_dtype(column.dtype))
                entry["offset"] = offset
                buffers.append(data.data.cast("B") if data.size else b"")
                pad = _pad(data.nbytes)
                if pad:
                    buffers.append(_ZEROS[:pad])
                offset += data.nbytes + pad
            if column.validity is not None:
                mask = np.ascontiguousarray(column.validity, dtype=np.bool_)
                entry["validity"] = offset
                buffers.append(mask.data.cast("B") if mask.size else b"")
                pad = _pad(mask.nbytes)
                if pad:
                    buffers.append(_ZEROS[:pad])
                offset += mask.nbytes + pad
            if column.precision is not None:
                entry["precision"] = column.precision
            columns[column_name] = entry
        block_entry: dict[str, Any] = {
            "count": block.count,
            "structural_shape": None
            if block.structural_shape is None
            else list(block.structural_shape),
            "columns": columns,
        }
        if block.targets:
            block_entry["targets"] = block.targets
        if attributes and block.attributes:
            block_entry["attributes"] = block.attributes
        entries[name] = block_entry
    document = {"blocks": entries, **header}
    text = json.dumps(document, allow_nan=False, separators=(",", ":"), ensure_ascii=False).encode()
    prefix = _PREFIX.pack(MAGIC, len(text)) + text
    return b"".join([prefix, _ZEROS[: _pad(len(prefix))], *buffers])


def encode_frame(frame: Frame, *, meta_types: bool | None = None) -> bytes:
    """Frame bytes of ``frame`` (lmdb.md §6).

    A trajectory update (``frame.step`` set) carries ``step``, ``time`` when
    set, ``box`` when set, and its meta without ``meta_types`` (the
    declaration types it); any other frame carries ``meta_types`` beside a
    non-empty meta. ``meta_types=True`` forces the tags in (the HTTP wire, so
    a frame is self-describing); ``False`` leaves them out.
    """
    tags = frame.meta_types
    header: dict[str, Any] = {"meta": {k: encode_meta(tags[k], v) for k, v in frame.meta.items()}}
    if meta_types is None:
        meta_types = frame.step is None
    if meta_types and tags:
        header["meta_types"] = tags
    if frame.step is not None:
        header["step"] = encode_element("i64", frame.step)
    if frame.time is not None:
        header["time"] = encode_element("f64", frame.time)
    if frame.box is not None:
        header["box"] = frame.box.to_dict()
    return encode_blocks(frame.blocks, header, attributes=frame.step is None)


# -- decoding -------------------------------------------------------------------------------


def _int(value: Any, what: str, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FrameBytesError(f"{what} must be a non-negative integer, not {value!r}", path=path)
    return value


def _buffer_at(
    payload: memoryview, raw_offset: Any, nbytes: int, what: str, path: str
) -> memoryview:
    offset = _int(raw_offset, f"{what} offset", path)
    if offset % 8:
        raise FrameBytesError(f"{what} offset {offset} is not a multiple of 8", path=path)
    if offset + nbytes > len(payload):
        raise FrameBytesError(
            f"{what} buffer [{offset}, {offset + nbytes}) extends past the end of the payload"
            f" ({len(payload)} bytes)",
            path=path,
        )
    return payload[offset : offset + nbytes]


def _decode_column(entry: Any, count: int, payload: memoryview, copy: bool, path: str) -> Column:
    if not isinstance(entry, dict):
        raise FrameBytesError("a column entry is a JSON object", path=path)
    unknown = set(entry) - _COLUMN_KEYS
    if unknown:
        raise FrameBytesError(f"unknown column entry keys {sorted(unknown)}", path=path)
    dtype = entry.get("dtype")
    if dtype not in DTYPES:
        raise FrameBytesError(f"dtype {dtype!r} is outside the closed set", path=path)
    shape = entry.get("shape")
    if not isinstance(shape, list) or not shape:
        raise FrameBytesError("shape is a non-empty list [count, *trailing]", path=path)
    dims = [_int(n, "shape entry", path) for n in shape]
    if dims[0] != count:
        raise FrameBytesError(
            f"shape {dims} does not start with the block count {count}", path=path
        )
    size = math.prod(dims)
    if dtype == "string":
        if "offset" in entry:
            raise FrameBytesError("a string column carries values, not an offset", path=path)
        values = entry.get("values")
        if (
            not isinstance(values, list)
            or len(values) != size
            or not all(isinstance(v, str) for v in values)
        ):
            raise FrameBytesError(f"a string column carries {size} strings in values", path=path)
        array: npt.NDArray[Any] = np.array(values, dtype=STRING_DTYPE).reshape(dims)
    else:
        if "values" in entry:
            raise FrameBytesError("a numeric column carries an offset, not values", path=path)
        np_dtype = numpy_dtype(dtype)
        raw = _buffer_at(payload, entry.get("offset"), size * np_dtype.itemsize, "column", path)
        array = np.frombuffer(raw, dtype=np_dtype, count=size).reshape(dims)
        if dtype == "bool" and size and array.view(np.uint8).max() > 1:
            raise FrameBytesError("bool buffer holds bytes other than 0 and 1", path=path)
        if copy:
            array = array.copy()
    validity = None
    if "validity" in entry:
        raw = _buffer_at(payload, entry["validity"], count, "validity", path)
        mask_bytes = np.frombuffer(raw, dtype=np.uint8, count=count)
        if count and mask_bytes.max() > 1:
            raise FrameBytesError("validity buffer holds bytes other than 0 and 1", path=path)
        validity = mask_bytes.view(np.bool_)
        if copy:
            validity = validity.copy()
    precision = entry.get("precision")
    if precision is not None:
        if dtype != "f64":
            raise FrameBytesError(f"precision on a {dtype} column (f64 only)", path=path)
        precision = check_precision(precision, path=path)
    return Column._trusted(array, dtype, validity, precision)


def _decode_block(entry: Any, payload: memoryview, copy: bool, path: str) -> Block:
    if not isinstance(entry, dict):
        raise FrameBytesError("a block entry is a JSON object", path=path)
    unknown = set(entry) - _BLOCK_KEYS
    if unknown:
        raise FrameBytesError(f"unknown block entry keys {sorted(unknown)}", path=path)
    count = _int(entry.get("count"), "count", path)
    raw_shape = entry.get("structural_shape")
    shape = None
    if raw_shape is not None:
        if not isinstance(raw_shape, list):
            raise FrameBytesError("structural_shape is a list or null", path=path)
        shape = tuple(_int(n, "structural_shape entry", path) for n in raw_shape)
        if math.prod(shape) != count:
            raise FrameBytesError(
                f"structural_shape {list(shape)} does not multiply to count {count}", path=path
            )
    raw_columns = entry.get("columns")
    if not isinstance(raw_columns, dict):
        raise FrameBytesError("columns is an object", path=path)
    columns: dict[str, Column] = {}
    for name, column_entry in raw_columns.items():
        if name == "_validity" or not name:
            raise FrameBytesError(f"{name!r} cannot name a column", path=path)
        column = _decode_column(column_entry, count, payload, copy, f"{path}/{name}")
        canonical_dtype(name, column.values, column.dtype, coerce=False, path=f"{path}/{name}")
        columns[name] = column
    targets = entry.get("targets")
    if targets is not None:
        if not isinstance(targets, dict):
            raise FrameBytesError("targets is an object", path=path)
        for column_name, target in targets.items():
            column = columns.get(column_name)
            if column is None or column.dtype != "u64" or column.trailing:
                raise FrameBytesError(
                    f"target column {column_name!r} must be a u64[N] column", path=path
                )
            check_target(target, path=f"{path}.targets.{column_name}")
    attributes = entry.get("attributes")
    if attributes is not None and not isinstance(attributes, dict):
        raise FrameBytesError("attributes is an object", path=path)
    return Block._trusted(columns, count, shape, targets, attributes)


def decode_blocks(buffer: Any, *, copy: bool = False) -> tuple[dict[str, Block], dict[str, Any]]:
    """Split frame bytes into ``({name: Block}, header)`` without reading ``meta``.

    Numeric columns view ``buffer`` in place unless ``copy`` (then they own
    their memory and outlive, e.g., an LMDB read transaction).
    """
    try:
        view = memoryview(buffer).cast("B")
    except TypeError:
        raise FrameBytesError(
            f"frame bytes must be a bytes-like object, not {type(buffer).__name__}"
        ) from None
    if len(view) < 8:
        raise FrameBytesError(f"frame bytes are {len(view)} bytes; the prefix alone is 8")
    magic, header_length = _PREFIX.unpack_from(view)
    if magic != MAGIC:
        raise FrameBytesError(f"magic {bytes(magic)!r} is not {MAGIC!r}")
    payload_start = 8 + header_length
    payload_start += _pad(payload_start)
    if payload_start > len(view):
        raise FrameBytesError(
            f"header length {header_length} (padded to {payload_start}) runs past the end of the"
            f" value ({len(view)} bytes)"
        )
    try:
        header = json.loads(
            bytes(view[8 : 8 + header_length]).decode("utf-8"), parse_constant=_no_constant
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FrameBytesError(f"header is not UTF-8 JSON: {exc}") from None
    if not isinstance(header, dict):
        raise FrameBytesError("header is not a JSON object")
    unknown = set(header) - _HEADER_KEYS
    if unknown:
        raise FrameBytesError(f"unknown header keys {sorted(unknown)}")
    raw_blocks = header.get("blocks")
    if not isinstance(raw_blocks, dict):
        raise FrameBytesError("header blocks is not an object")
    payload = view[payload_start:]
    if not all(raw_blocks):
        raise FrameBytesError("a block name is a non-empty string")
    try:
        blocks = {
            name: _decode_block(entry, payload, copy, name) for name, entry in raw_blocks.items()
        }
    except FrameBytesError:
        raise
    except InvalidRecord as exc:
        raise FrameBytesError(exc.message, path=exc.path) from None
    return blocks, header


def _no_constant(token: str) -> Any:
    raise ValueError(f"bare {token} is not JSON")


def decode_frame(
    buffer: Any, *, copy: bool = False, meta_types: Mapping[str, str] | None = None
) -> Frame:
    """Decode frame bytes into a :class:`~mrecd.model.Frame`.

    Meta values decode under the header's ``meta_types`` when present, else
    under ``meta_types`` (a trajectory's declared tags), else by inference.
    Raises :class:`~mrecd.errors.FrameBytesError` for anything malformed.
    """
    blocks, header = decode_blocks(buffer, copy=copy)
    try:
        if "box" in blocks:
            raise FrameBytesError("'box' cannot name a block", path="box")
        tags = header.get("meta_types")
        meta, meta_tags = decode_meta_document(
            header.get("meta", {}), tags if tags is not None else (meta_types or {}), path="header"
        )
        step = header.get("step")
        time = header.get("time")
        raw_box = header.get("box")
        return Frame._trusted(
            blocks,
            meta,
            meta_tags,
            None if raw_box is None else Box.from_dict(raw_box, path="box"),
            None if step is None else decode_element("i64", step, path="step"),
            None if time is None else decode_element("f64", time, path="time"),
        )
    except FrameBytesError:
        raise
    except InvalidRecord as exc:
        raise FrameBytesError(exc.message, path=exc.path) from None


def plain_document(header: Mapping[str, Any]) -> dict[str, Any]:
    """The header's ``meta`` as a plain JSON document (``ff`` and ``index`` values)."""
    meta = header.get("meta", {})
    if not isinstance(meta, dict):
        raise FrameBytesError("header meta is not an object")
    try:
        out: dict[str, Any] = finite_json(meta)
    except InvalidRecord as exc:
        raise FrameBytesError(exc.message) from None
    return out
