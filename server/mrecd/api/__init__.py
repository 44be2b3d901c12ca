"""The local API (sync): records, catalogs, trajectories, collections, packing, validation.

:func:`create_record` / :func:`open_record` work on one record root at an
exact path; :func:`open` returns a :class:`Catalog` of many records (and
collections) in one root; :func:`create_collection` / :func:`open_collection`
work on one ``*.mrec.lmdb`` file. Every call blocks the calling thread; the
service runs them on worker threads.
"""

from ..storage import ByteRange, ByteRequest, ObjectInfo, Offset, Suffix
from ._archive import archive_record
from ._catalog import Catalog, check_record_name
from ._catalog import open_catalog as open
from ._collection import (
    Collection,
    CollectionTrajectory,
    RecordOutOfRange,
    create_collection,
    load_collection,
    open_collection,
)
from ._protocols import FrameSlice, TrajectoryLike
from ._record import StoredRecord, create_record, open_record, pack_record
from ._runsurface import HostMetrics, host_metric_stems, open_host_metrics
from ._snapshots import SnapshotCollection, publish_collection
from ._stored_reads import StoredParts, read_stored
from ._trajectory import Appended, Producer, Trajectory, collect_trajectory_garbage
from ._validate import validate_record
from ._violations import Violation

__all__ = [
    "Appended",
    "ByteRange",
    "ByteRequest",
    "Catalog",
    "Collection",
    "CollectionTrajectory",
    "FrameSlice",
    "HostMetrics",
    "ObjectInfo",
    "Offset",
    "Producer",
    "RecordOutOfRange",
    "SnapshotCollection",
    "StoredParts",
    "StoredRecord",
    "Suffix",
    "Trajectory",
    "TrajectoryLike",
    "Violation",
    "archive_record",
    "check_record_name",
    "collect_trajectory_garbage",
    "create_collection",
    "create_record",
    "host_metric_stems",
    "load_collection",
    "open",
    "open_collection",
    "open_host_metrics",
    "open_record",
    "pack_record",
    "publish_collection",
    "read_stored",
    "validate_record",
]
