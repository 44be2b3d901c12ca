"""The Zarr V3 binding of a record (storage.md, trajectory.md, chunking.md)."""
