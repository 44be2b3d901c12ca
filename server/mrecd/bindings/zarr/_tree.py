"""Read-side access to the node tree of a record, through the store it lives in.

A :class:`Tree` hands out raw entries (``read``), the immediate entries under
a path (``entries``) and parsed node metadata (``node``). Every ``zarr.json``
is parsed strictly: bare ``NaN``/``Infinity`` tokens are refused (frame.md
§10.4: a writer never emits them) and so is anything but a Zarr V3 group or
array. Foreign pipelines are decoded by zarr-python through :attr:`Tree.zarr_store`.

Paths are ``/``-separated and relative to the record root; ``""`` is the root.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ...errors import InvalidRecord, NotFound
from ...model import loads_strict
from ...storage import Location, RangeReader, Store, ZipStore
from ._zarr_store import ZarrAdapter

__all__ = ["Node", "RangeReader", "Tree", "join", "open_tree"]

NodeKind = Literal["group", "array"]


def join(*parts: str) -> str:
    """Join path components, skipping empty ones (``join("", "frame") == "frame"``)."""
    return "/".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class Node:
    """One Zarr node: its ``path``, ``kind`` and the parsed ``zarr.json`` document."""

    path: str
    kind: NodeKind
    metadata: dict[str, Any]

    @property
    def attributes(self) -> dict[str, Any]:
        """The node's attribute map (refused by :meth:`Tree.node` when not an object)."""
        attrs: dict[str, Any] = self.metadata.get("attributes", {})
        return attrs


def _parse_node(path: str, raw: bytes) -> Node:
    where = path or "/"
    try:
        doc = loads_strict(raw)
    except ValueError as exc:  # includes UnicodeDecodeError and the bare-NaN refusal
        raise InvalidRecord(
            f"zarr.json is not strict JSON: {exc} (frame.md §10.4: NaN/infinity are never bare"
            " tokens)",
            path=where,
        ) from None
    if not isinstance(doc, Mapping):
        raise InvalidRecord("zarr.json is not a JSON object (storage.md §1)", path=where)
    if doc.get("zarr_format") != 3:
        raise InvalidRecord(
            f"zarr_format {doc.get('zarr_format')!r} is not 3: a record is Zarr V3 (storage.md §1)",
            path=where,
        )
    kind = doc.get("node_type")
    if kind not in ("group", "array"):
        raise InvalidRecord(
            f"node_type {kind!r} is neither 'group' nor 'array' (storage.md §1)", path=where
        )
    attributes = doc.get("attributes", {})
    if not isinstance(attributes, Mapping):
        raise InvalidRecord("attributes must be a JSON object (storage.md §1)", path=where)
    return Node(path, kind, dict(doc))


class Tree:
    """The entries of one record, read-only, through a :class:`~mrecd.storage.Store`.

    The store is rooted at the record (a directory, a prefix of a bucket, or
    a packed zip as a :class:`~mrecd.storage.ZipStore`).

    Parameters
    ----------
    store
        The record's store.
    owns
        Close the store with the tree (a zip the tree opened itself).
    """

    def __init__(self, store: Store, *, owns: bool = False) -> None:
        self.store = store
        self._owns = owns
        self._zarr: ZarrAdapter | None = None
        #: Array readers of the current generation by key, and those of the one
        #: before a refresh (a newer reader of the same key adopts their caches).
        self.readers: dict[str, Any] = {}
        self.retired: dict[str, Any] = {}

    def retire_readers(self) -> None:
        """Start a new generation: the current readers become adoptable, older ones close."""
        for reader in self.retired.values():
            reader.close()
        self.retired, self.readers = self.readers, {}

    @property
    def location(self) -> str:
        """The record's URL (for messages)."""
        return self.store.url

    @property
    def packed(self) -> bool:
        """Whether the tree reads a packed ``*.mrec.zip``."""
        return isinstance(self.store, ZipStore)

    def read(self, key: str) -> bytes | None:
        """The bytes of entry ``key``, or ``None`` when there is no such entry."""
        return self.store.get(key)

    def entries(self, path: str) -> tuple[list[str], list[str]]:
        """``(sub-directories, files)`` directly under ``path``, each sorted."""
        return self.store.list_dir(path)

    def open_range(self, key: str) -> RangeReader | None:
        """A positional reader of entry ``key`` (``None`` when missing)."""
        return self.store.open_reader(key)

    @property
    def zarr_store(self) -> ZarrAdapter:
        """A zarr-python store over the same entries (to decode foreign pipelines)."""
        if self._zarr is None:
            self._zarr = ZarrAdapter(self.store)
        return self._zarr

    def infos(self) -> list[zipfile.ZipInfo]:
        """The archive's entry records when packed (compression, sizes); else ``[]``."""
        return self.store.infos() if isinstance(self.store, ZipStore) else []

    @property
    def names(self) -> list[str]:
        """Every entry name in a packed archive (what a packing check inspects)."""
        return [i.filename for i in self.infos()]

    def close(self) -> None:
        """Release the readers' entries and the store when the tree opened it."""
        for reader in [*self.retired.values(), *self.readers.values()]:
            reader.close()
        self.retired, self.readers = {}, {}
        if self._owns:
            self.store.close()

    def node(self, path: str) -> Node | None:
        """The node at ``path`` (strictly parsed), or ``None`` when it has no ``zarr.json``."""
        raw = self.read(join(path, "zarr.json"))
        return None if raw is None else _parse_node(path, raw)

    def children(self, path: str) -> dict[str, Node]:
        """The child nodes of ``path`` by name (directories without ``zarr.json`` are skipped)."""
        out: dict[str, Node] = {}
        for name in self.entries(path)[0]:
            node = self.node(join(path, name))
            if node is not None:
                out[name] = node
        return out


def open_tree(loc: Location) -> Tree:
    """The tree of the record at ``loc``: a prefix of objects, or a ``*.mrec.zip`` object.

    Raises
    ------
    NotFound
        Nothing exists at ``loc``.
    """
    if loc.is_file():
        return Tree(ZipStore(loc.store, loc.key), owns=True)
    if loc.is_dir():
        return Tree(loc.as_store())
    raise NotFound("no record at this path", path=str(loc))
