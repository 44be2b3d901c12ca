"""The asyncio client's collections: :class:`AsyncRemoteCollection` and the ``AsyncClient`` hooks.

The twin of :mod:`mrecd_client._sync_collections`: the same sans-I/O core
(:mod:`mrecd_client._collections`) builds every request and parses every
answer; this module only awaits the sending.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, overload

import httpx

from mrecd._record import Record
from mrecd.errors import ReadOnlyError
from mrecd.forcefield import ForceField
from mrecd.model import Block, Declaration, index_rows

from ._collections import (
    BATCH_REQUEST,
    CollectionCore,
    CollectionSummary,
    RecordsDecoder,
    batch_orders,
    check_ordinal,
    chunks,
)
from ._core import check_mode, transport_failure
from ._forcefield import afetch_forcefield

if TYPE_CHECKING:
    from ._async import AsyncClient

__all__ = ["AsyncCollectionsMixin", "AsyncRemoteCollection"]

Mode = Literal["r", "r+"]


def _client(mixin: object) -> AsyncClient:
    """The client a mixin method runs on (the mixin is only ever a base of it)."""
    return cast("AsyncClient", mixin)


class AsyncCollectionsMixin:
    """The collection methods of :class:`~mrecd_client.AsyncClient`, awaited."""

    async def create_collection(
        self,
        name: str,
        *,
        meta: Mapping[str, Any],
        declaration: Declaration | Mapping[str, Any] | None = None,
        index_columns: Mapping[str, Mapping[str, Any]] | None = None,
        forcefield: ForceField | Mapping[str, Any] | None = None,
    ) -> AsyncRemoteCollection:
        """Create collection ``name`` on the server and open it ``r+`` (as the sync client)."""
        request = CollectionCore(_client(self)._core).create(
            name,
            meta=meta,
            declaration=declaration,
            index_columns=index_columns,
            forcefield=forcefield,
        )
        _client(self)._core.check(await _client(self)._send(request, safe=False))
        return await _client(self).collection(name, "r+")

    async def collection(self, name: str, mode: Mode = "r") -> AsyncRemoteCollection:
        """Open collection ``name`` (``"r+"`` to append); :class:`~mrecd.NotFound` if absent."""
        core = CollectionCore(_client(self)._core)
        summary = core.parse_summary(await _client(self)._send(core.summary(name)))
        check_mode(mode)
        return AsyncRemoteCollection(_client(self), name, summary, read_only=mode == "r")

    async def collections(self, prefix: str | None = None) -> list[str]:
        """Sorted names of the collections that start with ``prefix``."""
        core = CollectionCore(_client(self)._core)
        return core.names(await _client(self)._send(core.listing(prefix)))


class AsyncRemoteCollection:
    """The asyncio twin of :class:`~mrecd_client.RemoteCollection`.

    ``len`` is the record count last seen (at open, after an append, or
    after :meth:`refresh`, which asks the server); ``index``, ``forcefield``
    and ``n_frames`` are awaited; ``await col[r]`` reads record ``r``;
    ``async for batch in col.batches(...)`` reads one request per batch.
    """

    def __init__(
        self, client: AsyncClient, name: str, summary: CollectionSummary, *, read_only: bool
    ) -> None:
        self._client = client
        self._name = name
        self._summary = summary
        self._read_only = read_only
        self._core = CollectionCore(client._core)

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The collection's URL on the service."""
        return f"{self._client.url}/v1{CollectionCore.path(self._name)}"

    @property
    def name(self) -> str:
        """The collection's name."""
        return self._name

    async def aclose(self) -> None:
        """Nothing to release (the client holds the connections); for ``async with``."""

    async def __aenter__(self) -> AsyncRemoteCollection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def mode(self) -> Literal["r", "r+"]:
        """``"r"`` (read-only) or ``"r+"`` (append)."""
        return "r" if self._read_only or self._summary.read_only else "r+"

    # -- collection-level content ---------------------------------------------------------------

    async def refresh(self) -> int:
        """Ask the server for its record count (another writer may have appended); ``len``."""
        response = await self._client._send(self._core.summary(self._name))
        self._summary = self._core.parse_summary(response)
        return self._summary.n_records

    @property
    def meta(self) -> dict[str, Any]:
        """The collection document (read at open)."""
        return dict(self._summary.meta)

    @property
    def declaration(self) -> Declaration | None:
        """The ``sequence_schema`` as last seen (``None`` until pinned; :meth:`refresh` asks)."""
        return self._summary.declaration

    async def index(self) -> Block:
        """The index block ``records`` (read from the server)."""
        response = await self._client._send(self._core.index(self._name))
        return self._core.parse_index(response)

    @property
    def index_columns(self) -> dict[str, dict[str, Any]]:
        """The collection's own index columns as declared."""
        return {k: dict(v) for k, v in self._summary.index_columns.items()}

    async def forcefield(self) -> ForceField | None:
        """The collection-wide force field, or ``None`` (fetched once, revalidated by ETag)."""
        if not self._summary.forcefield:
            return None
        return await afetch_forcefield(
            self._client._core, self._client._send, "collections", self._name
        )

    async def n_frames(self) -> int:
        """Frames over all records (asked of the server)."""
        await self.refresh()
        return self._summary.n_frames

    def __len__(self) -> int:
        return self._summary.n_records

    # -- reading --------------------------------------------------------------------------------

    @overload
    def __getitem__(self, r: int) -> Awaitable[Record]: ...
    @overload
    def __getitem__(self, r: slice) -> Awaitable[list[Record]]: ...
    def __getitem__(self, r: int | slice) -> Awaitable[Record] | Awaitable[list[Record]]:
        if isinstance(r, slice):
            return self._slice(r)
        return self._one(check_ordinal(r))

    async def _one(self, r: int) -> Record:
        return self._core.one_record(await self._client._send(self._core.record(self._name, r)))

    async def _slice(self, rows: slice) -> list[Record]:
        return await self.read_many(range(*rows.indices(await self.refresh())), frames=False)

    def __aiter__(self) -> AsyncIterator[Record]:
        return self._every()

    async def _every(self) -> AsyncIterator[Record]:
        n = await self.refresh()
        for group in chunks(range(n), BATCH_REQUEST):
            async for record in self._stream(list(group)):
                yield record

    async def read_many(self, rs: Iterable[int], *, frames: bool = True) -> list[Record]:
        """Records ``rs`` (in that order), one streamed request per 1024 (as the sync client)."""
        ordinals = [check_ordinal(r) for r in rs]
        out: list[Record] = []
        for group in chunks(ordinals, BATCH_REQUEST):
            out += [record async for record in self._stream(group)]
        return out

    async def _stream(self, ordinals: Sequence[int]) -> AsyncIterator[Record]:
        """Records of ``ordinals`` as they arrive (one request); resent on a broken stream."""
        done, attempt = 0, 0
        while done < len(ordinals):
            request = self._core.batch(self._name, ordinals[done:])
            response = await self._client._open(request)
            try:
                if not response.is_success:
                    await response.aread()
                    self._client._core.check(response)
                decoder = RecordsDecoder(self._core.stream_kind(response), self._core.systems)
                async for chunk in response.aiter_bytes():
                    for record in decoder.feed(chunk):
                        done += 1
                        yield record
                decoder.close()
                return
            except httpx.TransportError as exc:
                attempt += 1
                delay = self._client._policy.retry_exception(exc, attempt, safe=True)
                if delay is None:
                    raise transport_failure(request, exc) from exc
                await asyncio.sleep(delay)
            finally:
                await response.aclose()

    async def batches(
        self,
        size: int,
        *,
        shuffle: bool = True,
        seed: int | None = None,
        frames: bool = True,
        drop_last: bool = False,
    ) -> AsyncIterator[list[Record]]:
        """One epoch in batches of ``size`` records, each batch one request (the local order)."""
        n = await self.refresh()
        for order in batch_orders(n, size, shuffle=shuffle, seed=seed, drop_last=drop_last):
            yield await self.read_many(order, frames=frames)

    # -- writing --------------------------------------------------------------------------------

    def _writable(self) -> None:
        if self.mode == "r":
            raise ReadOnlyError(
                "the collection is open read-only; open it with mode='r+'", path=self.url
            )

    async def append(
        self, record: Record | Mapping[str, Any], *, index: Mapping[str, Any] | None = None
    ) -> int:
        """Append one record; its ordinal (one request, one transaction)."""
        return (await self.extend([record], index=[index])).start

    async def extend(
        self,
        records: Iterable[Record | Mapping[str, Any]],
        *,
        index: Sequence[Mapping[str, Any] | None] | Mapping[str, Sequence[Any]] | None = None,
    ) -> range:
        """Append ``records`` in one request and one transaction (all or nothing)."""
        self._writable()
        items = list(records)
        rows = index_rows(index, len(items))
        if not items:
            n = await self.refresh()
            return range(n, n)
        request = self._core.append(self._name, items, rows)
        added = self._core.appended(await self._client._send(request, safe=False))
        await self.refresh()
        return added

    def __repr__(self) -> str:
        return f"AsyncRemoteCollection({self.url!r}, mode={self.mode!r})"
