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
    CANONICAL,
    DTYPES,
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
#: numpy dtype of every numeric column dtype (the closed set less ``string``).
_NUMPY: Final[dict[str, np.dtype[Any]]] = {d: numpy_dtype(d) for d in DTYPES if d != "string"}
_COLUMN_KEYS: Final = frozenset({"dtype", "shape", "offset", "values", "validity", "precision"})
_BLOCK_KEYS: Final = frozenset({"count", "structural_shape", "columns", "targets", "attributes"})
_HEADER_KEYS: Final = frozenset({"blocks", "meta", "meta_types", "step", "time", "box"})
# One encoder and one decoder for every value: json.dumps/loads with options would
# build a new one per call, which costs more than encoding a small header.
_ENCODER: Final = json.JSONEncoder(allow_nan=False, separators=(",", ":"), ensure_ascii=False)


def _no_constant(token: str) -> Any:
    raise ValueError(f"bare {token} is not JSON")


_DECODER: Final = json.JSONDecoder(parse_constant=_no_constant)


# -- encoding -------------------------------------------------------------------------------


def _numeric_buffer(column: Column) -> npt.NDArray[Any]:
    """The column's values as C-ordered little-endian bytes (a view when they already are)."""
    values = column.values
    want = _NUMPY[column.dtype]
    if values.dtype != want or not values.flags.c_contiguous:
        values = np.ascontiguousarray(values, dtype=want)
    return values


def _block_entry(
    block: Block, buffers: list[Any], offset: int, attributes: bool
) -> tuple[dict[str, Any], int]:
    """The header entry of ``block``; its buffers are appended, the next offset returned."""
    columns: dict[str, Any] = {}
    for name, column in block.columns.items():
        dtype = column.dtype
        if dtype == "string":
            values = column.values
            entry: dict[str, Any] = {
                "dtype": dtype,
                "shape": list(values.shape),
                "values": values.ravel().tolist(),
            }
        else:
            data = _numeric_buffer(column)
            entry = {"dtype": dtype, "shape": list(data.shape), "offset": offset}
            offset = _append(buffers, data, data.nbytes, offset)
        validity = column.validity
        if validity is not None:
            entry["validity"] = offset
            offset = _append(buffers, validity, validity.nbytes, offset)
        if column.precision is not None:
            entry["precision"] = column.precision
        columns[name] = entry
    shape = block.structural_shape
    out: dict[str, Any] = {
        "count": block.count,
        "structural_shape": None if shape is None else list(shape),
        "columns": columns,
    }
    targets = block.targets
    if targets:
        out["targets"] = targets
    if attributes and block.attributes:
        out["attributes"] = block.attributes
    return out, offset


def _append(buffers: list[Any], data: Any, nbytes: int, offset: int) -> int:
    """Append one buffer zero-padded to 8 bytes; return the offset after it."""
    buffers.append(data)
    pad = -nbytes & 7
    if pad:
        buffers.append(_ZEROS[:pad])
    return offset + nbytes + pad


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
        entries[name], offset = _block_entry(block, buffers, offset, attributes)
    text = _ENCODER.encode({"blocks": entries, **header}).encode()
    prefix = _PREFIX.pack(MAGIC, len(text)) + text
    return b"".join([prefix, _ZEROS[: -len(prefix) & 7], *buffers])


def encode_frame(frame: Frame, *, meta_types: bool | None = None) -> bytes:
    """Frame bytes of ``frame`` (lmdb.md §6).

    A trajectory update (``frame.step`` set) carries ``step``, ``time`` when
    set, ``box`` when set, and its meta without ``meta_types`` (the
    declaration types it); any other frame carries ``meta_types`` beside a
    non-empty meta. ``meta_types=True`` forces the tags in (the HTTP wire, so
    a frame is self-describing); ``False`` leaves them out.
    """
    if not isinstance(frame, Frame):
        raise InvalidRecord(f"encode_frame takes a Frame, not {type(frame).__name__}")
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
    if type(value) is not int or value < 0:  # JSON integers only: not bool, not 1.0
        raise FrameBytesError(f"{what} must be a non-negative integer, not {value!r}", path=path)
    return value


