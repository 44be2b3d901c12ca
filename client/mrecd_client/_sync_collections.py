"""The blocking client's collections: :class:`RemoteCollection` and the :class:`Client` hooks.

Requests are built and answers parsed by :mod:`mrecd_client._collections`;
this module only sends them through the client's retrying ``_send``/``_open``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
from ._forcefield import fetch_forcefield

if TYPE_CHECKING:
    from ._sync import Client

__all__ = ["CollectionsMixin", "RemoteCollection"]

Mode = Literal["r", "r+"]


def _client(mixin: object) -> Client:
    """The client a mixin method runs on (the mixin is only ever a base of it)."""
    return cast("Client", mixin)


class CollectionsMixin:
    """The collection methods of :class:`~mrecd_client.Client` (the catalog's, remotely)."""

    def create_collection(
        self,
        name: str,
        *,
        meta: Mapping[str, Any],
        declaration: Declaration | Mapping[str, Any] | None = None,
        index_columns: Mapping[str, Mapping[str, Any]] | None = None,
        forcefield: ForceField | Mapping[str, Any] | None = None,
    ) -> RemoteCollection:
        """Create collection ``name`` on the server and open it ``r+``.

        Parameters are those of :meth:`mrecd.api.Catalog.create_collection`;
        own index columns have no ``derive`` (a Python callable cannot
        travel): pass each record's values to :meth:`RemoteCollection.append`.

        Raises
        ------
        InvalidRecord
            Unsafe name, bad units, declaration, index columns or force field.
        AlreadyExists
            A collection of that name exists.
        """
        request = CollectionCore(_client(self)._core).create(
            name,
            meta=meta,
            declaration=declaration,
            index_columns=index_columns,
            forcefield=forcefield,
        )
        _client(self)._core.check(_client(self)._send(request, safe=False))
        return _client(self).collection(name, "r+")

    def collection(self, name: str, mode: Mode = "r") -> RemoteCollection:
        """Open collection ``name`` (``"r+"`` to append).

        Raises
        ------
        NotFound
            No collection of that name.
        """
        core = CollectionCore(_client(self)._core)
        summary = core.parse_summary(_client(self)._send(core.summary(name)))
        check_mode(mode)
        return RemoteCollection(_client(self), name, summary, read_only=mode == "r")

    def collections(self, prefix: str | None = None) -> list[str]:
        """Sorted names of the collections that start with ``prefix``."""
        core = CollectionCore(_client(self)._core)
        return core.names(_client(self)._send(core.listing(prefix)))


class RemoteCollection:
    """A collection on the server: the remote twin of :class:`mrecd.api.Collection`.

    Records come back as :class:`mrecd.Record` (meta, system, the resolved
    trajectory frames as a list). :meth:`read_many` and each batch of
    :meth:`batches` are one streamed request (up to 1024 records; more are
    cut into requests of 1024). :meth:`extend` is one request and one
    transaction on the server: all records land, or none.
    """

    def __init__(
        self, client: Client, name: str, summary: CollectionSummary, *, read_only: bool
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

    def close(self) -> None:
        """Nothing to release (the client holds the connections); for ``with`` blocks."""

    def __enter__(self) -> RemoteCollection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def mode(self) -> Literal["r", "r+"]:
        """``"r"`` (read-only) or ``"r+"`` (append)."""
        return "r" if self._read_only or self._summary.read_only else "r+"

    # -- collection-level content ---------------------------------------------------------------

    def _refresh(self) -> CollectionSummary:
        self._summary = self._core.parse_summary(self._client._send(self._core.summary(self._name)))
        return self._summary

    @property
    def meta(self) -> dict[str, Any]:
        """The collection document: ``units``, ``molrec_version`` and every other key."""
        return dict(self._summary.meta)

    @property
    def declaration(self) -> Declaration | None:
        """The ``sequence_schema`` every record's trajectory uses, or ``None`` (not pinned yet)."""
        if self._summary.declaration is None:
            self._refresh()
        return self._summary.declaration

    @property
    def index(self) -> Block:
        """The index block ``records`` (read from the server each time)."""
        return self._core.parse_index(self._client._send(self._core.index(self._name)))

    @property
    def index_columns(self) -> dict[str, dict[str, Any]]:
        """The collection's own index columns as declared."""
        return {k: dict(v) for k, v in self._summary.index_columns.items()}

    @property
    def forcefield(self) -> ForceField | None:
        """The collection-wide force field, or ``None``.

        Fetched from ``GET …/forcefield`` when the summary says the collection
        has one, once; later reads revalidate it by ETag (a 304 hands back the
        object held).
        """
        if not self._summary.forcefield:
            return None
        return fetch_forcefield(self._client._core, self._client._send, "collections", self._name)

    @property
    def n_frames(self) -> int:
        """Frames over all records (asked of the server)."""
        return self._refresh().n_frames

    def __len__(self) -> int:
        return self._refresh().n_records

    # -- reading --------------------------------------------------------------------------------

    @overload
    def __getitem__(self, r: int) -> Record: ...
    @overload
    def __getitem__(self, r: slice) -> list[Record]: ...
    def __getitem__(self, r: int | slice) -> Record | list[Record]:
        if isinstance(r, slice):
            return self.read_many(range(*r.indices(len(self))), frames=False)
        k = check_ordinal(r)
        return self._core.one_record(self._client._send(self._core.record(self._name, k)))

    def __iter__(self) -> Iterator[Record]:
        n = len(self)
        for group in chunks(range(n), BATCH_REQUEST):
            yield from self._stream(list(group))

    def read_many(self, rs: Iterable[int], *, frames: bool = True) -> list[Record]:
        """Records ``rs`` (in that order), in one streamed request per 1024 of them.

        Parameters
        ----------
        rs
            Record ordinals (negative counts from the end; numpy integers too).
        frames
            Accepted for the local signature; remote records always hold
            their frames (they travel in the same response).

        Raises
        ------
        RecordOutOfRange
            An ordinal is out of range (also an ``IndexError``); nothing is returned.
        """
        ordinals = [check_ordinal(r) for r in rs]
        out: list[Record] = []
        for group in chunks(ordinals, BATCH_REQUEST):
            out += self._stream(group)
        return out

    def _stream(self, ordinals: Sequence[int]) -> Iterator[Record]:
        """Records of ``ordinals`` as they arrive (one request); resent on a broken stream."""
        done, attempt = 0, 0
        while done < len(ordinals):
            request = self._core.batch(self._name, ordinals[done:])
            response = self._client._open(request)
            try:
                if not response.is_success:
                    response.read()
                    self._client._core.check(response)
                decoder = RecordsDecoder(self._core.stream_kind(response), self._core.systems)
                for chunk in response.iter_bytes():
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
                time.sleep(delay)
            finally:
                response.close()

    def batches(
        self,
        size: int,
        *,
        shuffle: bool = True,
        seed: int | None = None,
        frames: bool = True,
        drop_last: bool = False,
    ) -> Iterator[list[Record]]:
        """One epoch in batches of ``size`` records, each batch one request.

        The order is the local API's for the same ``seed`` (a numpy
        permutation of the records committed when iteration starts).
        """
        for order in batch_orders(len(self), size, shuffle=shuffle, seed=seed, drop_last=drop_last):
            yield self.read_many(order, frames=frames)

    # -- writing --------------------------------------------------------------------------------

    def _writable(self) -> None:
        if self.mode == "r":
            raise ReadOnlyError(
                "the collection is open read-only; open it with mode='r+'", path=self.url
            )

    def append(
        self, record: Record | Mapping[str, Any], *, index: Mapping[str, Any] | None = None
    ) -> int:
        """Append one record; its ordinal (one request, one transaction)."""
        return self.extend([record], index=[index]).start

    def extend(
        self,
        records: Iterable[Record | Mapping[str, Any]],
        *,
        index: Sequence[Mapping[str, Any] | None] | Mapping[str, Sequence[Any]] | None = None,
    ) -> range:
        """Append ``records`` in one request and one transaction (all or nothing).

        Not resent once the request may have reached the server (a resend
        could append twice); a refused record raises the local error class.
        """
        self._writable()
        items = list(records)
        rows = index_rows(index, len(items))
        if not items:
            n = len(self)
            return range(n, n)
        request = self._core.append(self._name, items, rows)
        added = self._core.appended(self._client._send(request, safe=False))
        if self._summary.declaration is None:
            self._refresh()
        return added

    def __repr__(self) -> str:
        return f"RemoteCollection({self.url!r}, mode={self.mode!r})"
