"""Extents (chunking.md §4.1, §6): the reference formula, and mrecd's one-page shard index."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mrecd.api._trajectory import open_trajectory
from mrecd.bindings.zarr._extents import (
    MAX_CHUNKS_PER_SHARD,
    REFERENCE_MAX_CHUNKS_PER_SHARD,
    block_rows_per_chunk,
    chunks_per_shard,
    flush_every,
    row_bytes,
)

from .conftest import atoms, frame


@pytest.mark.parametrize(
    ("frame_rows", "widths", "rows", "per_shard", "shard_rows"),
    [  # the table of chunking.md §4.1 (reference cap 4096)
        (4, [8], 2048, [4096], 8388608),
        (5, [8, 16], 2050, [4096, 4096], 8396800),
        (3, [8], 2049, [4096], 8392704),
        (5, [16], 1025, [4096], 4198400),
        (1, [8], 2048, [4096], 8388608),
        (100000, [8], 100000, [335], 33500000),
    ],
)
def test_reference_extents_table(frame_rows, widths, rows, per_shard, shard_rows) -> None:
    got = block_rows_per_chunk(frame_rows, min(widths))
    assert got == rows
    cap = REFERENCE_MAX_CHUNKS_PER_SHARD
    assert [chunks_per_shard(got, w, cap=cap) for w in widths] == per_shard
    assert got * chunks_per_shard(got, widths[0], cap=cap) == shard_rows


def test_row_bytes_and_empty_first_update() -> None:
    assert row_bytes("string", ()) == 16 and row_bytes("f64", (3, 3)) == 72
    assert block_rows_per_chunk(0, 8) == 2048  # floor(16384 / 8)


def test_flush_cadence() -> None:
    """4 atoms x 3 f64 (96 B/frame), 512 frames per chunk: ceil(4 MiB / 96) -> 44032 -> 4096."""
    assert flush_every(96, 512) == 4096
    assert flush_every(72000, 1) == 59  # 3000 atoms x 3 f64


@pytest.mark.directory_only
def test_shard_index_fits_one_page(root: Path) -> None:
    assert 16 * MAX_CHUNKS_PER_SHARD + 4 <= 4096
    traj = open_trajectory(root)
    for i in range(3):
        traj.append(frame(i, blocks={"atoms": atoms(3, i)}))
    traj.close()
    for meta_path in (root / "trajectory").rglob("zarr.json"):
        meta = json.loads(meta_path.read_text())
        if meta["node_type"] != "array":
            continue
        conf = meta["codecs"][0]["configuration"]
        per_shard = meta["chunk_grid"]["configuration"]["chunk_shape"][0] // conf["chunk_shape"][0]
        assert conf["index_location"] == "start" and 16 * per_shard + 4 <= 4096, meta_path
        for shard in (meta_path.parent / "c").rglob("*"):
            if shard.is_file():
                assert shard.stat().st_size >= 16 * per_shard + 4
    assert np.isfinite(open_trajectory(root)[2]["atoms"]["x"].values).all()
