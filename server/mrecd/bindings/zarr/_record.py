"""One record root in a store: recognising it, building it, replacing its sections.

Writes never leave a half-written record behind: a new record is built under
a hidden staging prefix beside its final key and renamed into place; a
section of a live record is written beside the root and swapped in by two
renames (the spec gives no concurrent-reader guarantee on a live store,
chunking.md §2.1). Renames are atomic on a directory and in memory; on
object storage they are copies, and the root ``zarr.json`` is copied last
(create-only), so a record is never visible before all of it is there.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final

from ...errors import AlreadyExists, InvalidRecord, NotFound, ReadOnlyError
from ...errors import PreconditionFailed as PreconditionFailed_
from ...model import Block, Box
from ...storage import Location, ZipStore
from ._carry import carried_extras, copy_unknown, copy_unknown_document
from ._frames import SectionParts, Sink, read_section_parts, write_group_json, write_section
from ._layout import BRAND, ZIP_BRAND
from ._tree import Node, Tree

__all__ = ["RecordStore", "SectionWriter", "build_record", "record_kind"]

#: Writes one section into the (not yet existing) directory it is given.
SectionWriter = Callable[[Location], None]


def record_kind(path: Location) -> str:
    """``"dir"`` for a ``*.mrec`` path, ``"zip"`` for ``*.mrec.zip``; refuse any other name.

    Identity is the path brand plus the Zarr root (storage.md §1).
    """
    name = path.name
    if name.endswith(ZIP_BRAND) and len(name) > len(ZIP_BRAND):
        return "zip"
    if name.endswith(BRAND) and len(name) > len(BRAND):
        return "dir"
    raise InvalidRecord(
        f"a record path ends in {BRAND!r} (live) or {ZIP_BRAND!r} (packed) (storage.md §1)",
        path=str(path),
    )


def _staging_key(loc: Location, what: str) -> Location:
    """A hidden sibling of ``loc`` (stores never list names starting with ``.``)."""
    return loc.with_name(f".{loc.name}.{what}.{uuid.uuid4().hex[:12]}.tmp")


class RecordStore:
    """The binding's handle on one record: a tree to read, and section writes for a live root.

    Parameters
    ----------
    path
        The ``*.mrec`` prefix or the ``*.mrec.zip`` object.
    writable
        Whether section writes are allowed (never for a zip).
    """

    def __init__(self, path: Location, *, writable: bool) -> None:
        kind = record_kind(path)
        is_file, is_dir = path.is_file(), path.is_dir()
        if not (is_file or is_dir):
            raise NotFound("no record at this path", path=str(path))
        if kind == "zip":
            if writable:
                raise ReadOnlyError(
                    "a packed *.mrec.zip is read-only (chunking.md §7)", path=str(path)
                )
            if not is_file:
                raise InvalidRecord(
                    "a packed record is a zip file, not a directory", path=str(path)
                )
            self.tree = Tree(ZipStore(path.store, path.key), owns=True)
        else:
            if not is_dir:
                raise InvalidRecord("a live record is a directory (storage.md §1)", path=str(path))
            self.tree = Tree(path.as_store())
        self.path = path
        self.writable = writable
        try:
            root = self.tree.node("")
        except InvalidRecord as exc:
            self.tree.close()
            raise InvalidRecord(exc.message, path=str(path)) from None
        if root is None:
            self.tree.close()
            raise InvalidRecord(
                "not a record: no zarr.json at the root (storage.md §1)", path=str(path)
            )
        if root.kind != "group":
            self.tree.close()
            raise InvalidRecord(
                "the record root is a Zarr group, not an array (storage.md §1)", path=str(path)
            )
        self.root = root

    # -- reading -----------------------------------------------------------------------------

    def sections(self) -> dict[str, Node]:
        """The root's child nodes by name (known and unknown sections)."""
        return self.tree.children("")

    def node(self, name: str) -> Node | None:
        """The node of root section ``name``, or ``None``."""
        return self.tree.node(name)

    def document(self, name: str) -> dict[str, Any] | None:
        """The attribute map of document section ``name`` (a group), or ``None`` when absent."""
        node = self.tree.node(name)
        if node is None:
            return None
        if node.kind != "group":
            raise InvalidRecord(
                "a document section is a group, not an array (storage.md §4)", path=name
            )
        return dict(node.attributes)

    def section_parts(self, name: str, sink: Sink | None = None) -> SectionParts | None:
        """The frame-shaped section ``name`` as read (attributes, blocks, box), or ``None``."""
        node = self.tree.node(name)
        return None if node is None else read_section_parts(self.tree, node, sink)

    def close(self) -> None:
        """Release the tree's handles."""
        self.tree.close()

    # -- writing -----------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if not self.writable:
            raise ReadOnlyError("the record is open read-only", path=str(self.path))

    @contextmanager
    def _staging(self, name: str) -> Iterator[Location]:
        staging = _staging_key(self.path, name)
        try:
            yield staging
        finally:
            staging.store.delete_prefix(staging.key)

    def replace(self, name: str, writer: SectionWriter) -> None:
        """Write section ``name`` beside the root, then swap it in for the old one (if any)."""
        self._check_writable()
        store = self.path.store
        with self._staging(name) as staging:
            new = staging / name
            writer(new)
            current = self.path / name
            if current.exists():
                store.rename(current.key, (staging / "replaced").key)
            store.rename(new.key, current.key)

    def replace_document(self, name: str, document: Mapping[str, Any]) -> None:
        """Replace document section ``name``; unknown entries under the old group are kept."""

        def writer(new: Location) -> None:
            write_group_json(new, document)
            copy_unknown_document(self.path / name, new)

        self.replace(name, writer)

    def replace_frame_shaped(
        self, name: str, attributes: Mapping[str, Any], blocks: Mapping[str, Block], box: Box | None
    ) -> None:
        """Replace frame-shaped section ``name``, carrying the old group's unknown content."""

        def writer(new: Location) -> None:
            old = self.path / name
            write_section(
                new, attributes, blocks, box, carried_extras(old, blocks, box is not None)
            )
            copy_unknown(old, new, blocks, box is not None)

        self.replace(name, writer)

    def delete(self, name: str) -> None:
        """Remove root section ``name`` and everything under it."""
        self._check_writable()
        current = self.path / name
        if not current.exists():
            raise NotFound(f"the record has no section {name!r}", path=name)
        with self._staging(name) as staging:
            current.store.rename(current.key, (staging / "deleted").key)


