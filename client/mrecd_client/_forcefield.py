"""A record's or a collection's force field, fetched once and revalidated by ETag.

``GET /v1/{records|collections}/{name}/forcefield`` comes as MRF1 (or JSON
with ``wire="json"``) and becomes a real :class:`mrecd.ForceField`, whose
lookups then run here at local speed. Each later access sends
``If-None-Match`` with the ETag held: a ``304`` hands back the very object
held (its lookup index already built), a ``200`` replaces it.

The collection client (and anything else served under ``/v1/{kind}/{name}``)
calls :func:`fetch_forcefield` / :func:`afetch_forcefield` with the client's
core and send function.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, Literal
from urllib.parse import quote

import httpx

from mrecd.codecs import decode_blocks, plain_document
from mrecd.errors import MrecdError
from mrecd.forcefield import ForceField

from ._wire import FRAME, JSON

if TYPE_CHECKING:
    from ._core import Core

__all__ = ["ForceFieldCache", "Kind", "afetch_forcefield", "fetch_forcefield"]

#: Where the force field hangs: a record's or a collection's.
Kind = Literal["records", "collections"]
#: The problem ``path`` of a 404 that means "no force field here" (not "no such record").
_ABSENT: Final = "forcefield"


class ForceFieldCache:
    """The force fields one client holds, ``(kind, name) -> (ETag, ForceField)``; thread-safe."""

    def __init__(self) -> None:
        self._held: dict[tuple[Kind, str], tuple[str, ForceField]] = {}
        self._lock = threading.Lock()

    def request(self, core: Core, kind: Kind, name: str) -> httpx.Request:
        """The conditional ``GET`` of the force field of ``kind``/``name``."""
        accept = JSON if core.wire == "json" else f"{FRAME}, {JSON};q=0.5"
        headers = {"Accept": accept}
        with self._lock:
            held = self._held.get((kind, name))
        if held is not None:
            headers["If-None-Match"] = held[0]
        return core.request("GET", f"/{kind}/{quote(name, safe='')}/forcefield", headers=headers)

    def answer(
        self, core: Core, kind: Kind, name: str, response: httpx.Response
    ) -> ForceField | None:
        """The force field ``response`` stands for; ``None`` when there is none.

        Raises
        ------
        NotFound
            No such record or collection.
        MrecdError
            Any other refusal, as :mod:`mrecd.errors` classes.
        """
        key = (kind, name)
        if response.status_code == 304:
            with self._lock:
                held = self._held.get(key)
            if held is None:
                raise MrecdError(f"HTTP 304 for the force field of {name!r}, none held")
            return held[1]
        if response.status_code == 404:
            error = core.error(response)
            if error.path != _ABSENT:
                raise error
            with self._lock:
                self._held.pop(key, None)
            return None
        core.check(response)
        forcefield = _decode(response)
        etag = response.headers.get("etag")
        with self._lock:
            if etag is None:
                self._held.pop(key, None)
            else:
                self._held[key] = (etag, forcefield)
        return forcefield


def _decode(response: httpx.Response) -> ForceField:
    """MRF1 (document as header ``meta``, one block per table) or the JSON interchange form."""
    media_type = response.headers.get("content-type", JSON).split(";")[0].strip()
    if media_type == FRAME:
        tables, header = decode_blocks(response.content, copy=True)
        return ForceField.from_section(plain_document(header), tables)
    return ForceField.from_dict(response.json())


def fetch_forcefield(
    core: Core, send: Callable[[httpx.Request], httpx.Response], kind: Kind, name: str
) -> ForceField | None:
    """The force field of ``kind``/``name`` (``None``: it has none), revalidated by ETag.

    Parameters
    ----------
    core
        The client's :class:`~mrecd_client._core.Core` (it holds the cache).
    send
        The client's send-with-retries (``Client._send``).
    kind, name
        ``"records"`` or ``"collections"``, and the name.

    Raises
    ------
    NotFound
        No such record or collection.
    """
    cache = core.forcefields
    return cache.answer(core, kind, name, send(cache.request(core, kind, name)))


async def afetch_forcefield(
    core: Core,
    send: Callable[[httpx.Request], Awaitable[httpx.Response]],
    kind: Kind,
    name: str,
) -> ForceField | None:
    """:func:`fetch_forcefield` for the asyncio client (``send`` is ``AsyncClient._send``)."""
    cache = core.forcefields
    return cache.answer(core, kind, name, await send(cache.request(core, kind, name)))
