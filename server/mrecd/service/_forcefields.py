"""The force fields this process serves: one validated :class:`~mrecd.forcefield.ForceField`
per record or collection, its canonical JSON bytes and their strong ETag, kept between
requests so that a lookup costs a few dictionary probes, not a decode and a hash.

Every method here blocks (it reads the store or hashes): call it on a worker thread.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from .. import api
from ..codecs import encode_blocks
from ..errors import NotFound
from ..forcefield import ForceField

__all__ = ["ForceFields", "Kind", "Served"]

Kind = Literal["records", "collections"]
#: force fields kept (least recently served dropped first)
_KEPT: Final = 256


def _canonical(ff: ForceField) -> bytes:
    """The JSON interchange form (forcefield.md §1.1) as served: compact, keys sorted.

    Sorted because stores keep object members in different orders (a Zarr group
    lists its columns by name, an LMDB value as written) and none of those
    orders means anything: one force field has one body, one ETag, wherever it lives.
    """
    return json.dumps(
        ff.to_dict(), separators=(",", ":"), sort_keys=True, allow_nan=False, ensure_ascii=False
    ).encode()


@dataclass(eq=False)
class Served:
    """One force field as served.

    Attributes
    ----------
    forcefield
        The validated force field (its lookup index is built on first use and kept).
    body
        The JSON document (document + tables), the bytes the ETag hashes.
    etag
        ``"<sha256 of body, 32 hex digits>"``: the same for every answer about this
        force field (document and lookups), different whenever its content differs.
    token
        Where it was read: the record's handle, or what the collection file
        looked like (to notice a replacement).
    warm
        Whether a lookup has run (built the index), so later ones are cheap.
    """

    forcefield: ForceField
    body: bytes
    etag: str
    token: Any = None
    warm: bool = False
    _mrf1: bytes | None = field(default=None, repr=False)

    @classmethod
    def of(cls, forcefield: ForceField, token: Any) -> Served:
        """Serialize and hash ``forcefield`` (blocking)."""
        body = _canonical(forcefield)
        digest = hashlib.sha256(body).hexdigest()[:32]
        return cls(forcefield, body, f'"{digest}"', token)

    @property
    def mrf1_etag(self) -> str:
        """The ETag of the MRF1 representation (another representation, another tag)."""
        return f'{self.etag[:-1]}-mrf1"'

    def mrf1(self) -> bytes:
        """MRF1 bytes: header ``meta`` = the document, one block per table (lmdb.md §6.1)."""
        if self._mrf1 is None:
            document, tables = self.forcefield.to_section()
            self._mrf1 = encode_blocks(tables, {"meta": document})
        return self._mrf1


class ForceFields:
    """The force fields of records and collections of one catalog, as last served.

    Parameters
    ----------
    catalog
        Where collections live (records come as handles the caller holds).

    Notes
    -----
    A record's handle caches its force field, so the held entry is reused
    while requests come through the same handle. A collection's force field is written once,
    at creation: the entry is reused while the file's identity, size and
    modification time are unchanged, and after a change (an append, a
    compaction, a replacement) it is read again and kept when equal.
    """

    def __init__(self, catalog: api.Catalog) -> None:
        self._catalog = catalog
        self._held: OrderedDict[tuple[Kind, str], Served] = OrderedDict()
        self._lock = threading.Lock()

    def _get(self, key: tuple[Kind, str]) -> Served | None:
        # a lock held for a dictionary probe: cheap enough to take on the event loop
        with self._lock:
            served = self._held.get(key)
            if served is not None:
                self._held.move_to_end(key)
            return served

    def _keep(self, key: tuple[Kind, str], forcefield: ForceField, token: Any) -> Served:
        held = self._get(key)
        if held is not None and (held.forcefield is forcefield or held.forcefield == forcefield):
            served = Served(held.forcefield, held.body, held.etag, token, held.warm, held._mrf1)
        else:
            served = Served.of(forcefield, token)
        with self._lock:
            self._held[key] = served
            self._held.move_to_end(key)
            while len(self._held) > _KEPT:
                self._held.popitem(last=False)
        return served

    def of_record(self, name: str, record: api.StoredRecord) -> Served:
        """The force field of record ``name`` (``record``: its open handle).

        Raises
        ------
        NotFound
            The record has no force field (``path`` is ``"forcefield"``).
        """
        held = self.held_for_record(name, record)
        if held is not None:
            return held
        forcefield = record.forcefield if record.exists else None
        if forcefield is None:
            raise NotFound(f"record {name!r} has no force field", path="forcefield")
        return self._keep(("records", name), forcefield, record)

    def held_for_record(self, name: str, record: api.StoredRecord) -> Served | None:
        """The entry read through this very handle, if any (never blocks: no store access).

        A handle reads its force field once and keeps it, and the service never
        replaces a record's force field in place, so the same handle means the
        same force field; a deleted and re-created record comes with a new handle.
        """
        held = self._get(("records", name))
        return held if held is not None and held.token is record else None

    def _file_token(self, name: str) -> Any:
        local = self._catalog.local_path
        if local is None:
            raise NotFound(
                f"no collection named {name!r}: collections are LMDB files on a local disk"
                f" and {self._catalog.url} has none",
                path=name,
            )
        try:
            stat = os.stat(Path(local) / f"{name}.mrec.lmdb")
        except FileNotFoundError:
            raise NotFound(f"no collection named {name!r}", path=name) from None
        return stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size

    def of_collection(self, name: str) -> Served:
        """The force field of collection ``name``.

        Raises
        ------
        NotFound
            No such collection, or it has no force field (``path`` ``"forcefield"``).
        """
        api.check_record_name(name)
        token = self._file_token(name)
        held = self._get(("collections", name))
        if held is not None and held.token == token:
            return held
        with self._catalog.collection(name) as collection:
            forcefield = collection.forcefield
        if forcefield is None:
            raise NotFound(f"collection {name!r} has no force field", path="forcefield")
        return self._keep(("collections", name), forcefield, token)
