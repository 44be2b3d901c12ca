"""One record root on disk: recognising it, building it, replacing its sections.

Writes never leave a half-written store behind: a new record is built in a
staging directory beside its final path and renamed into place; a section of
a live record is written beside the root and swapped in by two renames (the
spec gives no concurrent-reader guarantee on a live store, chunking.md §2.1).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...errors import AlreadyExists, InvalidRecord, NotFound, ReadOnlyError
from ...model import Block, Box
from ._carry import carried_extras, copy_unknown, copy_unknown_document
from ._frames import SectionParts, Sink, read_section_parts, write_group_json, write_section
from ._layout import BRAND, ZIP_BRAND
from ._tree import DirTree, Node, Tree, ZipTree

__all__ = ["RecordStore", "SectionWriter", "build_record", "record_kind"]

#: Writes one section into the (not yet existing) directory it is given.
SectionWriter = Callable[[Path], None]


def record_kind(path: Path) -> str:
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


class RecordStore:
    """The binding's handle on one record: a tree to read, and section writes for a live root.

    Parameters
    ----------
    path
        The ``*.mrec`` directory or ``*.mrec.zip`` file.
    writable
        Whether section writes are allowed (never for a zip).
    """

    def __init__(self, path: Path, *, writable: bool) -> None:
        kind = record_kind(path)
        if not path.exists():
            raise NotFound("no record at this path", path=str(path))
        if kind == "zip":
            if writable:
                raise ReadOnlyError(
                    "a packed *.mrec.zip is read-only (chunking.md §7)", path=str(path)
                )
            if not path.is_file():
                raise InvalidRecord(
                    "a packed record is a zip file, not a directory", path=str(path)
                )
            self.tree: Tree = ZipTree(path)
        else:
            if not path.is_dir():
                raise InvalidRecord("a live record is a directory (storage.md §1)", path=str(path))
            self.tree = DirTree(path)
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
    def _staging(self, name: str) -> Iterator[Path]:
        staging = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.{name}.", dir=self.path.parent))
        try:
            yield staging
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def replace(self, name: str, writer: SectionWriter) -> None:
        """Write section ``name`` beside the root, then swap it in for the old one (if any)."""
        self._check_writable()
        with self._staging(name) as staging:
            new = staging / name
            writer(new)
            current = self.path / name
            if current.exists():
                os.rename(current, staging / ".replaced")
            os.rename(new, current)

    def replace_document(self, name: str, document: Mapping[str, Any]) -> None:
        """Replace document section ``name``; unknown entries under the old group are kept."""

        def writer(new: Path) -> None:
            write_group_json(new, document)
            copy_unknown_document(self.path / name, new)

        self.replace(name, writer)

    def replace_frame_shaped(
        self, name: str, attributes: Mapping[str, Any], blocks: Mapping[str, Block], box: Box | None
    ) -> None:
        """Replace frame-shaped section ``name``, carrying the old group's unknown content."""

        def writer(new: Path) -> None:
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
            os.rename(current, staging / ".deleted")


def frame_section_writer(
    attributes: Mapping[str, Any], blocks: Mapping[str, Block], box: Box | None
) -> SectionWriter:
    """A writer laying a frame-shaped group into a fresh directory."""
    return lambda new: write_section(new, attributes, blocks, box)


def document_writer(document: Mapping[str, Any]) -> SectionWriter:
    """A writer laying a document group into a fresh directory."""
    return lambda new: write_group_json(new, document)


def _publish(root: Path, path: Path, staging: Path, overwrite: bool) -> None:
    if path.exists() or path.is_symlink():
        if not overwrite:
            raise AlreadyExists("a record already exists at this path", path=str(path))
        if not (path.is_dir() and (path / "zarr.json").is_file()):
            # overwrite replaces a record, never an arbitrary file or directory
            raise AlreadyExists(
                "the path exists and is not a record; refusing to replace it", path=str(path)
            )
        os.rename(path, staging / ".replaced")
    try:
        os.rename(root, path)
    except OSError as exc:  # another creator won the race
        raise AlreadyExists(
            f"a record appeared at this path meanwhile: {exc}", path=str(path)
        ) from None


def build_record(
    path: Path,
    meta: Mapping[str, Any],
    sections: Sequence[tuple[str, SectionWriter]],
    *,
    overwrite: bool = False,
    before_publish: Callable[[Path], None] | None = None,
) -> None:
    """Build a record in a staging directory and rename it to ``path``.

    The root ``zarr.json`` and ``meta/`` are written first, then each section
    in order (storage.md §4.1); ``before_publish`` may add more (the
    trajectory) to the staged root, which carries the final name.
    """
    if record_kind(path) != "dir":
        raise InvalidRecord(
            f"a record is created as a {BRAND!r} directory; pack it to get a zip", path=str(path)
        )
    if path.exists() and not overwrite:
        raise AlreadyExists("a record already exists at this path", path=str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        root = staging / path.name
        write_group_json(root, {})
        write_group_json(root / "meta", meta)
        for name, writer in sections:
            writer(root / name)
        if before_publish is not None:
            before_publish(root)
        _publish(root, path, staging, overwrite)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
