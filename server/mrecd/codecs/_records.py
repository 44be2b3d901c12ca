"""Records on the wire: ``application/x-mrec-records``, a stream of collection records.

One record travels as length-prefixed items (each a u64 little-endian
length, then the bytes), in the same framing as ``application/x-mrec-frames``:

1. a JSON header ``{"meta": {...}, "system": bool, "frames": n | null, ...}``
   (``frames`` is ``null`` for a record without a trajectory; other members,
   such as the ordinal ``r`` or the ``index`` values, ride along);
2. the system as MRF1 frame bytes, when ``system`` is true;
3. ``n`` trajectory frames as MRF1 frame bytes; or, when the header says
   ``"stacked": {...}``, one MRF1 value holding every frame's rows stacked
   block by block, with each frame's row counts, step, time, box and meta in
   the header (one decode per record instead of one per frame: what makes a
   batch of small records cheap to read).

The record's meta document is JSON as in the collection file (lmdb.md §2) and
its frames are MRF1 as there (lmdb.md §6): the same encoder and decoder on
the server, the client and in the LMDB binding. Pure functions and one
incremental decoder; no I/O.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from ..errors import FrameBytesError, InvalidRecord
from ..model import (
    Block,
    Box,
    Column,
    Frame,
    decode_element,
    decode_meta_document,
    encode_element,
    encode_meta,
)
from ._mrf1 import decode_frame, encode_frame

__all__ = ["RECORDS", "RecordItem", "RecordStreamDecoder", "decode_records", "encode_record"]

RECORDS: Final = "application/x-mrec-records"
_LENGTH: Final = struct.Struct("<Q")
_HEADER_KEYS: Final = frozenset({"meta", "system", "frames", "stacked"})


@dataclass(frozen=True, slots=True)
class RecordItem:
    """One record of a stream: its meta document, system, trajectory frames, and extras.

    Attributes
    ----------
    meta
        The record's ``meta`` document.
    system
        The system frame, or ``None``.
    frames
        The trajectory frames (``[]``: a trajectory of zero frames), ``None``: none.
    extra
        The header's other members (``r``, ``index`` ...).
    """

    meta: dict[str, Any]
    system: Frame | None
    frames: list[Frame] | None
    extra: dict[str, Any] = field(default_factory=dict)


def _item(data: bytes) -> bytes:
    return _LENGTH.pack(len(data)) + data


def encode_record(
    meta: Mapping[str, Any],
    system: Frame | None,
    frames: list[Frame] | None,
    extra: Mapping[str, Any] | None = None,
) -> bytes:
    """The bytes of one record in an ``application/x-mrec-records`` stream.

    Parameters
    ----------
    meta
        The record's meta document (JSON-serialisable, finite numbers).
    system
        The system frame, or ``None``.
    frames
        The trajectory frames, or ``None`` for no trajectory.
    extra
        Further header members (not ``meta``, ``system`` or ``frames``).
    """
    header: dict[str, Any] = {
        **(extra or {}),
        "meta": dict(meta),
        "system": system is not None,
        "frames": None if frames is None else len(frames),
    }
    stacked = _stacked(frames) if frames else None
    if stacked is not None:
        header["stacked"] = stacked[0]
    parts = [_item(json.dumps(header, separators=(",", ":"), allow_nan=False).encode())]
    if system is not None:
        parts.append(_item(encode_frame(system, meta_types=True)))
    if stacked is not None:
        parts.append(_item(encode_frame(stacked[1], meta_types=False)))
    else:
        parts.extend(_item(encode_frame(frame, meta_types=True)) for frame in frames or ())
    return b"".join(parts)


def _signature(frame: Frame) -> tuple[Any, ...] | None:
    """What frames must share to stack: block and column names, dtypes, trailing, precision."""
    out = []
    for name, block in frame.blocks.items():
        if block.structural_shape is not None or block.targets is not None or block.attributes:
            return None
        columns = block.columns
        out.append(
            (name, *((c, col.dtype, col.shape[1:], col.precision) for c, col in columns.items()))
        )
    return tuple(out)


def _stack_column(columns: list[Column]) -> Column:
    values = np.concatenate([c.values for c in columns])
    masks = [c.validity for c in columns]
    validity = None
    if any(m is not None for m in masks):
        validity = np.concatenate(
            [
                np.ones(len(c), dtype=bool) if m is None else m
                for c, m in zip(columns, masks, strict=True)
            ]
        )
    first = columns[0]
    return Column._trusted(values, first.dtype, validity, first.precision)


def _frame_header(frame: Frame) -> dict[str, Any]:
    tags = frame.meta_types
    out: dict[str, Any] = {"meta": {k: encode_meta(tags[k], v) for k, v in frame.meta.items()}}
    if tags:
        out["meta_types"] = tags
    if frame.step is not None:
        out["step"] = encode_element("i64", frame.step)
    if frame.time is not None:
        out["time"] = encode_element("f64", frame.time)
    if frame.box is not None:
        out["box"] = frame.box.to_dict()
    return out


def _stacked(frames: list[Frame]) -> tuple[dict[str, Any], Frame] | None:
    """The stacked form of ``frames`` (header member, stacked frame), or ``None`` (not alike)."""
    signature = _signature(frames[0])
    if len(frames) < 2 or signature is None or any(_signature(f) != signature for f in frames):
        return None
    blocks = {}
    for name in frames[0]:
        parts = [f[name] for f in frames]
        columns = {c: _stack_column([p[c] for p in parts]) for c in parts[0]}
        blocks[name] = Block._trusted(columns, sum(p.count for p in parts))
    member = {
        "rows": {name: [f[name].count for f in frames] for name in frames[0]},
        "frames": [_frame_header(f) for f in frames],
    }
    return member, Frame._trusted(blocks, {}, {}, None, None, None)


def _unstack(stack: Frame, member: Any, where: str) -> list[Frame]:
    """The frames of a stacked value (views of its rows)."""
    if not isinstance(member, dict) or not isinstance(member.get("frames"), list):
        raise FrameBytesError("stacked is {rows, frames}", path=f"{where}.stacked")
    rows, headers = member.get("rows"), member["frames"]
    if (
        not isinstance(rows, dict)
        or set(rows) != set(stack)
        or any(
            not isinstance(r, list) or len(r) != len(headers) or sum(r) != stack[n].count
            for n, r in rows.items()
        )
    ):
        raise FrameBytesError(
            "stacked rows do not match the stacked blocks", path=f"{where}.stacked"
        )
    offsets = {name: np.concatenate([[0], np.cumsum(r)]).tolist() for name, r in rows.items()}
    out = []
    for k, head in enumerate(headers):
        at = f"{where}.trajectory[{k}]"
        try:
            meta, tags = decode_meta_document(
                head.get("meta", {}), head.get("meta_types", {}), path=at
            )
            step, time, box = head.get("step"), head.get("time"), head.get("box")
            frame = Frame._trusted(
                {n: stack[n].rows(offsets[n][k], offsets[n][k + 1]) for n in stack},
                meta,
                tags,
                None if box is None else Box.from_dict(box, path=f"{at}.box"),
                None if step is None else decode_element("i64", step, path=f"{at}.step"),
                None if time is None else decode_element("f64", time, path=f"{at}.time"),
            )
        except (AttributeError, TypeError):
            raise FrameBytesError("a stacked frame's header is malformed", path=at) from None
        out.append(frame)
    return out


def _header(data: bytes, where: str) -> dict[str, Any]:
    try:
        header: Any = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FrameBytesError(f"a record header is not JSON ({exc})", path=where) from None
    if not isinstance(header, dict):
        raise FrameBytesError("a record header is a JSON object", path=where)
    meta, system, frames = header.get("meta", {}), header.get("system"), header.get("frames")
    if not isinstance(meta, dict):
        raise InvalidRecord("a record's meta is a JSON object", path=f"{where}.meta")
    if not isinstance(system, bool):
        raise FrameBytesError("a record header's system is true or false", path=f"{where}.system")
    if frames is not None and (isinstance(frames, bool) or not isinstance(frames, int)):
        raise FrameBytesError("a record header's frames is a count or null", path=f"{where}.frames")
    if frames is not None and frames < 0:
        raise FrameBytesError("a record header's frames is not negative", path=f"{where}.frames")
    return header


def _frame(data: bytes, where: str) -> Frame:
    try:
        return decode_frame(data)  # views into ``data``, a bytes object of this frame alone
    except FrameBytesError as exc:
        raise FrameBytesError(exc.message, path=f"{where}/{exc.path or ''}") from None


class RecordStreamDecoder:
    """Split an ``application/x-mrec-records`` body into records as its bytes arrive.

    Memory is bounded by one record: :meth:`feed` returns the records
    completed so far; :meth:`close` refuses a stream that ends inside one.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._at = 0  # items before this offset are consumed; dropped once per feed
        self._header: dict[str, Any] | None = None
        self._items: list[bytes] = []
        self._count = 0

    def _next_item(self) -> bytes | None:
        at, buffer = self._at, self._buffer
        if len(buffer) - at < _LENGTH.size:
            return None
        (size,) = _LENGTH.unpack_from(buffer, at)
        end = at + _LENGTH.size + size
        if len(buffer) < end:
            return None
        self._at = end
        return bytes(buffer[at + _LENGTH.size : end])

    def feed(self, chunk: bytes) -> list[RecordItem]:
        """Records completed by ``chunk``, in order."""
        if self._at:  # drop what was consumed (once per chunk: no quadratic shifting)
            del self._buffer[: self._at]
            self._at = 0
        self._buffer += chunk
        out: list[RecordItem] = []
        while (data := self._next_item()) is not None:
            where = f"records[{self._count}]"
            if self._header is None:
                self._header = _header(data, where)
            else:
                self._items.append(data)
            if self._complete():
                out.append(self._record(where))
        return out

    def _wanted(self) -> int:
        assert self._header is not None
        frames = 1 if self._header.get("stacked") is not None else self._header["frames"] or 0
        return int(self._header["system"]) + int(frames)

    def _complete(self) -> bool:
        return self._header is not None and len(self._items) == self._wanted()

    def _record(self, where: str) -> RecordItem:
        header, items = self._header, self._items
        assert header is not None
        self._header, self._items = None, []
        self._count += 1
        system = None
        if header["system"]:
            system = _frame(items.pop(0), f"{where}.system")
        if header.get("stacked") is not None:
            frames = _unstack(_frame(items[0], f"{where}.trajectory"), header["stacked"], where)
            if len(frames) != header["frames"]:
                raise FrameBytesError("stacked frames differ from the count", path=where)
        else:
            frames = [_frame(data, f"{where}.trajectory[{k}]") for k, data in enumerate(items)]
        extra = {k: v for k, v in header.items() if k not in _HEADER_KEYS}
        kept = None if header["frames"] is None else frames
        return RecordItem(dict(header.get("meta", {})), system, kept, extra)

    def close(self) -> None:
        """Refuse a stream that ended inside a record.

        Raises
        ------
        FrameBytesError
            Bytes are left over, or a record misses frames its header announced.
        """
        left = len(self._buffer) - self._at
        if left or self._header is not None:
            raise FrameBytesError(
                f"the record stream ended inside record {self._count} ({left} bytes left)",
                path="body",
            )


def decode_records(body: bytes) -> Iterator[RecordItem]:
    """Every record of a whole ``application/x-mrec-records`` body.

    Raises
    ------
    FrameBytesError
        Bytes that do not split into records (a bad length, header or frame).
    """
    decoder = RecordStreamDecoder()
    yield from decoder.feed(body)
    decoder.close()
