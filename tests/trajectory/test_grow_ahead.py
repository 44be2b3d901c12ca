"""Column shapes published a shard ahead between durable commits (trajectory.md §3.1).

An automatic commit whose rows fit the shape a column already published leaves
its ``zarr.json`` alone; readers read every array to its logical length, so the
store means the same. Durable commits and closes state exact lengths, and index
arrays (read by their leading entries) never grow ahead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mrecd.api._trajectory import open_trajectory
from mrecd.bindings.zarr._codecs import inner_codecs
from mrecd.bindings.zarr._shard import ArrayAppender, ArrayLayout, ArrayReader
from mrecd.bindings.zarr._tree import Tree
from mrecd.storage import DirectoryStore, Location

from .conftest import atoms, frame


def _shape(array: Path) -> int:
    return int(json.loads((array / "zarr.json").read_text())["shape"][0])


def _appender(tmp_path: Path, *, grow_ahead: bool) -> ArrayAppender:
    layout = ArrayLayout("u64", (), 2, 6, tuple(inner_codecs("u64", dense=True)))
    return ArrayAppender(Location(DirectoryStore(tmp_path), "a"), layout, grow_ahead=grow_ahead)


def _commit(appender: ArrayAppender, rows: int, *, exact: bool) -> dict[str, Any] | None:
    """Append ``rows`` rows and commit them on this thread, then check that every row so far
    reads back from disk within the published shape; the metadata the commit published."""
    appender.append(np.arange(appender.length, appender.length + rows, dtype=np.uint64))
    commit = appender.prepare(exact=exact)
    if commit is None:
        raise AssertionError("a commit with pending rows has chunks to write")
    commit.encode_range(0, len(commit.jobs))
    commit.write()
    document = json.loads((Path(os.fspath(appender.path)) / "zarr.json").read_text())
    reader = ArrayReader(Tree(appender.path.as_store()), "", document)
    np.testing.assert_array_equal(
        reader.read(0, appender.length), np.arange(appender.length, dtype=np.uint64)
    )
    reader.close()
    return commit.metadata


def test_an_array_growing_ahead_publishes_shard_ends_until_an_exact_commit(
    tmp_path: Path,
) -> None:
    appender = _appender(tmp_path, grow_ahead=True)
    assert _commit(appender, 4, exact=False) is not None
    assert _shape(tmp_path / "a") == 6  # the end of the shard row 4 falls in
    assert _commit(appender, 2, exact=False) is None  # 6 rows fit: zarr.json untouched
    assert _shape(tmp_path / "a") == 6
    _commit(appender, 1, exact=False)
    assert _shape(tmp_path / "a") == 12
    trim = appender.prepare(exact=True)  # nothing pending, but the shape is ahead
    assert trim is not None and trim.jobs == [] and trim.metadata is not None
    trim.write()
    assert _shape(tmp_path / "a") == 7
    assert appender.prepare(exact=True) is None  # exact already: nothing to write
    appender.close()


def test_an_array_not_growing_ahead_states_every_length(tmp_path: Path) -> None:
    appender = _appender(tmp_path, grow_ahead=False)
    for rows, total in ((4, 4), (2, 6), (1, 7)):
        assert _commit(appender, rows, exact=False) is not None
        assert _shape(tmp_path / "a") == total
    appender.close()


def test_merged_commits_keep_the_last_shape_stated(tmp_path: Path) -> None:
    """Commits written as one (a committer fallen behind) publish the latest shape any stated."""
    appender = _appender(tmp_path, grow_ahead=True)
    appender.append(np.arange(4, dtype=np.uint64))
    first = appender.prepare(exact=False)
    appender.append(np.arange(4, 5, dtype=np.uint64))
    second = appender.prepare(exact=False)
    assert first is not None and second is not None and second.metadata is None
    for commit in (first, second):
        commit.encode_range(0, len(commit.jobs))
    merged = first.then(second)
    assert merged.metadata is first.metadata
    merged.write()
    assert _shape(tmp_path / "a") == 6
    appender.close()


@pytest.mark.directory_only
def test_automatic_commits_leave_column_metadata_alone_while_rows_fit(root: Path) -> None:
    traj = open_trajectory(root, flush_every=2)
    for i in range(4):
        blocks: dict[str, Any] = {"atoms": atoms(4, i)}
        if i % 2 == 0:  # an indexed block: its step_index and offset stay exact
            blocks["sites"] = {"atomi": np.arange(i, i + 3, dtype=np.uint64)}
        traj.append(frame(i, blocks=blocks))
    assert traj.nstep == 4  # waits for the commits in flight
    assert traj._writer is not None
    shard_rows = traj._writer.blocks["atoms"].columns["x"].layout.shard_rows
    x = root / "trajectory" / "atoms" / "x"
    assert _shape(x) == shard_rows > 16
    inode = (x / "zarr.json").stat().st_ino
    traj.append(
        frame(4, blocks={"atoms": atoms(4, 4), "sites": {"atomi": np.arange(3, dtype=np.uint64)}})
    )
    traj.append(frame(5, blocks={"atoms": atoms(4, 5)}))
    assert traj.nstep == 6
    assert (x / "zarr.json").stat().st_ino == inode  # not replaced: the rows fit
    sites = root / "trajectory" / "sites"
    assert _shape(sites / "step_index") == 3 and _shape(sites / "offset") == 4
    reader = open_trajectory(root)  # a reader of the live store reads logical lengths
    assert len(reader) == 6
    np.testing.assert_array_equal(reader[5]["atoms"]["x"].values, atoms(4, 5)["x"])
    np.testing.assert_array_equal(reader[5]["sites"]["atomi"].values, np.arange(3))
    traj.close()
    assert _shape(x) == 24  # a close is durable: exact lengths
    assert _shape(sites / "atomi") == 9


@pytest.mark.directory_only
def test_a_killed_writer_leaves_shapes_ahead_that_reopen_trims(root: Path) -> None:
    """A writer killed between automatic commits; the reopen rule trims the columns."""
    script = textwrap.dedent(
        f"""
        import os, numpy as np, mrecd
        from mrecd.api._trajectory import open_trajectory
        traj = open_trajectory({str(root)!r}, flush_every=3)
        for i in range(7):
            x = np.arange(4, dtype=np.float64) + i
            traj.append(mrecd.Frame({{"atoms": {{"x": x, "y": x, "z": x}}}}, step=i))
        assert traj.nstep == 6
        os._exit(0)  # no close: the last automatic commit stays as it landed
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    x = root / "trajectory" / "atoms" / "x"
    assert _shape(x) > 24
    again = open_trajectory(root)
    assert len(again) == 6
    again.append(frame(6, blocks={"atoms": atoms(4, 6)}))
    again.close()
    assert _shape(x) == 28
    reread = open_trajectory(root)
    assert [reread[i].step for i in range(7)] == list(range(7))
    np.testing.assert_array_equal(reread[6]["atoms"]["x"].values, atoms(4, 6)["x"])


def test_a_live_reader_follows_commits_inside_a_shard_grown_ahead(root: Path) -> None:
    """The reader caches what it read of a shard whose zarr.json no commit rewrites; after a
    refresh it still finds the frames committed into that shard since."""
    writer = open_trajectory(root, flush_every=2)
    for i in range(2):
        writer.append(frame(i, blocks={"atoms": atoms(4, i)}))
    assert writer.nstep == 2
    reader = open_trajectory(root)
    np.testing.assert_array_equal(reader[1]["atoms"]["x"].values, atoms(4, 1)["x"])
    for i in range(2, 6):
        writer.append(frame(i, blocks={"atoms": atoms(4, i)}))
    assert writer.nstep == 6
    assert reader.refresh() == 6
    for i in range(6):
        np.testing.assert_array_equal(reader[i]["atoms"]["z"].values, atoms(4, i)["z"])
    writer.close()
