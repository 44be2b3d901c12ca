"""Reading and atomically replacing ``zarr.json`` documents through the store seam."""

from __future__ import annotations

from ...storage import read_json, write_json

__all__ = ["read_json", "write_json_atomic"]

#: Replace a ``zarr.json`` whole (``durable``: fsynced where the store can).
write_json_atomic = write_json
