"""A record's ``system`` value (``s`` key, lmdb.md §2, §6) decoded and held to
the reader's rules.

A plain system is decoded in one pass (:func:`~mrecd.codecs.plain_system`);
anything else takes the general decoder, which refuses with the rule's
message or accepts.
"""

from __future__ import annotations

from typing import Any

from ...codecs import decode_frame, plain_system
from ...errors import FrameBytesError, InvalidRecord
from ...model import Frame
from ._read import check_v1_frame

__all__ = ["decode_system", "plain_system"]


def decode_system(raw: Any, molrec_version: int | None, where: str) -> Frame:
    """Record ``where``'s system from its stored value, refused as a reader refuses
    (frame bytes, no step or time, row references, version-1 conversions)."""
    buf = bytes(raw)
    system = plain_system(buf)
    if system is None:
        system = _general(buf, where)
    if molrec_version == 1:
        check_v1_frame(system.blocks, f"{where}.system")
    return system


def _general(buf: bytes, where: str) -> Frame:
    try:
        system = decode_frame(buf)
    except FrameBytesError as exc:
        raise FrameBytesError(
            exc.message, path=f"{where}.system/{exc.path}" if exc.path else f"{where}.system"
        ) from None
    if system.step is not None or system.time is not None:
        raise InvalidRecord("a system carries no step or time", path=f"{where}.system")
    try:
        system.check_targets({"system": system.blocks})
    except InvalidRecord as exc:
        raise InvalidRecord(exc.message, path=f"{where}.system/{exc.path}") from None
    return system
