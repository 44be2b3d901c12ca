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
   batch of small records cheap to read); or, when the header says
   ``"updates": {"meta_types": {...}, "boxes": [k, ...]}``, the record's
   ``n`` trajectory updates exactly as the collection file stores them
   (lmdb.md §5: MRF1, per-step meta typed by ``meta_types``, the cell only
   at the ordinals ``boxes`` names and carried forward from there). The
   server sends this form when every update restates every block (no block
   carry-forward), so it sends the checked stored bytes without decoding
   and re-encoding them; the reader builds each frame on first use.

The record's meta document is JSON as in the collection file (lmdb.md §2) and
its frames are MRF1 as there (lmdb.md §6): the same encoder and decoder on
the server, the client and in the LMDB binding. Pure functions and one
incremental decoder; no I/O.
"""

from __future__ import annotations

import json
import json.scanner
import math
import struct
import threading
from bisect import bisect_right
from collections.abc import Buffer, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, pairwise
from typing import Any, Final

import numpy as np

from ..errors import FrameBytesError, InvalidRecord
from ..model import (
    META_TYPES_KEY,
    Block,
    Box,
    Column,
    Frame,
    LazyFrames,
    decode_element,
    decode_meta_document,
    encode_element,
    encode_meta,
)
from ._mrf1 import _DECODER, _NUMPY, MAGIC, _decode_block, _split, decode_frame, encode_frame
from ._mrf1 import _HEADER_KEYS as _MRF1_KEYS
from ._plain_system import plain_system

__all__ = [
    "RECORDS",
    "RecordItem",
    "RecordStreamDecoder",
    "StoredFrames",
    "SystemCache",
    "decode_records",
    "encode_record",
    "stored_record_parts",
]

RECORDS: Final = "application/x-mrec-records"
_LENGTH: Final = struct.Struct("<Q")
_PLAIN_BLOCK: Final = frozenset({"count", "structural_shape", "columns"})
_PLAIN_COLUMN: Final = frozenset({"dtype", "shape", "offset"})
_PLAIN_DTYPES: Final = {d: t for d, t in _NUMPY.items() if d != "bool"}
#: ``json.dumps(..., separators=(",", ":"), allow_nan=False)`` without building an encoder per call.
_HEADER_TEXT: Final = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
#: The scanner of the MRF1 header decoder (bare NaN refused), without its wrapping.
_SCAN_MRF1: Final = json.scanner.make_scanner(_DECODER)  # type: ignore[arg-type]
_HEADER_LENGTH: Final = struct.Struct("<I")
_BLOCKS: Final = '{"blocks":'
_COMMA: Final = ord(",")
_CLOSE: Final = ord("}")
#: The C scanner ``json.loads`` runs, without its wrapping (see :func:`_parsed`).
_SCAN: Final = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


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
        The trajectory frames (``[]``: a trajectory of zero frames), ``None``:
        none; a :class:`StoredFrames` when they travelled as stored updates.
    extra
        The header's other members (``r``, ``index`` ...).
    """

    meta: dict[str, Any]
    system: Frame | None
    frames: Sequence[Frame] | None
    extra: dict[str, Any] = field(default_factory=dict)


def _item(data: bytes) -> bytes:
    return _LENGTH.pack(len(data)) + data


