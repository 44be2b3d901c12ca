"""Archiving a closed record: the trajectory re-cut into dense multi-frame chunks."""

from __future__ import annotations

from os import PathLike

from ..bindings.zarr import ArchiveOptions
from ..bindings.zarr import archive_record as _archive
from ..storage import Location, location_of

__all__ = ["archive_record"]


def archive_record(
    source: str | PathLike[str] | Location,
    dest: str | PathLike[str] | Location | None = None,
    *,
    frames_per_chunk: int | None = None,
    level: int = 19,
    overwrite: bool = False,
) -> Location:
    """Write a denser copy of the closed record directory ``source`` for archive.

    Every sharded array under ``trajectory/`` is re-cut into inner chunks of
    ``frames_per_chunk`` live chunks (by default about 4 MiB of raw values
    each) and encoded with byte shuffle and zstd at ``level``; everything else
    is copied as is. The archive holds the same values bit for bit, validates
    like its source, and still reads frame ``i`` with range reads of one
    shard index and one chunk per column.

    Parameters
    ----------
    source
        A ``*.mrec`` directory that no writer holds.
    dest
        A ``*.mrec.zip`` (default ``<source>.zip`` beside it) or a ``*.mrec`` directory.
    frames_per_chunk
        Live inner chunks (frames, for one-frame chunks) per archived chunk.
    level
        zstd level, 1-22.
    overwrite
        Replace an existing ``dest``.

    Returns
    -------
    Location
        Where the archive was written.

    Raises
    ------
    InvalidRecord
        ``source`` is not a record directory, ``dest`` is misnamed, or an
        option is out of range.
    AlreadyExists
        ``dest`` exists and ``overwrite`` is false.
    WriterBusy
        A writer holds the source trajectory.

    Examples
    --------
    >>> import mrecd
    >>> mrecd.archive_record("data/adk.mrec", "archive/adk.mrec.zip")  # doctest: +SKIP
    """
    options = ArchiveOptions(frames_per_chunk=frames_per_chunk, level=level)
    return _archive(
        location_of(source),
        None if dest is None else location_of(dest),
        options,
        overwrite=overwrite,
    )