def _buffer_at(
    payload: memoryview, raw_offset: Any, nbytes: int, what: str, path: str
) -> memoryview:
    offset = _int(raw_offset, f"{what} offset", path)
    if offset & 7:
        raise FrameBytesError(f"{what} offset {offset} is not a multiple of 8", path=path)
    if offset + nbytes > len(payload):
        raise FrameBytesError(
            f"{what} buffer [{offset}, {offset + nbytes}) extends past the end of the payload"
            f" ({len(payload)} bytes)",
            path=path,
        )
    return payload[offset : offset + nbytes]


def _dims(entry: dict[str, Any], count: int, path: str) -> list[int]:
    shape = entry.get("shape")
    if type(shape) is not list or not shape:
        raise FrameBytesError("shape is a non-empty list [count, *trailing]", path=path)
    for n in shape:
        _int(n, "shape entry", path)
    if shape[0] != count:
        raise FrameBytesError(
            f"shape {shape} does not start with the block count {count}", path=path
        )
    return shape


def _strings(entry: dict[str, Any], size: int, path: str) -> list[str]:
    if "offset" in entry:
        raise FrameBytesError("a string column carries values, not an offset", path=path)
    values = entry.get("values")
    if type(values) is not list or len(values) != size:
        raise FrameBytesError(f"a string column carries {size} strings in values", path=path)
    try:
        "".join(values)  # a TypeError names the first non-str item, at C speed
    except TypeError:
        raise FrameBytesError(
            f"a string column carries {size} strings in values", path=path
        ) from None
    return values


def _numbers(
    entry: dict[str, Any], dtype: str, dims: list[int], payload: memoryview, copy: bool, path: str
) -> npt.NDArray[Any]:
    if "values" in entry:
        raise FrameBytesError("a numeric column carries an offset, not values", path=path)
    np_dtype = _NUMPY[dtype]
    size = math.prod(dims)
    raw = _buffer_at(payload, entry.get("offset"), size * np_dtype.itemsize, "column", path)
    array = np.frombuffer(raw, dtype=np_dtype, count=size)
    if dtype == "bool" and size and array.view(np.uint8).max() > 1:
        raise FrameBytesError("bool buffer holds bytes other than 0 and 1", path=path)
    if len(dims) > 1:
        array = array.reshape(dims)
    return array.copy() if copy else array


def _mask(entry: dict[str, Any], count: int, payload: memoryview, copy: bool, path: str) -> Any:
    if "validity" not in entry:
        return None
    raw = _buffer_at(payload, entry["validity"], count, "validity", path)
    mask_bytes = np.frombuffer(raw, dtype=np.uint8, count=count)
    if count and mask_bytes.max() > 1:
        raise FrameBytesError("validity buffer holds bytes other than 0 and 1", path=path)
    mask = mask_bytes.view(np.bool_)
    return mask.copy() if copy else mask


def _decode_column(entry: Any, count: int, payload: memoryview, copy: bool, path: str) -> Column:
    if type(entry) is not dict:
        raise FrameBytesError("a column entry is a JSON object", path=path)
    if not entry.keys() <= _COLUMN_KEYS:
        unknown = sorted(set(entry) - _COLUMN_KEYS)
        raise FrameBytesError(f"unknown column entry keys {unknown}", path=path)
    dtype = entry.get("dtype")
    if type(dtype) is not str or (dtype not in _NUMPY and dtype != "string"):
        raise FrameBytesError(f"dtype {dtype!r} is outside the closed set", path=path)
    dims = _dims(entry, count, path)
    validity = _mask(entry, count, payload, copy, path)
    precision = entry.get("precision")
    if precision is not None:
        if dtype != "f64":
            raise FrameBytesError(f"precision on a {dtype} column (f64 only)", path=path)
        precision = check_precision(precision, path=path)
    if dtype == "string":
        items = _strings(entry, math.prod(dims), path)
        return Column._lazy_strings(items, tuple(dims), validity)
    array = _numbers(entry, dtype, dims, payload, copy, path)
    return Column._trusted(array, dtype, validity, precision)


