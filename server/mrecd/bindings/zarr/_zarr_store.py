"""zarr-python's store interface over an mrecd :class:`~mrecd.storage.Store`.

zarr-python writes section arrays (``zarr.create_array``) and decodes the
pipelines mrecd's own fast path does not; this adapter lets it do both on
any store of the seam. The calls block: zarr runs them on its own I/O loop
thread, never on a caller's event loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

from zarr.abc.store import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    SuffixByteRequest,
)
from zarr.abc.store import Store as ZarrStore
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype

from ...storage import ByteRange, Offset, Store, Suffix
from ...storage._base import ByteRequest as MrecdRequest

__all__ = ["ZarrAdapter"]


def _request(byte_range: ByteRequest | None) -> MrecdRequest | None:
    if byte_range is None:
        return None
    if isinstance(byte_range, RangeByteRequest):
        return ByteRange(byte_range.start, byte_range.end)
    if isinstance(byte_range, OffsetByteRequest):
        return Offset(byte_range.offset)
    if isinstance(byte_range, SuffixByteRequest):
        return Suffix(byte_range.suffix)
    raise TypeError(f"unknown byte request {byte_range!r}")


class ZarrAdapter(ZarrStore):
    """A zarr-python ``Store`` reading and writing through ``store``."""

    supports_writes = True
    supports_deletes = True
    supports_listing = True
    supports_partial_writes = False

    def __init__(self, store: Store) -> None:
        super().__init__(read_only=store.read_only)
        self.store = store

    def with_read_only(self, read_only: bool = False) -> ZarrAdapter:
        """The same objects, read-only or not (zarr asks before opening with ``mode="r"``)."""
        adapter = ZarrAdapter(self.store)
        adapter._read_only = read_only or self.store.read_only
        return adapter

    def __eq__(self, value: object) -> bool:
        return isinstance(value, ZarrAdapter) and value.store is self.store

    def __hash__(self) -> int:
        return id(self.store)

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        data = self.store.get(key, _request(byte_range))
        return None if data is None else prototype.buffer.from_bytes(data)

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, ByteRequest | None]]
    ) -> list[Buffer | None]:
        return [await self.get(key, prototype, byte_range) for key, byte_range in key_ranges]

    async def exists(self, key: str) -> bool:
        return self.store.exists(key)

    async def set(self, key: str, value: Buffer) -> None:
        self._check_writable()
        self.store.put(key, value.to_bytes())

    async def delete(self, key: str) -> None:
        self._check_writable()
        self.store.delete(key)

    async def list(self) -> AsyncIterator[str]:
        for key in self.store.keys():  # noqa: SIM118 - a Store, not a dict
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in self.store.keys(prefix.rstrip("/")):
            yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        dirs, files = self.store.list_dir(prefix.rstrip("/"))
        for name in sorted(dirs + files):
            yield name

    def default_prototype(self) -> Any:
        """The buffer prototype zarr uses when none is passed."""
        return default_buffer_prototype()
