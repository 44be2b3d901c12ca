"""A key in a store, used like a path: ``loc / "zarr.json"``, ``loc.parent``, ``loc.name``.

The Zarr binding addresses nodes by :class:`Location` instead of
:class:`pathlib.Path`, so one code path serves a directory, RAM and a bucket.
The few file-like methods (``read_bytes``, ``write_text``, ``iterdir`` …)
follow :mod:`pathlib` so that code and tests written against paths carry
over (as zarr's ``StorePath`` and universal-pathlib do).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidRecord
from ._base import Store, join_key

__all__ = ["Location", "dumps_json", "location_of", "read_json", "write_json"]


@dataclass(frozen=True, slots=True)
class Location:
    """Key ``key`` (an object, or a prefix of objects) in ``store``."""

    store: Store
    key: str = ""

    def __truediv__(self, name: str) -> Location:
        return Location(self.store, join_key(self.key, name))

    def __str__(self) -> str:
        return f"{self.store.url.rstrip('/')}/{self.key}" if self.key else self.store.url

    def __fspath__(self) -> str:
        """The local file path, for a directory store only (``os.fspath`` on others fails)."""
        base = self.store.local_directory()
        if base is None:
            raise TypeError(f"{self} is not on a local file system")
        return f"{base}/{self.key}" if self.key else base

    @property
    def name(self) -> str:
        """The last key component (``""`` at the store root)."""
        return self.key.rsplit("/", 1)[-1]

    @property
    def parent(self) -> Location:
        """The enclosing prefix."""
        return Location(self.store, self.key.rsplit("/", 1)[0] if "/" in self.key else "")

    def with_name(self, name: str) -> Location:
        """The sibling called ``name``."""
        return self.parent / name

    def as_store(self) -> Store:
        """A store rooted here (keys relative to this location)."""
        return self.store.child(self.key)

    # -- pathlib-shaped queries ------------------------------------------------------------------

    def is_file(self) -> bool:
        """Whether an object is stored at this key."""
        return bool(self.key) and self.store.exists(self.key)

    def is_dir(self) -> bool:
        """Whether objects are stored under this prefix."""
        return self.store.is_prefix(self.key)

    def exists(self) -> bool:
        """An object at this key, or objects under it."""
        return self.is_file() or self.is_dir()

    def iterdir(self) -> Iterator[Location]:
        """The immediate children (prefixes and objects), sorted by name."""
        dirs, files = self.store.list_dir(self.key)
        for name in sorted(dirs + files):
            yield self / name

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Nothing to do: a prefix exists as soon as an object is stored under it."""

    def read_bytes(self) -> bytes:
        """The object's bytes; :class:`FileNotFoundError` when absent (as pathlib)."""
        data = self.store.get(self.key)
        if data is None:
            raise FileNotFoundError(str(self))
        return data

    def read_text(self, encoding: str = "utf-8") -> str:
        """The object decoded as text."""
        return self.read_bytes().decode(encoding)

    def write_bytes(self, data: bytes) -> int:
        """Replace the object with ``data``."""
        self.store.put(self.key, data)
        return len(data)

    def write_text(self, text: str, encoding: str = "utf-8") -> int:
        """Replace the object with ``text`` encoded."""
        return self.write_bytes(text.encode(encoding))

    def unlink(self, missing_ok: bool = False) -> None:
        """Remove the object."""
        if not missing_ok and not self.is_file():
            raise FileNotFoundError(str(self))
        self.store.delete(self.key)


def dumps_json(document: dict[str, Any]) -> bytes:
    """A ``zarr.json`` document as compact strict JSON bytes (no bare NaN)."""
    return json.dumps(document, allow_nan=False, separators=(",", ":"), ensure_ascii=False).encode()


def _no_constant(token: str) -> Any:
    raise ValueError(f"bare {token} is not JSON")


def read_json(loc: Location) -> dict[str, Any] | None:
    """Parse the JSON object at ``loc`` strictly; ``None`` when absent."""
    raw = loc.store.get(loc.key)
    if raw is None:
        return None
    try:
        document = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRecord(f"not valid JSON: {exc}", path=loc.key) from None
    if not isinstance(document, dict):
        raise InvalidRecord("zarr.json is not a JSON object", path=loc.key)
    return document


def write_json(loc: Location, document: dict[str, Any], *, durable: bool = False) -> str:
    """Replace the object at ``loc`` with ``document`` atomically; answer its ETag."""
    return loc.store.put(loc.key, dumps_json(document), durable=durable)


def location_of(target: str | os.PathLike[str] | Location, *, read_only: bool = False) -> Location:
    """The location ``target`` names: a :class:`Location`, a local path, or a store URL.

    A path or URL is split at its last component: the store is its parent
    (where staging happens), the key its name.
    """
    if isinstance(target, Location):
        return target
    from ._url import open_store

    text = os.fspath(target)
    head, _, name = text.rstrip("/").rpartition("/")
    if not name:
        raise InvalidRecord("a record location names a record, not a store root", path=text)
    if "://" in text and "://" not in head:  # "memory://name" alone: the store root's child
        raise InvalidRecord("a record location names a record inside a store", path=text)
    return Location(open_store(head or ".", read_only=read_only), name)