def _structural_shape(raw: Any, count: int, path: str) -> tuple[int, ...] | None:
    if raw is None:
        return None
    if type(raw) is not list:
        raise FrameBytesError("structural_shape is a list or null", path=path)
    shape = tuple(_int(n, "structural_shape entry", path) for n in raw)
    if math.prod(shape) != count:
        raise FrameBytesError(
            f"structural_shape {list(shape)} does not multiply to count {count}", path=path
        )
    return shape


def _targets(raw: Any, columns: dict[str, Column], path: str) -> dict[str, str] | None:
    if raw is None:
        return None
    if type(raw) is not dict:
        raise FrameBytesError("targets is an object", path=path)
    for column_name, target in raw.items():
        target_column = columns.get(column_name)
        if target_column is None or target_column.dtype != "u64" or len(target_column.shape) != 1:
            raise FrameBytesError(
                f"target column {column_name!r} must be a u64[N] column", path=path
            )
        check_target(target, path=f"{path}.targets.{column_name}")
    return raw


def _decode_block(entry: Any, payload: memoryview, copy: bool, path: str) -> Block:
    if type(entry) is not dict:
        raise FrameBytesError("a block entry is a JSON object", path=path)
    if not entry.keys() <= _BLOCK_KEYS:
        raise FrameBytesError(
            f"unknown block entry keys {sorted(set(entry) - _BLOCK_KEYS)}", path=path
        )
    count = _int(entry.get("count"), "count", path)
    shape = _structural_shape(entry.get("structural_shape"), count, path)
    raw_columns = entry.get("columns")
    if type(raw_columns) is not dict:
        raise FrameBytesError("columns is an object", path=path)
    columns: dict[str, Column] = {}
    for name, column_entry in raw_columns.items():
        where = f"{path}/{name}"
        if name == "_validity" or not name:
            raise FrameBytesError(f"{name!r} cannot name a column", path=path)
        column = _decode_column(column_entry, count, payload, copy, where)
        want = CANONICAL.get(name)  # a reader refuses, never widens (conventions.md §2)
        if want is not None and (column.dtype != want or len(column.shape) != 1):
            canonical_dtype(name, column.values, column.dtype, coerce=False, path=where)
        columns[name] = column
    targets = _targets(entry.get("targets"), columns, path)
    attributes = entry.get("attributes")
    if attributes is not None and type(attributes) is not dict:
        raise FrameBytesError("attributes is an object", path=path)
    return Block._trusted(columns, count, shape, targets, attributes)


def _split(buffer: Any) -> tuple[dict[str, Any], memoryview]:
    """The parsed header and the payload view of a value."""
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
    end = 8 + header_length
    payload_start = end + (-end & 7)
    if payload_start > len(view):
        raise FrameBytesError(
            f"header length {header_length} (padded to {payload_start}) runs past the end of the"
            f" value ({len(view)} bytes)"
        )
    try:
        header = _DECODER.decode(str(view[8:end], "utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FrameBytesError(f"header is not UTF-8 JSON: {exc}") from None
    if type(header) is not dict:
        raise FrameBytesError("header is not a JSON object")
    if not header.keys() <= _HEADER_KEYS:
        raise FrameBytesError(f"unknown header keys {sorted(set(header) - _HEADER_KEYS)}")
    return header, view[payload_start:]


def decode_blocks(buffer: Any, *, copy: bool = False) -> tuple[dict[str, Block], dict[str, Any]]:
    """Split frame bytes into ``({name: Block}, header)`` without reading ``meta``.

    Numeric columns view ``buffer`` in place unless ``copy`` (then they own
    their memory and outlive, e.g., an LMDB read transaction).
    """
    header, payload = _split(buffer)
    raw_blocks = header.get("blocks")
    if type(raw_blocks) is not dict:
        raise FrameBytesError("header blocks is not an object")
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


def decode_frame(
    buffer: Any, *, copy: bool = False, meta_types: Mapping[str, str] | None = None
) -> Frame:
    """Decode frame bytes into a :class:`~mrecd.model.Frame`.

    Meta values decode under the header's ``meta_types`` when present, else
    under ``meta_types`` (a trajectory's declared tags), else by inference.
    Raises :class:`~mrecd.errors.FrameBytesError` for anything malformed.
    String columns become numpy arrays on first access of their values.
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
