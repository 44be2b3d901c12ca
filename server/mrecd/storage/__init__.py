"""The storage seam: a bytes-only :class:`Store` and its implementations.

The Zarr binding reads and writes records only through a :class:`Store`;
this package is the only one that touches the file system, ``fcntl`` or
obstore. Stores:

* :class:`DirectoryStore`: a local directory (the embedded default), with
  positional writes (a shard grows at its tail), atomic renames, fsync.
* :class:`MemoryStore`: RAM, the same capabilities (``memory://name``).
* :class:`ObjectStore`: S3, GCS, Azure through obstore (``s3://``, ``gs://``,
  ``az://``): whole-object puts, conditional on ETags.
* :class:`ZipStore`: a packed ``*.mrec.zip`` object of another store, read in place.
* :class:`CountingStore`: any store, with its requests and bytes counted per verb.

:func:`open_store` turns a URL or path into a store; :func:`push` and
:func:`pull` copy a closed record between stores (a bucket and a directory);
:func:`publish_snapshot` publishes one local file (a collection) as a
snapshot that a :class:`SnapshotCache` fetches, verifies and revalidates.
"""

from ._base import (
    ByteRange,
    ByteRequest,
    IfMatch,
    ObjectInfo,
    Offset,
    PositionalFile,
    PutMode,
    RangeReader,
    Revalidated,
    Store,
    Suffix,
    WriterLease,
    check_key,
    join_key,
    live_tail_grace,
)
from ._counting import CountingStore, VerbCount
from ._directory import DirectoryStore, FileRangeReader, fsync_directory
from ._location import Location, dumps_json, location_of, read_json, write_json
from ._memory import MemoryStore, drop_memory_store, memory_store
from ._snapshot import (
    DEFAULT_PART_SIZE,
    CachedSnapshot,
    Manifest,
    SnapshotCache,
    SnapshotPart,
    publish_snapshot,
    published_snapshots,
)
from ._transfer import pull, push
from ._url import open_store
from ._zip import ZipStore

__all__ = [
    "DEFAULT_PART_SIZE",
    "ByteRange",
    "ByteRequest",
    "CachedSnapshot",
    "CountingStore",
    "DirectoryStore",
    "FileRangeReader",
    "IfMatch",
    "Location",
    "Manifest",
    "MemoryStore",
    "ObjectInfo",
    "Offset",
    "PositionalFile",
    "PutMode",
    "RangeReader",
    "Revalidated",
    "SnapshotCache",
    "SnapshotPart",
    "Store",
    "Suffix",
    "VerbCount",
    "WriterLease",
    "ZipStore",
    "check_key",
    "drop_memory_store",
    "dumps_json",
    "fsync_directory",
    "join_key",
    "live_tail_grace",
    "location_of",
    "memory_store",
    "open_store",
    "publish_snapshot",
    "published_snapshots",
    "pull",
    "push",
    "read_json",
    "write_json",
]