def frame_section_writer(
    attributes: Mapping[str, Any], blocks: Mapping[str, Block], box: Box | None
) -> SectionWriter:
    """A writer laying a frame-shaped group into a fresh directory."""
    return lambda new: write_section(new, attributes, blocks, box)


def document_writer(document: Mapping[str, Any]) -> SectionWriter:
    """A writer laying a document group into a fresh directory."""
    return lambda new: write_group_json(new, document)


def _publish(root: Location, path: Location, staging: Location, overwrite: bool) -> None:
    store = path.store
    if path.exists():
        if not overwrite:
            raise AlreadyExists("a record already exists at this path", path=str(path))
        if not (path / "zarr.json").is_file():
            # overwrite replaces a record, never an arbitrary file or directory
            raise AlreadyExists(
                "the path exists and is not a record; refusing to replace it", path=str(path)
            )
        store.rename(path.key, (staging / "replaced").key)
    if store.atomic_rename:
        try:
            store.rename(root.key, path.key)
        except OSError as exc:  # another creator won the race
            raise AlreadyExists(
                f"a record appeared at this path meanwhile: {exc}", path=str(path)
            ) from None
        return
    _copy_root_last(root, path)


def _copy_root_last(root: Location, path: Location) -> None:
    """Publish by copies, the root ``zarr.json`` last and create-only (object storage)."""
    store = path.store
    marker = root / "zarr.json"
    for key in store.keys(root.key):
        if key != marker.key:
            store.copy(key, path.key + key[len(root.key) :])
    try:
        store.put((path / "zarr.json").key, marker.read_bytes(), mode="create")
    except PreconditionFailed_:
        raise AlreadyExists("a record appeared at this path meanwhile", path=str(path)) from None


#: The hidden key marking an unborn record (a name, and meta, with no root yet) inside its prefix.
UNBORN: Final = ".unborn.json"
#: How long a birth waits for another birth of the same record to finish.
_BIRTH_WAIT: Final = 30.0


def _publish_over_marker(root: Location, path: Location, staging: Location) -> None:
    """Publish the staged ``root`` into ``path``, which holds an unborn marker.

    Under the writer lease on ``path`` (births of one record serialize; on
    object storage the create-only root put decides): the sections move in
    first, the root ``zarr.json`` last and create-only, then the marker goes.
    """
    store = path.store
    with store.writer_lease(path.key, wait=_BIRTH_WAIT):
        if (path / "zarr.json").is_file():
            raise AlreadyExists("the record was created meanwhile", path=str(path))
        if not (path / UNBORN).is_file():
            raise NotFound("the unborn record was deleted", path=str(path))
        dirs, files = store.list_dir(path.key)
        for entry in [*dirs, *files]:  # leftovers of a birth that died before its root
            if not entry.startswith("."):
                store.delete_prefix((path / entry).key)
                store.delete((path / entry).key)
        dirs, files = store.list_dir(root.key)
        for entry in [*dirs, *files]:
            if not entry.startswith(".") and entry != "zarr.json":
                store.rename((root / entry).key, (path / entry).key)
        try:
            store.put(
                (path / "zarr.json").key,
                (root / "zarr.json").read_bytes(),
                mode="create",
                durable=True,
            )
        except PreconditionFailed_:
            raise AlreadyExists("the record was created meanwhile", path=str(path)) from None
    store.delete((path / UNBORN).key)
    staging.store.delete_prefix(staging.key)


def build_record(
    path: Location,
    meta: Mapping[str, Any],
    sections: Sequence[tuple[str, SectionWriter]],
    *,
    overwrite: bool = False,
    before_publish: Callable[[Location], None] | None = None,
    unborn: bool = False,
) -> None:
    """Build a record under a staging prefix and rename it to ``path``.

    The root ``zarr.json`` and ``meta/`` are written first, then each section
    in order (storage.md §4.1); ``before_publish`` may add more (the
    trajectory) to the staged root, which carries the final name. With
    ``unborn`` the record's prefix holds the :data:`UNBORN` marker: the
    sections move in beside it, the root last, and the marker is removed.
    """
    if record_kind(path) != "dir":
        raise InvalidRecord(
            f"a record is created as a {BRAND!r} directory; pack it to get a zip", path=str(path)
        )
    if path.exists() and not overwrite and not unborn:
        raise AlreadyExists("a record already exists at this path", path=str(path))
    staging = _staging_key(path, "new")
    try:
        root = staging / path.name
        write_group_json(root, {})
        write_group_json(root / "meta", meta)
        for name, writer in sections:
            writer(root / name)
        if before_publish is not None:
            before_publish(root)
        if unborn:
            _publish_over_marker(root, path, staging)
        else:
            _publish(root, path, staging, overwrite)
    finally:
        staging.store.delete_prefix(staging.key)
