"""The molrec record model: pure values (numpy + pydantic), no I/O.

Containers (frame.md): :class:`Column`, :class:`Block`, :class:`Frame`,
:class:`Box`; the trajectory declaration (trajectory.md §8):
:class:`Declaration`; typed meta values and declared precision.

:class:`~mrecd.Record` holds a force field, which builds on this package, so
it lives above both (``mrecd.Record``); ``mrecd.model.Record`` still resolves
to it, loaded on first use, and imports nothing from here at import time.
"""

from typing import TYPE_CHECKING, Any

from ._block import ENDPOINTS, Block, check_target
from ._box import Box
from ._cells import box_updates_from_dict, box_updates_to_dict
from ._column import Column
from ._declaration import (
    RESERVED_BLOCK_NAMES,
    RESERVED_COLUMN_NAMES,
    BlockSpec,
    ColumnSpec,
    Declaration,
    MetaSpec,
)
from ._documents import (
    MOLREC_VERSION,
    check_collection_meta,
    check_method,
    check_molrec_version,
    check_record_meta,
    check_status,
    check_units,
    parse_unit,
    stamp_meta,
)
from ._dtypes import (
    CANONICAL,
    CANONICAL_META,
    DTYPE_OF_ZARR,
    DTYPES,
    STRING_DTYPE,
    ZARR_DATA_TYPE,
    Dtype,
    as_column_array,
    canonical_dtype,
    check_dtype_name,
    dtype_of,
    numpy_dtype,
)
from ._frame import (
    META_TYPES_KEY,
    Frame,
    check_block_targets,
    check_frame_targets,
    decode_meta_document,
)
from ._inputs import FRAME_KEYS, frame_input, index_rows
from ._lazy import LazyFrames
from ._metrics import (
    MetricEvent,
    MetricSeries,
    complete_lines,
    decode_safe_name,
    densifiable,
    encode_event,
    make_event,
    merge_series,
    now_rfc3339,
    parse_wal,
    safe_name,
    wal_lines,
)
from ._observables import (
    OBSERVABLE_KINDS,
    Observable,
    check_observable_meta,
    check_observable_name,
    check_observable_shape,
)
from ._precision import PRECISION_MAX, PRECISION_MIN, check_precision, on_grid, quantize, quantum
from ._sequence import SequenceState, Update, check_system_alignment
from ._series import series_array
from ._typed import (
    META_TAGS,
    TAG_LAYOUT,
    MetaTag,
    check_tag,
    coerce_element,
    coerce_meta,
    decode_element,
    decode_meta,
    dumps_strict,
    encode_element,
    encode_meta,
    finite_json,
    infer_tag,
    loads_strict,
    meta_equal,
    read_untagged,
)

__all__ = [
    "CANONICAL",
    "CANONICAL_META",
    "DTYPES",
    "DTYPE_OF_ZARR",
    "ENDPOINTS",
    "FRAME_KEYS",
    "META_TAGS",
    "META_TYPES_KEY",
    "MOLREC_VERSION",
    "OBSERVABLE_KINDS",
    "PRECISION_MAX",
    "PRECISION_MIN",
    "RESERVED_BLOCK_NAMES",
    "RESERVED_COLUMN_NAMES",
    "STRING_DTYPE",
    "TAG_LAYOUT",
    "ZARR_DATA_TYPE",
    "Block",
    "BlockSpec",
    "Box",
    "Column",
    "ColumnSpec",
    "Declaration",
    "Dtype",
    "Frame",
    "LazyFrames",
    "MetaSpec",
    "MetaTag",
    "MetricEvent",
    "MetricSeries",
    "Observable",
    "SequenceState",
    "Update",
    "as_column_array",
    "box_updates_from_dict",
    "box_updates_to_dict",
    "canonical_dtype",
    "check_block_targets",
    "check_collection_meta",
    "check_dtype_name",
    "check_frame_targets",
    "check_method",
    "check_molrec_version",
    "check_observable_meta",
    "check_observable_name",
    "check_observable_shape",
    "check_precision",
    "check_record_meta",
    "check_status",
    "check_system_alignment",
    "check_tag",
    "check_target",
    "check_units",
    "coerce_element",
    "coerce_meta",
    "complete_lines",
    "decode_element",
    "decode_meta",
    "decode_meta_document",
    "decode_safe_name",
    "densifiable",
    "dtype_of",
    "dumps_strict",
    "encode_element",
    "encode_event",
    "encode_meta",
    "finite_json",
    "frame_input",
    "index_rows",
    "infer_tag",
    "loads_strict",
    "make_event",
    "merge_series",
    "meta_equal",
    "now_rfc3339",
    "numpy_dtype",
    "on_grid",
    "parse_unit",
    "parse_wal",
    "quantize",
    "quantum",
    "read_untagged",
    "safe_name",
    "series_array",
    "stamp_meta",
    "wal_lines",
]

# Moved above the model (mrecd._record) to break the model <-> forcefield cycle;
# still resolvable here, lazily, for code written against the old home.
_MOVED = frozenset({"Record", "SUBSTANTIVE_SECTIONS"})

if TYPE_CHECKING:
    from .._record import SUBSTANTIVE_SECTIONS as SUBSTANTIVE_SECTIONS
    from .._record import Record as Record


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from .. import _record

        return getattr(_record, name)
    raise AttributeError(f"module 'mrecd.model' has no attribute {name!r}")