def encode_record(
    meta: Mapping[str, Any],
    system: Frame | bytes | None,
    frames: list[Frame] | None,
    extra: Mapping[str, Any] | None = None,
) -> bytes:
    """The bytes of one record in an ``application/x-mrec-records`` stream.

    Parameters
    ----------
    meta
        The record's meta document (JSON-serialisable, finite numbers).
    system
        The system frame (or its MRF1 bytes, with ``meta_types``), or ``None``.
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
    if isinstance(system, bytes):
        parts.append(_item(system))
    elif system is not None:
        parts.append(_item(encode_frame(system, meta_types=True)))
    if stacked is not None:
        parts.append(_item(encode_frame(stacked[1], meta_types=False)))
    else:
        parts.extend(_item(encode_frame(frame, meta_types=True)) for frame in frames or ())
    return b"".join(parts)


def stored_record_parts(
    meta: Mapping[str, Any],
    system: bytes | None,
    updates: Sequence[Any],
    *,
    meta_types: Mapping[str, str],
    boxes: Sequence[int] = (),
    extra: Mapping[str, Any] | None = None,
) -> list[Any]:
    """One record whose trajectory travels as its stored updates, as the parts
    its bytes join from: a caller joining many records copies each stored value
    once.

    Parameters
    ----------
    meta
        The record's meta document.
    system
        The system's stored MRF1 bytes (with its ``meta_types``), or ``None``.
    updates
        The trajectory's stored update values in order (bytes-like, MRF1,
        lmdb.md §5), each restating every block of its frame.
    meta_types
        The per-step meta tags (the collection's ``sequence_schema.meta``).
    boxes
        The ordinals of the updates that carry a cell, ascending.
    extra
        Further header members (``r`` ...).
    """
    member: dict[str, Any] = {"meta_types": dict(meta_types)}
    if boxes:
        member["boxes"] = list(boxes)
    header = {
        **(extra or {}),
        "meta": dict(meta),
        "system": system is not None,
        "frames": len(updates),
        "updates": member,
    }
    text = _HEADER_TEXT.encode(header).encode()
    pack = _LENGTH.pack
    parts: list[Any] = [pack(len(text)), text]
    if system is not None:
        parts += [pack(len(system)), system]
    # each value's length prefix, then the value: interleaved at C speed
    parts += chain.from_iterable(zip(map(pack, map(len, updates)), updates, strict=True))
    return parts


class StoredFrames(LazyFrames):
    """A record's frames from its stored updates, each :class:`Frame` built on
    first use (its arrays view the update's bytes, read-only), then kept.

    Every update restates every block, so frame ``k`` is update ``k``; only
    the cell is carried forward, from the last update at or before ``k``
    that carries one. Compares equal to any sequence of equal frames.
    """

    __slots__ = ("_boxes", "_plan", "_tags", "_values", "_where")

    def __init__(
        self, values: Sequence[Buffer], tags: dict[str, str], boxes: list[int], where: str
    ) -> None:
        self._values = values
        self._tags = tags
        self._boxes = boxes
        self._where = where
        self._made: list[Frame | None] = [None] * len(values)
        self._plan: _Plan | None = None

    def _build(self, k: int) -> Frame:
        frame = self._decode(self._values[k], f"{self._where}[{k}]")
        u = bisect_right(self._boxes, k) - 1
        if frame.box is not None or u < 0 or self._boxes[u] == k:
            return frame
        box = self[self._boxes[u]].box
        return Frame._trusted(
            frame.blocks, frame.meta, frame.meta_types, box, frame.step, frame.time
        )

    def _decode(self, value: Buffer, where: str) -> Frame:
        """``decode_frame(value, meta_types=tags)``, the blocks viewed by the plan
        of an update decoded and checked before when their header text is alike."""
        try:
            plan = self._plan
            known = None if plan is None else plan.rest(value)
            if plan is not None and known is not None:  # the header's blocks text is the plan's
                return _assemble(known[0], plan.view(known[1]), self._tags)
            header, payload = _split(value)
            raw: Any = header.get("blocks")
            if plan is not None and plan.size == len(payload) and plan.raw == raw:
                blocks = plan.view(payload)
            else:
                blocks = _checked_blocks(raw, payload)
                self._plan = _Plan.of(raw, len(payload), _blocks_prefix(value))
            return _assemble(header, blocks, self._tags)
        except (FrameBytesError, InvalidRecord) as exc:
            raise FrameBytesError(exc.message, path=f"{where}/{exc.path or ''}") from None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StoredFrames({len(self)} frames)"


def _checked_blocks(raw: Any, payload: memoryview) -> dict[str, Block]:
    """The blocks of a header, decoded and checked as :func:`decode_blocks` does."""
    if type(raw) is not dict:
        raise FrameBytesError("header blocks is not an object")
    if not all(raw):
        raise FrameBytesError("a block name is a non-empty string")
    return {name: _decode_block(entry, payload, False, name) for name, entry in raw.items()}


def _assemble(header: dict[str, Any], blocks: dict[str, Block], tags: dict[str, str]) -> Frame:
    """The frame of checked ``blocks`` and the header's meta, step, time and cell
    (as :func:`decode_frame` assembles it)."""
    if "box" in blocks:
        raise FrameBytesError("'box' cannot name a block", path="box")
    own = header.get("meta_types")
    raw = header.get("meta", {})
    plain = None if own is not None else _plain_meta(raw, tags)
    meta, meta_tags = plain or decode_meta_document(
        raw, own if own is not None else tags, path="header"
    )
    step, time, box = header.get("step"), header.get("time"), header.get("box")
    return Frame._trusted(
        blocks,
        meta,
        meta_tags,
        None if box is None else Box.from_dict(box, path="box"),
        None if step is None else decode_element("i64", step, path="step"),
        None if time is None else decode_element("f64", time, path="time"),
    )


def _plain_meta(meta: Any, tags: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]] | None:
    """``decode_meta_document(meta, tags)`` when ``meta`` holds exactly the tagged
    keys, each tagged ``f64`` and a finite JSON float (per-step energies and
    the like: held as they are); ``None`` for anything else (the general path
    decides). ``meta`` is a parsed header's own, so it is kept, not copied."""
    if type(meta) is not dict or meta.keys() != tags.keys() or META_TYPES_KEY in meta:
        return None
    for key, value in meta.items():
        if tags[key] != "f64" or type(value) is not float or not math.isfinite(value):
            return None
    return meta, dict.fromkeys(meta, "f64")


#: (column, dtype, numpy dtype, items, shape, offset)
_PlainColumn = tuple[str, str, np.dtype[Any], int, list[int], int]


@dataclass(frozen=True, slots=True)
class _Plan:
    """Where the plain numeric columns of an update sit, from one decoded and
    checked: an update whose ``blocks`` header equals it and whose payload has
    the same size passes the same checks, so its arrays are views at the same
    offsets (what a record's updates of the same atoms mostly are). Bool and
    masked columns are checked per value and take no plan."""

    raw: dict[str, Any]
    size: int
    blocks: tuple[tuple[str, int, tuple[_PlainColumn, ...]], ...]
    #: ``{"blocks":`` and the ``blocks`` text of the update planned (``None``:
    #: its header does not start so), as UTF-8 bytes
    prefix: bytes | None = None

    @staticmethod
    def of(raw: dict[str, Any], size: int, prefix: bytes | None = None) -> _Plan | None:
        """The plan of checked header blocks ``raw``, or ``None`` (not all plain)."""
        blocks = []
        for name, entry in raw.items():
            if entry.keys() - _PLAIN_BLOCK or entry.get("structural_shape") is not None:
                return None
            columns = []
            for column, spec in entry["columns"].items():
                dtype = spec["dtype"]
                if spec.keys() - _PLAIN_COLUMN or dtype not in _PLAIN_DTYPES:
                    return None
                dims = spec["shape"]
                items = math.prod(dims)
                columns.append((column, dtype, _PLAIN_DTYPES[dtype], items, dims, spec["offset"]))
            blocks.append((name, entry["count"], tuple(columns)))
        return _Plan(raw, size, tuple(blocks), prefix)

    def rest(self, value: Buffer) -> tuple[dict[str, Any], memoryview] | None:
        """The header members after ``blocks`` and the payload of an update whose
        header starts with this plan's prefix and whose payload has its size;
        ``None`` for anything else (the general path decides).

        The same text parses to the same blocks (a JSON value ends where its
        text does), so ``{"blocks":B,R}`` holds the plan's blocks and the
        members of ``{R}`` (when ``R`` names no ``blocks`` of its own: the
        last one would win); only ``{R}`` is parsed, compact (no whitespace
        after ``B`` or around ``{R}``) and held to the header's keys.
        """
        prefix = self.prefix
        view = memoryview(value).cast("B")
        if prefix is None or len(view) < 8 or view[:4].tobytes() != MAGIC:
            return None
        end = 8 + _HEADER_LENGTH.unpack_from(view, 4)[0]
        start = end + (-end & 7)
        cut = 8 + len(prefix)
        if len(view) - start != self.size or end <= cut or view[8:cut].tobytes() != prefix:
            return None
        if view[cut] == _CLOSE:
            return ({}, view[start:]) if end == cut + 1 else None
        if view[cut] != _COMMA:
            return None
        try:
            text = "{" + str(view[cut + 1 : end], "utf-8")
            rest, stop = _SCAN_MRF1(text, 0)
        except (ValueError, RecursionError, StopIteration):
            return None
        if stop != len(text) or type(rest) is not dict or "blocks" in rest:
            return None
        return (rest, view[start:]) if rest.keys() <= _MRF1_KEYS else None

    def view(self, payload: memoryview) -> dict[str, Block]:
        """The blocks of an update with this plan, viewing its ``payload``."""
        out = {}
        for name, count, columns in self.blocks:
            made = {}
            for column, dtype, np_dtype, items, dims, offset in columns:
                values = np.frombuffer(payload, np_dtype, items, offset)
                made[column] = Column._trusted(
                    values.reshape(dims) if len(dims) > 1 else values, dtype
                )
            out[name] = Block._trusted(made, count)
        return out


def _blocks_prefix(value: Buffer) -> bytes | None:
    """``{"blocks":`` and the ``blocks`` text of a checked update's header, when
    its header is ``{"blocks":B}`` or ``{"blocks":B,R}`` with ``{R}`` a compact
    object naming no ``blocks`` (so ``B`` holds the blocks the update was
    decoded with: see :meth:`_Plan.rest`); ``None`` otherwise."""
    view = memoryview(value).cast("B")
    end = 8 + _HEADER_LENGTH.unpack_from(view, 4)[0]
    text = str(view[8:end], "utf-8")
    if not text.startswith(_BLOCKS):
        return None
    try:
        _, stop = _SCAN_MRF1(text, len(_BLOCKS))
        tail = text[stop:]
        rest, at = ({}, 1) if tail == "}" else _SCAN_MRF1("{" + tail[1:], 0)
    except (ValueError, RecursionError, StopIteration):
        return None
    if tail[:1] not in (",", "}") or at != len(tail) or type(rest) is not dict or "blocks" in rest:
        return None
    return text[:stop].encode()


def _stored_member(member: Any, n: int, where: str) -> tuple[dict[str, str], list[int]]:
    """The ``updates`` member's meta tags and cell ordinals, checked."""
    at = f"{where}.updates"
    if not isinstance(member, dict) or not isinstance(member.get("meta_types"), dict):
        raise FrameBytesError("updates is {meta_types, boxes?}", path=at)
    tags, boxes = member["meta_types"], member.get("boxes", [])
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in tags.items()):
        raise FrameBytesError("updates.meta_types maps keys to tags", path=at)
    if (
        not isinstance(boxes, list)
        or not all(type(b) is int and 0 <= b < n for b in boxes)
        or any(a >= b for a, b in pairwise(boxes))
    ):
        raise FrameBytesError("updates.boxes are ascending frame ordinals", path=at)
    return tags, boxes


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


def _parsed(data: Any) -> Any:
    """``json.loads(data)``: a compact UTF-8 object scanned at once, anything
    else (whitespace, another encoding, bad JSON) left to ``json.loads``."""
    try:
        text = str(data, "utf-8")
        value, stop = _SCAN(text, 0)
        if stop == len(text):
            return value
    except (ValueError, RecursionError, StopIteration):
        pass
    return json.loads(bytes(data))


def _header(data: Any, where: str) -> dict[str, Any]:
    try:
        header: Any = _parsed(data)
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


def _frame(data: Any, where: str) -> Frame:
    try:
        return decode_frame(data)  # views into ``data``
    except FrameBytesError as exc:
        raise FrameBytesError(exc.message, path=f"{where}/{exc.path or ''}") from None


def _wanted(header: dict[str, Any]) -> int:
    """The items after a record's header: its system, then its frames (one when stacked)."""
    stacked = header.get("stacked") is not None and header.get("updates") is None
    frames = 1 if stacked else header.get("frames") or 0
    return int(header["system"]) + int(frames)


class SystemCache:
    """Decoded systems by their MRF1 bytes, up to ``limit`` bytes of them (the
    oldest dropped first), for a reader that meets the same records again.

    Records whose system bytes are equal share one :class:`Frame` (as a local
    collection's repeated reads of a record do). Safe to share between threads.
    """

    __slots__ = ("_frames", "_limit", "_lock", "_size")

    def __init__(self, limit: int = 64 * 2**20) -> None:
        self._frames: dict[bytes, Frame] = {}
        self._limit = limit
        self._size = 0
        self._lock = threading.Lock()

    def get(self, raw: bytes) -> Frame | None:
        """The system decoded from ``raw`` before, or ``None``."""
        return self._frames.get(raw)

    def put(self, raw: bytes, system: Frame) -> None:
        """Keep ``system``, decoded from ``raw``."""
        with self._lock:
            if raw in self._frames or len(raw) > self._limit:
                return
            self._frames[raw] = system
            self._size += len(raw)
            while self._size > self._limit:
                oldest = next(iter(self._frames))
                del self._frames[oldest]
                self._size -= len(oldest)

    def __len__(self) -> int:
        return len(self._frames)


class RecordStreamDecoder:
    """Split an ``application/x-mrec-records`` body into records as its bytes arrive.

    Memory is bounded by one record: :meth:`feed` returns the records
    completed so far; :meth:`close` refuses a stream that ends inside one.
    A record's frames view the bytes it arrived in (read-only), as
    :func:`~mrecd.codecs.decode_frame` views its buffer. Systems met before
    are taken from ``systems`` when given (and kept there once decoded).
    """

    def __init__(self, systems: SystemCache | None = None) -> None:
        self._systems = systems
        self._parts: list[bytes] = []  #: bytes received and not yet split, in order
        self._held = 0  #: their length
        self._need = _LENGTH.size  #: bytes ``_parts`` must hold before an item completes
        self._header: dict[str, Any] | None = None
        self._wanted = 0  #: items the current record's header announces
        self._items: list[memoryview] = []
        self._magic = False  #: whether the current record's items are stored updates
        self._bad = 1 << 62  #: the first of its items that is not MRF1 bytes (when below wanted)
        self._count = 0
        self._members = _Members()

    def feed(self, chunk: bytes) -> list[RecordItem]:
        """Records completed by ``chunk``, in order."""
        data = bytes(chunk)  # no copy of a bytes chunk
        self._parts.append(data)
        self._held += len(data)
        if self._held < self._need:  # inside an item: keep the bytes, parse nothing
            return []
        out: list[RecordItem] = []
        at = 0
        if len(self._parts) > 1:
            data, at = self._joined(data, out)
        at = self._split(data, at, out)
        # the item begun at ``at`` is copied out; the items before it view ``data``
        self._parts = [data[at:]] if at < len(data) else []
        self._held = len(data) - at
        return out

    def _joined(self, chunk: bytes, out: list[RecordItem]) -> tuple[bytes, int]:
        """The bytes to split and the offset to start at, once the item begun in
        earlier chunks is completed by the first bytes of ``chunk``: when its
        length is known, only that item is joined (and split into ``out``)."""
        parts = self._parts
        if self._need <= _LENGTH.size:  # its length is not in yet
            return b"".join(parts), 0
        take = self._need - (self._held - len(chunk))
        head = b"".join([*parts[:-1], chunk[:take]])
        self._split(head, 0, out)  # takes ``head`` whole: exactly the item
        return chunk, take

    def _split(self, data: bytes, at: int, out: list[RecordItem]) -> int:
        """Split items of ``data`` from ``at`` and append the records they
        complete to ``out``; the offset reached (``_need`` is then the bytes
        from there the next item needs)."""
        total = len(data)
        view = memoryview(data)
        unpack, step = _LENGTH.unpack_from, _LENGTH.size
        while True:
            if self._header is None:
                if total - at < step:
                    self._need = step
                    return at
                end = at + step + unpack(data, at)[0]
                if end > total:
                    self._need = end - at
                    return at
                self._begin(view[at + step : end])
                at = end
            items, wanted, magic = self._items, self._wanted, self._magic
            while len(items) < wanted:
                if total - at < step:
                    self._need = step
                    return at
                start = at + step
                end = start + unpack(data, at)[0]
                if end > total:
                    self._need = end - at
                    return at
                # stored updates: the framing now, each update's bytes on first use
                if magic and (end - start < 8 or not data.startswith(MAGIC, start)):
                    self._bad = min(self._bad, len(items))
                items.append(view[start:end])
                at = end
            out.append(self._record(f"records[{self._count}]"))

    def _begin(self, item: memoryview) -> None:
        """Take a record's header item."""
        header = self._header = _header(item, f"records[{self._count}]")
        self._wanted = _wanted(header)
        self._magic = header.get("updates") is not None
        self._bad = 1 << 62

    def _record(self, where: str) -> RecordItem:
        header, items = _taken(self._header), self._items
        self._header, self._items = None, []
        self._count += 1
        system = None
        if header.pop("system"):
            system = self._system(bytes(items.pop(0)), where)
        n, member = header.pop("frames", None), header.pop("updates", None)
        stacked = header.pop("stacked", None)
        frames: Sequence[Frame] | None
        if member is not None:
            frames = self._stored(items, member, where, self._bad - (system is not None))
        elif stacked is not None:
            frames = _unstack(_frame(items[0], f"{where}.trajectory"), stacked, where)
            if len(frames) != n:
                raise FrameBytesError("stacked frames differ from the count", path=where)
        else:
            frames = [_frame(data, f"{where}.trajectory[{k}]") for k, data in enumerate(items)]
        meta = header.pop("meta", {})  # the header is this record's own: its members are moved
        return RecordItem(meta, system, None if n is None else frames, header)

    def _system(self, raw: bytes, where: str) -> Frame:
        systems = self._systems
        system = None if systems is None else systems.get(raw)
        if system is None:
            system = plain_system(raw) or _frame(raw, f"{where}.system")
            if systems is not None:
                systems.put(raw, system)
        return system

    def _stored(self, items: list[memoryview], member: Any, where: str, bad: int) -> StoredFrames:
        tags, boxes = self._members.check(member, len(items), where)
        if 0 <= bad < len(items):
            raise FrameBytesError("an update is not MRF1 bytes", path=f"{where}.trajectory[{bad}]")
        return StoredFrames(items, tags, boxes, f"{where}.trajectory")

    def close(self) -> None:
        """Refuse a stream that ended inside a record.

        Raises
        ------
        FrameBytesError
            Bytes are left over, or a record misses frames its header announced.
        """
        left = self._held
        if left or self._header is not None:
            raise FrameBytesError(
                f"the record stream ended inside record {self._count} ({left} bytes left)",
                path="body",
            )


def _taken(header: dict[str, Any] | None) -> dict[str, Any]:
    """The header of a record whose items are all in (always taken before them)."""
    if header is None:
        raise RuntimeError("a record completed without its header")
    return header


class _Members:
    """The ``updates`` members of a stream's records, checked; the last one
    without cell ordinals is kept, and a record whose member equals it takes
    its checked tags (records of a collection share their per-step tags)."""

    __slots__ = ("_last", "_tags")

    def __init__(self) -> None:
        self._last: Any = None
        self._tags: dict[str, str] = {}

    def check(self, member: Any, n: int, where: str) -> tuple[dict[str, str], list[int]]:
        """The member's meta tags and cell ordinals, checked for ``n`` frames."""
        if member == self._last:  # no ``boxes``: nothing that depends on ``n``
            return self._tags, []
        tags, boxes = _stored_member(member, n, where)
        if not boxes and "boxes" not in member:
            self._last, self._tags = member, tags
        return tags, boxes


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
