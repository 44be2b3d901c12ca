"""Records on the wire: ``application/x-mrec-records``, a stream of collection records.

One record travels as length-prefixed items (each a u64 little-endian
length, then the bytes), in the same framing as ``application/x-mrec-frames``:

1. a JSON header ``{"meta": {...}, "system": bool, "frames": n | null, ...}``
   (``frames`` is ``null`` for a record without a trajectory; other members,
   such as the ordinal ``r`` or the ``index`` values, ride along);
2. the system as MRF1 frame bytes, when ``system`` is true;
3. ``n`` trajectory frames as MRF1 frame bytes.

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

from ..errors import FrameBytesError, InvalidRecord
from ..model import Frame
from ._mrf1 import decode_frame, encode_frame

__all__ = ["RECORDS", "RecordItem", "RecordStreamDecoder", "decode_records", "encode_record"]

RECORDS: Final = "application/x-mrec-records"
_LENGTH: Final = struct.Struct("<Q")
_HEADER_KEYS: Final = frozenset({"meta", "system", "frames"})


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
    header = {
        **(extra or {}),
        "meta": dict(meta),
        "system": system is not None,
        "frames": None if frames is None else len(frames),
    }
    parts = [_item(json.dumps(header, separators=(",", ":"), allow_nan=False).encode())]
    if system is not None:
        parts.append(_item(encode_frame(system, meta_types=True)))
    for frame in frames or ():
        parts.append(_item(encode_frame(frame, meta_types=True)))
    return b"".join(parts)


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
        return decode_frame(data, copy=True)
    except FrameBytesError as exc:
        raise FrameBytesError(exc.message, path=f"{where}/{exc.path or ''}") from None


class RecordStreamDecoder:
    """Split an ``application/x-mrec-records`` body into records as its bytes arrive.

    Memory is bounded by one record: :meth:`feed` returns the records
    completed so far; :meth:`close` refuses a stream that ends inside one.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._header: dict[str, Any] | None = None
        self._items: list[bytes] = []
        self._count = 0

    def _next_item(self) -> bytes | None:
        if len(self._buffer) < _LENGTH.size:
            return None
        (size,) = _LENGTH.unpack_from(self._buffer, 0)
        end = _LENGTH.size + size
        if len(self._buffer) < end:
            return None
        data = bytes(self._buffer[_LENGTH.size : end])
        del self._buffer[:end]
        return data

    def feed(self, chunk: bytes) -> list[RecordItem]:
        """Records completed by ``chunk``, in order."""
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
        return int(self._header["system"]) + int(self._header["frames"] or 0)

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
        if self._buffer or self._header is not None:
            raise FrameBytesError(
                f"the record stream ended inside record {self._count}"
                f" ({len(self._buffer)} bytes left)",
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
