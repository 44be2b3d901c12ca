"""The Zarr V3 binding of a record (storage.md, trajectory.md, chunking.md).

Everything here reads and writes through a :class:`~mrecd.storage.Store`
(addressed by :class:`~mrecd.storage.Location`); this package and
:mod:`mrecd.bindings.lmdb` are the only importers of zarr and lmdb. This is
the face :mod:`mrecd.api` uses; the ``_`` modules behind it are private.
"""

from ._archive import ArchiveOptions, archive_record
from ._arrays import array_dtype, read_values
from ._frames import (
    SectionParts,
    Sink,
    check_blocks,
    frame_from_parts,
    rebase,
    typed_attributes,
)
from ._layout import BRAND, DOCUMENT_SECTIONS, FRAME_SECTIONS, SUBSTANTIVE, ZIP_BRAND
from ._metrics import (
    ClosedMetrics,
    WalAppender,
    closed_catalog,
    densified_writer,
    densify_plan,
    metrics_problems,
    read_closed,
    read_metrics,
    read_wal,
)
from ._object_live import Garbage, collect_garbage, writer_is_stale
from ._observables import (
    frame_axis_problems,
    observable_problems,
    observables_writer,
    read_observables,
)
from ._pack import pack_directory
from ._producers import Appended, Producer, ProducerTable
from ._record import (
    UNBORN,
    RecordStore,
    SectionWriter,
    build_record,
    document_writer,
    frame_section_writer,
    record_kind,
)
from ._trajectory_read import TrajectoryReader
from ._trajectory_write import TrajectoryWriter, create_trajectory_group
from ._tree import Node, Tree, join

__all__ = [
    "BRAND",
    "DOCUMENT_SECTIONS",
    "FRAME_SECTIONS",
    "SUBSTANTIVE",
    "UNBORN",
    "ZIP_BRAND",
    "Appended",
    "ArchiveOptions",
    "ClosedMetrics",
    "Garbage",
    "Node",
    "Producer",
    "ProducerTable",
    "RecordStore",
    "SectionParts",
    "SectionWriter",
    "Sink",
    "TrajectoryReader",
    "TrajectoryWriter",
    "Tree",
    "WalAppender",
    "archive_record",
    "array_dtype",
    "build_record",
    "check_blocks",
    "closed_catalog",
    "collect_garbage",
    "create_trajectory_group",
    "densified_writer",
    "densify_plan",
    "document_writer",
    "frame_axis_problems",
    "frame_from_parts",
    "frame_section_writer",
    "join",
    "metrics_problems",
    "observable_problems",
    "observables_writer",
    "pack_directory",
    "read_closed",
    "read_metrics",
    "read_observables",
    "read_values",
    "read_wal",
    "rebase",
    "record_kind",
    "typed_attributes",
    "writer_is_stale",
]
