"""mrecd: storage for molecular simulation records (the molrec format).

The record model (:class:`Frame`, :class:`Block`, :class:`Column`,
:class:`Box`, :class:`Declaration`), a record's content in memory
(:class:`Record`), force fields (:class:`ForceField`), declared precision (:func:`quantum`,
:func:`quantize`) and MRF1 frame bytes (:func:`encode_frame`,
:func:`decode_frame`) are importable from here, and so is the local API:
records at a path (:func:`create_record`, :func:`open_record`,
:class:`StoredRecord`, :func:`pack_record`, :func:`validate_record`) and the
catalog of many records (:func:`open` -> :class:`Catalog`). :func:`ingest`
reads a trajectory with MDAnalysis into a record (:mod:`mrecd.md`, with
``export`` and ``universe``).
"""

from typing import TYPE_CHECKING

from ._record import Record
from .codecs import decode_frame, encode_frame
from .errors import (
    AlreadyExists,
    FrameBytesError,
    InvalidRecord,
    MrecdError,
    NotFound,
    PermissionDenied,
    PreconditionFailed,
    ProducerFenced,
    ReadOnlyError,
    RecordOutOfRange,
    RetryableError,
    SequenceGap,
    StepOrderError,
    StoreUnavailable,
    UnsupportedVersion,
    WriterBusy,
)
from .forcefield import ForceField
from .model import (
    MOLREC_VERSION,
    Block,
    BlockSpec,
    Box,
    Column,
    ColumnSpec,
    Declaration,
    Frame,
    MetaSpec,
    Observable,
    on_grid,
    quantize,
    quantum,
)

__version__ = "0.1.0"

__all__ = [
    "MOLREC_VERSION",
    "AlreadyExists",
    "Block",
    "BlockSpec",
    "Box",
    "Column",
    "ColumnSpec",
    "Declaration",
    "ForceField",
    "Frame",
    "FrameBytesError",
    "InvalidRecord",
    "MetaSpec",
    "MrecdError",
    "NotFound",
    "Observable",
    "PermissionDenied",
    "PreconditionFailed",
    "ProducerFenced",
    "ReadOnlyError",
    "Record",
    "RecordOutOfRange",
    "RetryableError",
    "SequenceGap",
    "StepOrderError",
    "StoreUnavailable",
    "UnsupportedVersion",
    "WriterBusy",
    "__version__",
    "decode_frame",
    "encode_frame",
    "on_grid",
    "quantize",
    "quantum",
]

# The local API imports the storage bindings (zarr, lmdb): it loads on first use
# so that importing the model and codecs (as mrecd_client does) stays light.
if TYPE_CHECKING:
    from .api import (
        Catalog,
        Collection,
        HostMetrics,
        StoredRecord,
        Violation,
        archive_record,
        create_collection,
        create_record,
        host_metric_stems,
        open,
        open_collection,
        open_host_metrics,
        open_record,
        pack_record,
        validate_record,
    )
    from .md import ingest

__all__ += [
    "Catalog",
    "Collection",
    "HostMetrics",
    "StoredRecord",
    "Violation",
    "archive_record",
    "create_collection",
    "create_record",
    "host_metric_stems",
    "ingest",
    "open",
    "open_collection",
    "open_host_metrics",
    "open_record",
    "pack_record",
    "validate_record",
]


def __getattr__(name: str) -> object:
    # called only for names not yet in the module: the lazy local-API ones
    if name == "ingest":
        from .md import ingest

        return ingest
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'mrecd' has no attribute {name!r}")
