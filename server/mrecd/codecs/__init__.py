"""Pure array<->bytes functions: MRF1 frame bytes (and, with the bindings, Zarr codec pipelines)."""

from ._mrf1 import MAGIC, decode_blocks, decode_frame, encode_blocks, encode_frame, plain_document
from ._plain_system import plain_system
from ._records import (
    RECORDS,
    RecordItem,
    RecordStreamDecoder,
    StoredFrames,
    SystemCache,
    decode_records,
    encode_record,
    stored_record_parts,
)

__all__ = [
    "MAGIC",
    "RECORDS",
    "RecordItem",
    "RecordStreamDecoder",
    "StoredFrames",
    "SystemCache",
    "decode_blocks",
    "decode_frame",
    "decode_records",
    "encode_blocks",
    "encode_frame",
    "encode_record",
    "plain_document",
    "plain_system",
    "stored_record_parts",
]
