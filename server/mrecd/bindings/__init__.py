"""Layouts of records on storage: the Zarr V3 record binding and the LMDB collection binding.

The only modules that import zarr and lmdb.
"""
