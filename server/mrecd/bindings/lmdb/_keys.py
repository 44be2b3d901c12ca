"""Keys of the collection file (lmdb.md §2): raw bytes, u64 ordinals big-endian.

Big-endian suffixes make byte order numeric order, so one record's frames
(global ordinals ``first_frame .. first_frame + n_frames - 1``) form one
contiguous cursor range.
"""

from __future__ import annotations

import struct
from typing import Final

from ...errors import InvalidRecord

__all__ = [
    "FF",
    "INDEX",
    "META",
    "U64_MAX",
    "frame_key",
    "index_page_key",
    "record_key",
    "system_key",
]

META: Final = b"meta"
INDEX: Final = b"index"
FF: Final = b"ff"
U64_MAX: Final = 2**64 - 1

_U64BE = struct.Struct(">Q")


def _suffixed(prefix: bytes, ordinal: int) -> bytes:
    if not 0 <= ordinal <= U64_MAX:
        raise InvalidRecord(f"ordinal {ordinal} is outside u64", path=prefix.decode())
    return prefix + _U64BE.pack(ordinal)


def record_key(r: int) -> bytes:
    """``r ‖ u64be(r)``: record ``r``'s ``meta`` document (JSON)."""
    return _suffixed(b"r", r)


def system_key(r: int) -> bytes:
    """``s ‖ u64be(r)``: record ``r``'s ``system`` (frame bytes); absent = no system."""
    return _suffixed(b"s", r)


def frame_key(j: int) -> bytes:
    """``f ‖ u64be(j)``: the trajectory update at global frame ordinal ``j`` (frame bytes)."""
    return _suffixed(b"f", j)


def index_page_key(p: int) -> bytes:
    """``i ‖ u64be(p)``: page ``p`` of a paged index (mrecd's extension, see the README).

    Nine bytes, so it cannot be the five-byte ``index`` key it shares a first
    byte with (as ``f ‖ j`` and ``ff`` do in lmdb.md §2).
    """
    return _suffixed(b"i", p)
