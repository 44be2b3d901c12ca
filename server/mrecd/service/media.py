"""Media types of frames on the wire and ``Accept`` negotiation (one registry, no route branches).

* ``application/x-mrec-frame``: one frame, MRF1 bytes (the codec the LMDB binding uses).
* ``application/x-mrec-frames``: frames, each preceded by its length as a u64 little-endian.
* ``application/json``: the JSON form of a frame (``Frame.to_dict``); a slice is JSON lines.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Sequence
from typing import Any, Final

from ..codecs import decode_frame, encode_frame
from ..errors import FrameBytesError, InvalidRecord
from ..model import Frame
from .problems import PROBLEM, HTTPProblem

__all__ = [
    "COMPRESSIBLE",
    "FRAME",
    "FRAMES",
    "JSON",
    "NDJSON",
    "decode_body",
    "encode_one",
    "encode_stream_item",
    "negotiate",
]

FRAME: Final = "application/x-mrec-frame"
FRAMES: Final = "application/x-mrec-frames"
JSON: Final = "application/json"
NDJSON: Final = "application/x-ndjson"
_LENGTH: Final = struct.Struct("<Q")
#: types the compression middleware may compress when asked (besides JSON, text and SSE)
COMPRESSIBLE: Final = (FRAME, FRAMES, NDJSON, PROBLEM)


def _accepted(accept: str) -> list[tuple[str, float]]:
    """``[(media range, q)]`` of an ``Accept`` header, in its order."""
    out: list[tuple[str, float]] = []
    for item in accept.split(","):
        parts = [p.strip() for p in item.split(";")]
        if not parts[0]:
            continue
        q = 1.0
        for param in parts[1:]:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        out.append((parts[0].lower(), q))
    return out


def _matches(media_range: str, offered: str) -> bool:
    if media_range in ("*/*", offered):
        return True
    major, _, minor = media_range.partition("/")
    return minor == "*" and offered.startswith(major + "/")


def negotiate(accept: str | None, offered: Sequence[str]) -> str:
    """The offered media type ``accept`` prefers (the first offered when it names none).

    Raises
    ------
    HTTPProblem
        406, listing ``offered``, when no offered type is acceptable.
    """
    if not accept:
        return offered[0]
    best: tuple[float, int, str] | None = None
    for rank, media_type in enumerate(offered):
        q = max((q for r, q in _accepted(accept) if _matches(r, media_type)), default=0.0)
        if q > 0 and (best is None or (q, -rank) > (best[0], best[1])):
            best = (q, -rank, media_type)
    if best is None:
        raise HTTPProblem(
            406,
            "not-acceptable",
            "Not acceptable",
            f"Accept {accept!r} names none of the offered types: {', '.join(offered)}",
            extensions={"offered": list(offered)},
        )
    return best[2]


def encode_one(frame: Frame, media_type: str) -> bytes:
    """One frame as ``media_type`` (MRF1 with its meta tags, or JSON)."""
    if media_type == JSON:
        return json.dumps(frame.to_dict(), separators=(",", ":"), allow_nan=False).encode()
    return encode_frame(frame, meta_types=True)


def encode_stream_item(frame: Frame, media_type: str) -> bytes:
    """One frame of a slice stream: length-prefixed MRF1, or a JSON line."""
    if media_type == FRAMES:
        data = encode_frame(frame, meta_types=True)
        return _LENGTH.pack(len(data)) + data
    return encode_one(frame, JSON) + b"\n"


def _split_stream(body: bytes) -> Iterator[bytes]:
    view, at = memoryview(body), 0
    while at < len(body):
        if len(body) - at < _LENGTH.size:
            raise FrameBytesError("a frame stream ends inside a length prefix", path="body")
        (size,) = _LENGTH.unpack_from(view, at)
        at += _LENGTH.size
        if size > len(body) - at:
            raise FrameBytesError(
                f"a frame stream length {size} runs past the body's end", path="body"
            )
        yield bytes(view[at : at + size])
        at += size


def _json_frames(body: bytes) -> list[Frame]:
    try:
        data: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRecord(f"the body is not JSON ({exc})", path="body") from None
    items = data if isinstance(data, list) else [data]
    return [Frame.from_dict(item, path=f"frames/{i}") for i, item in enumerate(items)]


def decode_body(body: bytes, content_type: str | None) -> list[Frame]:
    """The frames a POST body carries, by its ``Content-Type``.

    Blocking (decodes arrays): call it on a worker thread.

    Raises
    ------
    HTTPProblem
        415 for a content type that carries no frames.
    FrameBytesError, InvalidRecord
        Bytes or JSON that do not decode to frames.
    """
    media_type = (content_type or "").split(";")[0].strip().lower()
    if media_type == FRAME:
        return [decode_frame(body, copy=True)]
    if media_type == FRAMES:
        return [decode_frame(item, copy=True) for item in _split_stream(body)]
    if media_type == JSON:
        return _json_frames(body)
    raise HTTPProblem(
        415,
        "unsupported-media-type",
        "Unsupported media type",
        f"Content-Type {content_type!r} carries no frames; send one of {FRAME}, {FRAMES}, {JSON}",
        extensions={"offered": [FRAME, FRAMES, JSON]},
    )
