"""Read-side access to the node tree of a record: a ``*.mrec`` directory or a ``*.mrec.zip``.

A :class:`Tree` hands out raw entries (``read``), the immediate entries under
a path (``entries``) and parsed node metadata (``node``). Every ``zarr.json``
is parsed strictly: bare ``NaN``/``Infinity`` tokens are refused (frame.md
§10.4: a writer never emits them) and so is anything but a Zarr V3 group or
array. Array chunks are decoded by zarr-python through :attr:`Tree.zarr_store`.

Paths are ``/``-separated and relative to the record root; ``""`` is the root.
"""

from __future__ import annotations

import os
import struct
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from zarr.abc.store import Store
from zarr.storage import LocalStore, ZipStore

from ...errors import InvalidRecord, NotFound
from ...model import loads_strict

__all__ = ["DirTree", "Node", "RangeReader", "Tree", "ZipTree", "join", "open_tree"]

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


class RangeReader:
    """Positional reads of one entry (a file, or a stored member of a zip) from an open descriptor.

    ``pread`` is thread-safe (``os.pread``); :meth:`close` releases a descriptor
    the reader owns.
    """

    def __init__(self, fd: int, start: int, size: int, *, owns: bool) -> None:
        self._fd = fd
        self._start = start
        self.size = size
        self._owns = owns

    def pread(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``offset`` of the entry (fewer at its end)."""
        size = max(0, min(size, self.size - offset))
        return os.pread(self._fd, size, self._start + offset) if size else b""

    def close(self) -> None:
        """Close the descriptor when this reader opened it."""
        if self._owns and self._fd >= 0:
            os.close(self._fd)
        self._fd = -1


class _BytesRange(RangeReader):
    """A member that is not stored raw: read whole once, then sliced."""

    def __init__(self, data: bytes) -> None:
        super().__init__(-1, 0, len(data), owns=False)
        self._data = data

    def pread(self, offset: int, size: int) -> bytes:
        return self._data[offset : offset + size]


class Tree(ABC):
    """The entries of one record, read-only. Subclasses: :class:`DirTree`, :class:`ZipTree`."""

    #: The file or directory the tree reads.
    location: Path

    @abstractmethod
    def read(self, key: str) -> bytes | None:
        """The bytes of entry ``key``, or ``None`` when there is no such entry."""

    @abstractmethod
    def entries(self, path: str) -> tuple[list[str], list[str]]:
        """``(sub-directories, files)`` directly under ``path``, each sorted."""

    @abstractmethod
    def open_range(self, key: str) -> RangeReader | None:
        """A positional reader of entry ``key`` (``None`` when missing)."""

    @property
    @abstractmethod
    def zarr_store(self) -> Store:
        """A read-only zarr-python store over the same entries (to decode chunks)."""

    def close(self) -> None:  # noqa: B027 - optional hook, a directory holds nothing open
        """Release open handles."""

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


class DirTree(Tree):
    """A ``*.mrec`` directory on the local file system."""

    def __init__(self, root: Path) -> None:
        self.location = root
        self._store: LocalStore | None = None

    def read(self, key: str) -> bytes | None:
        try:
            return (self.location / key).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def open_range(self, key: str) -> RangeReader | None:
        try:
            fd = os.open(self.location / key, os.O_RDONLY)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        return RangeReader(fd, 0, os.fstat(fd).st_size, owns=True)

    def entries(self, path: str) -> tuple[list[str], list[str]]:
        dirs: list[str] = []
        files: list[str] = []
        try:
            for entry in (self.location / path).iterdir():
                (dirs if entry.is_dir() else files).append(entry.name)
        except (FileNotFoundError, NotADirectoryError):
            pass
        return sorted(dirs), sorted(files)

    @property
    def zarr_store(self) -> Store:
        if self._store is None:
            self._store = LocalStore(self.location, read_only=True)
        return self._store


class ZipTree(Tree):
    """A packed ``*.mrec.zip``, read in place through the central directory (no extraction)."""

    def __init__(self, path: Path) -> None:
        self.location = path
        try:
            self._zip = zipfile.ZipFile(path, mode="r")
        except (zipfile.BadZipFile, OSError) as exc:
            raise InvalidRecord(
                f"not a readable zip archive: {exc} (chunking.md §7)", path=str(path)
            ) from None
        self._files: set[str] = set()
        self._dirs: dict[str, tuple[set[str], set[str]]] = {"": (set(), set())}
        for name in self._zip.namelist():
            if not name.endswith("/"):  # a packer writes no directory entries; tolerate them
                self._index(name)
        self._store: ZipStore | None = None
        self._fd: int | None = None  # one descriptor shared by every member's RangeReader

    def _index(self, name: str) -> None:
        self._files.add(name)
        parts = name.split("/")
        for depth in range(len(parts)):
            parent = "/".join(parts[:depth])
            dirs, files = self._dirs.setdefault(parent, (set(), set()))
            if depth == len(parts) - 1:
                files.add(parts[depth])
            else:
                dirs.add(parts[depth])

    def read(self, key: str) -> bytes | None:
        if key not in self._files:
            return None
        return self._zip.read(key)

    def open_range(self, key: str) -> RangeReader | None:
        """A stored member is a contiguous range of the archive: read it in place."""
        if key not in self._files:
            return None
        info = self._zip.getinfo(key)
        if info.compress_type != zipfile.ZIP_STORED:
            return _BytesRange(self._zip.read(key))
        if self._fd is None:
            self._fd = os.open(self.location, os.O_RDONLY)
        header = os.pread(self._fd, 30, info.header_offset)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise InvalidRecord("corrupt local header in the zip archive", path=key)
        name_length, extra_length = struct.unpack_from("<HH", header, 26)
        start = info.header_offset + 30 + name_length + extra_length
        return RangeReader(self._fd, start, info.file_size, owns=False)

    def entries(self, path: str) -> tuple[list[str], list[str]]:
        dirs, files = self._dirs.get(path, (set(), set()))
        return sorted(dirs), sorted(files)

    @property
    def zarr_store(self) -> Store:
        if self._store is None:
            self._store = ZipStore(self.location, mode="r")
        return self._store

    @property
    def names(self) -> list[str]:
        """Every entry name in the archive (what a packing check inspects)."""
        return self._zip.namelist()

    def infos(self) -> list[zipfile.ZipInfo]:
        """The archive's entry records (compression method, sizes)."""
        return self._zip.infolist()

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._zip.close()


def open_tree(path: Path) -> Tree:
    """The tree of a record at ``path``: a directory, or a ``*.mrec.zip`` file.

    Raises
    ------
    NotFound
        Nothing exists at ``path``.
    """
    if path.is_dir():
        return DirTree(path)
    if path.is_file():
        return ZipTree(path)
    raise NotFound("no record at this path", path=str(path))
