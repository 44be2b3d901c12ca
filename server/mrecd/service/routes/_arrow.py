"""A block as an Arrow IPC stream (``application/vnd.apache.arrow.stream``), for pandas / polars.

pyarrow is optional (the ``arrow`` extra): without it the routes do not
offer Arrow and ``Accept`` naming only Arrow is a 406 listing what is offered.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from typing import Any, Final

import numpy as np

from ...model import Block, Column

__all__ = ["ARROW", "arrow_available", "arrow_stream"]

ARROW: Final = "application/vnd.apache.arrow.stream"


@cache
def arrow_available() -> bool:
    """Whether pyarrow can be imported here."""
    return importlib.util.find_spec("pyarrow") is not None


def _array(column: Column) -> Any:
    """One column as an Arrow array: trailing dimensions as fixed-size lists, nulls kept."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    values = column.values
    if column.dtype == "string":
        flat = pa.array(values.reshape(-1).astype(str).tolist(), type=pa.string())
    elif column.dtype in ("c64", "c128"):  # Arrow has no complex type: (re, im) pairs
        pairs = np.ascontiguousarray(values).view(values.real.dtype).reshape(-1)
        flat = pa.FixedSizeListArray.from_arrays(pa.array(pairs), 2)
    else:
        flat = pa.array(np.ascontiguousarray(values).reshape(-1))
    for width in reversed(column.trailing):
        flat = pa.FixedSizeListArray.from_arrays(flat, width)
    validity = column.validity
    if validity is not None:
        mask = pa.array(~np.asarray(validity, dtype=bool))
        flat = pc.if_else(mask, pa.scalar(None, type=flat.type), flat)
    return flat


def arrow_stream(block: Block) -> bytes:
    """``block`` as the bytes of an Arrow IPC stream (one record batch, one column per column)."""
    import pyarrow as pa

    table = pa.table({name: _array(column) for name, column in block.items()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())
