"""Extents of trajectory arrays (chunking.md §4.1) and the automatic flush cadence (§6).

Extents are frozen when an array is created, from the row count of the first
update the writer sees (the representative frame).

One deliberate departure from the reference extents (which chunking.md marks
as a writer's choice): a shard holds at most 255 inner chunks, not 4096, so
its index and checksum (16 * 255 + 4 = 4084 bytes) lie in the first 4 KiB page
of the shard file. The appender rewrites that index in place; Linux copies a
buffered write page by page and stops between pages when the process is
killed, so a multi-page index could be left torn (new entries, old checksum)
and the whole shard unreadable. A one-page write is not split that way.
Chunk sizes, codecs and density are the reference ones.
"""

from __future__ import annotations

import math
from typing import Final

__all__ = [
    "DENSE_CHUNKS_PER_SHARD",
    "DENSE_CHUNK_ROWS",
    "MAX_CHUNKS_PER_SHARD",
    "REFERENCE_MAX_CHUNKS_PER_SHARD",
    "block_rows_per_chunk",
    "chunks_per_shard",
    "flush_every",
    "row_bytes",
]

CHUNK_TARGET: Final = 16384  # bytes of the narrowest column per chunk
SHARD_TARGET: Final = 268435456  # 256 MiB
REFERENCE_MAX_CHUNKS_PER_SHARD: Final = 4096  # chunking.md: keeps a shard index <= 64 KiB
MAX_CHUNKS_PER_SHARD: Final = 255  # index + crc32c within one 4 KiB page
DENSE_CHUNK_ROWS: Final = 1024
DENSE_CHUNKS_PER_SHARD: Final = 255  # reference 256; see the module docstring
STRING_ROW_BYTES: Final = 16
FLUSH_TARGET: Final = 4194304  # 4 MiB of buffered frames
MAX_FLUSH_EVERY: Final = 4096

_ITEMSIZE: Final = {
    "f64": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "u8": 1, "u16": 2, "u32": 4, "u64": 8,
    "bool": 1, "c64": 8, "c128": 16, "string": STRING_ROW_BYTES,
}  # fmt: skip


def row_bytes(dtype: str, trailing: tuple[int, ...]) -> int:
    """Bytes of one row: product of trailing axes times the element size (a string is 16)."""
    return max(1, math.prod(trailing)) * _ITEMSIZE[dtype]


def block_rows_per_chunk(frame_rows: int, narrowest_row_bytes: int) -> int:
    """Rows per inner chunk shared by a block's columns: frame-aligned, at least 16 KiB.

    ``frame_rows == 0`` (a block first seen empty): ``max(1, floor(16384 / row_bytes))``.
    """
    if frame_rows == 0:
        return max(1, CHUNK_TARGET // narrowest_row_bytes)
    want = max(frame_rows, math.ceil(CHUNK_TARGET / narrowest_row_bytes))
    return math.ceil(want / frame_rows) * frame_rows


def chunks_per_shard(
    rows_per_chunk: int, column_row_bytes: int, *, cap: int = MAX_CHUNKS_PER_SHARD
) -> int:
    """Inner chunks per shard for one column: a 256 MiB shard, clamped to ``[1, cap]``.

    ``cap`` is 4096 in the reference extents (:data:`REFERENCE_MAX_CHUNKS_PER_SHARD`)
    and 255 in what mrecd writes (one-page shard index).
    """
    chunk_bytes = rows_per_chunk * column_row_bytes
    return min(cap, max(1, SHARD_TARGET // chunk_bytes))


def flush_every(frame_bytes_total: int, frames_per_chunk: int) -> int:
    """K: flush every K frames (~4 MiB buffered, a multiple of frames-per-chunk, <= 4096)."""
    k = max(1, math.ceil(FLUSH_TARGET / max(1, frame_bytes_total)))
    step = max(1, frames_per_chunk)
    k = math.ceil(k / step) * step
    return min(k, MAX_FLUSH_EVERY)
