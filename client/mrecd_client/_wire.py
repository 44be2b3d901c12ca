"""Frames on the wire: MRF1 (one frame, or a length-prefixed stream) and the JSON form.

The same codec as the server and the LMDB binding (:mod:`mrecd.codecs`), so
the bytes cannot drift. Pure functions and one incremental decoder: no I/O.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Final, Literal

from mrecd.codecs import decode_frame, encode_frame
from mrecd.errors import FrameBytesError
from mrecd.model import Frame

__all__ = [
    "FRAME",
    "FRAMES",
    "JSON",
    "NDJSON",
    "FrameStreamDecoder",
    "Wire",
    "encode_frames",
]

FRAME: Final = "application/x-mrec-frame"
FRAMES: Final = "application/x-mrec-frames"
JSON: Final = "application/json"
NDJSON: Final = "application/x-ndjson"
PROBLEM: Final = "application/problem+json"
_LENGTH: Final = struct.Struct("<Q")

#: How frames travel: MRF1 bytes (the default) or the JSON form (for debugging, proxies).
Wire = Literal["mrf1", "json"]


def encode_frames(frames: Sequence[Frame], wire: Wire) -> tuple[bytes, str]:
    """The body and ``Content-Type`` of a POST carrying ``frames``.

    Parameters
    ----------
    frames
        At least one frame.
    wire
        ``"mrf1"``: one ``application/x-mrec-frame`` or a length-prefixed
        ``application/x-mrec-frames`` stream; ``"json"``: a JSON array.
    """
    if wire == "json":
        items = [frame.to_dict() for frame in frames]
        return json.dumps(items, separators=(",", ":"), allow_nan=False).encode(), JSON
    if len(frames) == 1:
        return encode_frame(frames[0], meta_types=True), FRAME
    parts: list[bytes] = []
    for frame in frames:
        data = encode_frame(frame, meta_types=True)
        parts += [_LENGTH.pack(len(data)), data]
    return b"".join(parts), FRAMES


def decode_one(body: bytes, content_type: str) -> Frame:
    """One frame from a response body of ``content_type`` (MRF1 or JSON)."""
    if content_type == JSON:
        return Frame.from_dict(json.loads(body), path="body")
    return decode_frame(body, copy=True)


class FrameStreamDecoder:
    """Split a streamed slice into frames as its bytes arrive (bounded by one frame).

    Feed chunks of an ``application/x-mrec-frames`` (u64 LE length, then MRF1)
    or ``application/x-ndjson`` body; :meth:`feed` returns the frames completed
    so far, :meth:`close` refuses a body that ends inside a frame.
    """

    def __init__(self, content_type: str) -> None:
        self._json = content_type == NDJSON
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[Frame]:
        """Frames completed by ``chunk``, in order."""
        self._buffer += chunk
        return self._lines() if self._json else self._records()

    def _records(self) -> list[Frame]:
        out: list[Frame] = []
        while len(self._buffer) >= _LENGTH.size:
            (size,) = _LENGTH.unpack_from(self._buffer, 0)
            end = _LENGTH.size + size
            if len(self._buffer) < end:
                break
            out.append(decode_frame(bytes(self._buffer[_LENGTH.size : end]), copy=True))
            del self._buffer[:end]
        return out

    def _lines(self) -> list[Frame]:
        out: list[Frame] = []
        while (newline := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:newline])
            del self._buffer[: newline + 1]
            if line.strip():
                out.append(Frame.from_dict(json.loads(line), path="body"))
        return out

    def close(self) -> None:
        """Refuse a stream that ended inside a frame.

        Raises
        ------
        FrameBytesError
            Bytes are left over.
        """
        if self._buffer.strip() if self._json else self._buffer:
            raise FrameBytesError(
                f"the frame stream ended inside a frame ({len(self._buffer)} bytes left)",
                path="body",
            )
