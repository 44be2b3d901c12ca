"""Packing a closed record into a ``*.mrec.zip`` (chunking.md §7).

Entries are stored (method 0), named relative to the root with ``/``, in
sorted order, ZIP64 when needed, with no directory entries and a fixed
timestamp (the same record packs to the same bytes). The archive is spooled
locally and put as one object, so a failed pack leaves nothing behind.
"""

from __future__ import annotations

import tempfile
import zipfile
from typing import IO

from ...errors import AlreadyExists, InvalidRecord
from ...storage import Location
from ._layout import ZIP_BRAND
from ._record import record_kind

__all__ = ["pack_directory", "packed_name"]

_SPOOL_IN_RAM = 64 << 20
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the zip format's earliest date


def packed_name(source: Location) -> Location:
    """``<stem>.mrec`` -> ``<stem>.mrec.zip`` beside it."""
    return source.with_name(source.name + ".zip")


def pack_directory(
    source: Location, dest: Location | None = None, *, overwrite: bool = False
) -> Location:
    """Pack the live record at ``source`` into ``dest`` (default ``<source>.zip`` beside it).

    Raises
    ------
    InvalidRecord
        ``source`` is not a ``*.mrec`` record with a root ``zarr.json``, or
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
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_RAM) as spool:
        _write_archive(source, spool)
        spool.seek(0)
        dest.store.put_file(dest.key, spool, durable=True)
    return dest


def _write_archive(source: Location, out: IO[bytes]) -> None:
    store = source.store
    cut = len(source.key) + 1
    with zipfile.ZipFile(
        out,
        "w",
        compression=zipfile.ZIP_STORED,
        allowZip64=True,
    ) as archive:
        for key in store.keys(source.key):
            data = store.get(key)
            if data is None:  # removed while packing: a closed record does not change
                raise InvalidRecord("an entry vanished while packing", path=key)
            info = zipfile.ZipInfo(key[cut:], date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
