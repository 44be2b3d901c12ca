"""Packing a closed ``*.mrec`` directory into ``*.mrec.zip`` (chunking.md §7).

One **stored** entry (compression method 0) per file of the directory store,
named by its ``/``-separated path relative to the record root; no directory
entries; ZIP64 whenever a size, offset or entry count needs it. An entry read
out is bit-identical to the file it replaces.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from ...errors import AlreadyExists, InvalidRecord
from ._layout import ZIP_BRAND
from ._record import record_kind

__all__ = ["pack_directory", "packed_name"]


def packed_name(source: Path) -> Path:
    """``<stem>.mrec`` -> ``<stem>.mrec.zip`` beside it."""
    return source.with_name(source.name + ".zip")


def _files(root: Path) -> Iterator[tuple[Path, str]]:
    for directory, subdirs, files in os.walk(root):
        subdirs.sort()
        for name in sorted(files):
            path = Path(directory, name)
            yield path, path.relative_to(root).as_posix()


def pack_directory(source: Path, dest: Path | None = None, *, overwrite: bool = False) -> Path:
    """Pack the record directory ``source`` into ``dest`` (default ``<source>.zip``).

    The archive is written to a temporary file beside ``dest`` and renamed, so
    a failed pack leaves nothing behind.

    Raises
    ------
    InvalidRecord
        ``source`` is not a ``*.mrec`` directory with a root ``zarr.json``, or
        ``dest`` does not end in ``.mrec.zip``.
    AlreadyExists
        ``dest`` exists and ``overwrite`` is false.
    """
    if record_kind(source) != "dir" or not (source / "zarr.json").is_file():
        raise InvalidRecord(
            "only a live *.mrec record directory can be packed (chunking.md §7)", path=str(source)
        )
    dest = packed_name(source) if dest is None else dest
    if not dest.name.endswith(ZIP_BRAND) or len(dest.name) == len(ZIP_BRAND):
        raise InvalidRecord(
            f"a packed record is named <stem>{ZIP_BRAND} (chunking.md §7)", path=str(dest)
        )
    if dest.exists() and not overwrite:
        raise AlreadyExists("the archive already exists", path=str(dest))
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(
            tmp_name, "w", compression=zipfile.ZIP_STORED, allowZip64=True, strict_timestamps=False
        ) as archive:
            for path, name in _files(source):
                archive.write(path, arcname=name, compress_type=zipfile.ZIP_STORED)
        os.replace(tmp_name, dest)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return dest
