"""Reference extents of trajectory arrays (chunking.md §4.1) and the automatic flush cadence (§6).

Extents are frozen when an array is created, from the row count of the first
update the writer sees (the representative frame).
"""

from __future__ import annotations

import math
from typing import Final

__all__ = [
    "DENSE_CHUNKS_PER_SHARD",
    "DENSE_CHUNK_ROWS",
    "block_rows_per_chunk",
    "chunks_per_shard",
    "flush_every",
    "row_bytes",
]

CHUNK_TARGET: Final = 16384  # bytes of the narrowest column per chunk
SHARD_TARGET: Final = 268435456  # 256 MiB
MAX_CHUNKS_PER_SHARD: Final = 4096  # keeps a shard index <= 64 KiB
DENSE_CHUNK_ROWS: Final = 1024
DENSE_CHUNKS_PER_SHARD: Final = 256
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


def chunks_per_shard(rows_per_chunk: int, column_row_bytes: int) -> int:
    """Inner chunks per shard for one column: a 256 MiB shard, clamped to ``[1, 4096]``."""
    chunk_bytes = rows_per_chunk * column_row_bytes
    return min(MAX_CHUNKS_PER_SHARD, max(1, SHARD_TARGET // chunk_bytes))


def flush_every(frame_bytes_total: int, frames_per_chunk: int) -> int:
    """K: flush every K frames (~4 MiB buffered, a multiple of frames-per-chunk, <= 4096)."""
    k = max(1, math.ceil(FLUSH_TARGET / max(1, frame_bytes_total)))
    step = max(1, frames_per_chunk)
    k = math.ceil(k / step) * step
    return min(k, MAX_FLUSH_EVERY)
