"""Pure array<->bytes functions: MRF1 frame bytes (and, with the bindings, Zarr codec pipelines)."""

from ._mrf1 import MAGIC, decode_blocks, decode_frame, encode_blocks, encode_frame, plain_document

__all__ = [
    "MAGIC",
    "decode_blocks",
    "decode_frame",
    "encode_blocks",
    "encode_frame",
    "plain_document",
]
