"""Types of the native commit encoder (``_kernel.c``)."""

from collections.abc import Buffer, Sequence

def encode(
    runs: Sequence[tuple[Buffer, int, int, int, int]], level: int, threads: int, /
) -> list[list[bytes]]:
    """Per run ``(buffer, offset, count, nbytes, itemsize)``, each chunk's encoded bytes."""

def crc(data: Buffer, /) -> int:
    """The crc32c of ``data``."""
