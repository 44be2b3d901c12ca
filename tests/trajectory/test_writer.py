"""The writer's contract: commits, the reopen rule, one writer, batches, projections, interop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import mrecd
from mrecd.api._trajectory import Trajectory, create_trajectory, open_trajectory
from mrecd.bindings.zarr import _shard
from mrecd.bindings.zarr._tree import Tree
from mrecd.storage import DirectoryStore

from .conftest import atoms, attrs, frame, make_root, u64, write_attrs, xyz_declaration, zs


def snapshot(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def test_append_returns_length_and_reads_see_queued_frames(root: Path) -> None:
    traj = open_trajectory(root)
    assert traj.append(frame(0, blocks={"atoms": atoms(2)})) == 1
    assert traj.append(frame(1, blocks={"atoms": atoms(2, 1)})) == 2
    assert traj.nstep == 0 and len(traj) == 2  # queued, not yet committed
    assert traj[1].step == 1  # a read commits what is queued first
    assert traj.nstep == 2
    traj.close()


def test_automatic_flush_every_k(root: Path) -> None:
    traj = open_trajectory(root, flush_every=3)
    for i in range(7):
        traj.append(frame(i, blocks={"atoms": atoms(2, i)}))
        assert traj.nstep == (i + 1) // 3 * 3  # waits for the commit in flight
        assert attrs(root / "trajectory")["nstep"] == traj.nstep
    traj.close()
    assert attrs(root / "trajectory")["nstep"] == 7


def test_default_k_follows_the_spec_formula(root: Path) -> None:
    """4 atoms x 3 f64 = 96 B/frame, 512 frames per chunk: K = 4096 (chunking.md §6)."""
    traj = open_trajectory(root)
    traj.append(frame(0, blocks={"atoms": atoms(4)}))
    assert traj._writer is not None and traj._writer.k == 4096
    traj.close()


@pytest.mark.directory_only
def test_refused_frame_changes_nothing(root: Path) -> None:
    traj = open_trajectory(root)
    traj.append(frame(0, blocks={"atoms": atoms(2)}, meta={"pe": 1.0}))
    traj.flush()
    before = snapshot(root)
    bad = [
        frame(1, blocks={"bonds": {"atomi": u64(0)}}, meta={"pe": 1.0}),  # undeclared block
        frame(
            1, blocks={"atoms": {**atoms(2), "q": [1.0, 2.0]}}, meta={"pe": 1.0}
        ),  # undeclared column
        frame(1, blocks={"atoms": atoms(2)}, meta={"pe": 1.0, "ke": 2.0}),  # undeclared key
        frame(1, blocks={"atoms": atoms(2)}),  # omitted key without fill
        frame(0, blocks={"atoms": atoms(2)}, meta={"pe": 1.0}),  # repeated step
        frame(1, blocks={"atoms": {"x": [1.0], "y": [1.0]}}, meta={"pe": 1.0}),  # missing column
    ]
    for f in bad:
        with pytest.raises(mrecd.InvalidRecord):
            traj.append(f)
    traj.flush()
    assert len(traj) == 1
    after = snapshot(root)
    assert after == before


def test_extend_is_all_or_nothing(root: Path) -> None:
    traj = open_trajectory(root)
    traj.append(frame(0, blocks={"atoms": atoms(2)}))
    frames = [
        frame(1, blocks={"atoms": atoms(2, 1)}),
        frame(2, blocks={"atoms": atoms(2, 2)}),
        frame(2),
    ]
    with pytest.raises(mrecd.StepOrderError):
        traj.extend(frames)
    assert len(traj) == 1
    assert traj.extend(frames[:2]) == 3
    traj.close()
    assert [f.step for f in open_trajectory(root)] == [0, 1, 2]


@pytest.mark.directory_only
def test_one_writer_at_a_time(root: Path) -> None:
    first = open_trajectory(root)
    first.append(frame(0, blocks={"atoms": atoms(2)}))
    second = open_trajectory(root)
    with pytest.raises(mrecd.WriterBusy):
        second.append(frame(1, blocks={"atoms": atoms(2)}))
    script = textwrap.dedent(
        f"""
        import sys, mrecd
        from mrecd.api._trajectory import open_trajectory
        try:
            f = mrecd.Frame({{"atoms": {{"x": [0.0], "y": [0.0], "z": [0.0]}}}}, step=9)
            open_trajectory({str(root)!r}).append(f)
        except mrecd.WriterBusy:
            sys.exit(3)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    assert subprocess.run([sys.executable, "-c", script], env=env, check=False).returncode == 3
    first.close()
    second.append(frame(1, blocks={"atoms": atoms(2, 1)}))  # the lock is free again
    second.close()
    assert len(open_trajectory(root)) == 2


def test_readers_are_not_blocked_by_a_writer(root: Path) -> None:
    writer = open_trajectory(root, flush_every=1)
    writer.append(frame(0, blocks={"atoms": atoms(2)}))
    assert writer.nstep == 1  # commits land on the committer thread; nstep waits for them
    reader = open_trajectory(root)
    assert len(reader) == 1
    writer.append(frame(1, blocks={"atoms": atoms(2, 1)}))
    assert writer.nstep == 2
    assert len(reader) == 1 and reader.refresh() == 2
    assert reader[1].step == 1
    writer.close()


@pytest.mark.positional_only
def test_reopen_trims_uncommitted_tail(root: Path) -> None:
    """chunking.md §3: x holds 3 frames, nstep says 2: reopen shrinks x to 2N, frame 2 rewritten."""
    traj = open_trajectory(root)
    traj.append(frame(0, blocks={"atoms": atoms(4, 0)}))
    traj.append(frame(1, blocks={"atoms": atoms(4, 1)}))
    traj.flush()
    committed = json.loads((root / "trajectory" / "zarr.json").read_text())
    traj.append(frame(2, blocks={"atoms": atoms(4, 2)}))
    traj.close()
    assert zarr.open_array(zs(root / "trajectory" / "atoms" / "x")).shape == (12,)
    (root / "trajectory" / "zarr.json").write_text(
        json.dumps(committed)
    )  # the nstep replace never happened
    again = open_trajectory(root)
    assert len(again) == 2
    again.append(frame(2, blocks={"atoms": atoms(4, 7)}))  # the tail is trimmed before appending
    assert zarr.open_array(zs(root / "trajectory" / "atoms" / "x")).shape == (8,)
    again.close()
    assert zarr.open_array(zs(root / "trajectory" / "atoms" / "x")).shape == (12,)
    np.testing.assert_array_equal(open_trajectory(root)[2]["atoms"]["x"].values, atoms(4, 7)["x"])


def test_reopen_continues_every_series(root: Path) -> None:
    declaration = xyz_declaration(pe={"dtype": "f64"})
    declaration["blocks"]["bonds"] = {"columns": {"atomi": {"dtype": "u64", "trailing": []}}}
    create_trajectory(root, declaration)
    traj = open_trajectory(root)
    for i in range(3):
        blocks = {"atoms": atoms(3, i)}
        if i == 0:
            blocks["bonds"] = {"atomi": u64(0, 1)}
        traj.append(
            frame(
                10 * i,
                time=0.5 * i,
                blocks=blocks,
                meta={"pe": float(i)},
                box=mrecd.Box(np.eye(3) * 9),
            )
        )
    traj.close()
    traj = open_trajectory(root)
    traj.append(
        frame(30, time=1.5, blocks={"atoms": atoms(3, 3)}, meta={"pe": 3.0})
    )  # carry-forward continues
    traj.append(
        frame(
            45,
            time=2.0,
            blocks={"atoms": atoms(4, 4)},
            meta={"pe": 4.0},
            box=mrecd.Box(np.eye(3) * 10),
        )
    )
    with pytest.raises(mrecd.StepOrderError):
        traj.append(frame(45, time=2.5, meta={"pe": 5.0}))
    traj.close()
    top = attrs(root / "trajectory")
    assert top["nstep"] == 5 and "step_progression" not in top
    assert top["time_progression"] == {"start": 0.0, "stride": 0.5}
    back = open_trajectory(root)
    assert back.steps().tolist() == [0, 10, 20, 30, 45]
    assert [f["bonds"].count for f in back] == [2] * 5
    assert attrs(root / "trajectory" / "bonds") == {"uniform_rows": 2, "dense_updates": True}
    assert [f["atoms"].count for f in back] == [3, 3, 3, 3, 4]
    assert back[4].box == mrecd.Box(np.eye(3) * 10) and back[3].box == mrecd.Box(np.eye(3) * 9)
    np.testing.assert_array_equal(back.series("pe"), [0.0, 1.0, 2.0, 3.0, 4.0])


def test_version_one_trajectory_is_not_appended_to(root: Path) -> None:
    traj = open_trajectory(root)
    traj.append(frame(0, blocks={"atoms": atoms(1)}))
    traj.close()

    class V1Record:
        path = root
        read_only = False
        system = None
        frame = None
        molrec_version = 1

    old = open_trajectory(V1Record())
    assert old[0].step == 0
    with pytest.raises(mrecd.ReadOnlyError, match="version-1"):
        old.append(frame(1, blocks={"atoms": atoms(1)}))


class _Record:
    def __init__(
        self, path: Path, system: mrecd.Frame | None = None, read_only: bool = False
    ) -> None:
        self.path = path
        self.system = system
        self.frame = None
        self.read_only = read_only
        self.molrec_version = 2


def test_read_only_record_refuses_appends(root: Path) -> None:
    with pytest.raises(mrecd.ReadOnlyError):
        open_trajectory(_Record(root, read_only=True)).append(frame(0, blocks={"atoms": atoms(1)}))


def test_system_alignment(root: Path) -> None:
    system = mrecd.Frame({"atoms": {"element": ["O", "H", "H"], "id": u64(1, 2, 3)}})
    record = _Record(root, system)
    traj = open_trajectory(record)
    traj.append(frame(0, blocks={"atoms": {**atoms(3), "id": u64(1, 2, 3)}}))
    with pytest.raises(mrecd.InvalidRecord, match="system/atoms"):
        traj.append(frame(1, blocks={"atoms": {**atoms(4), "id": u64(1, 2, 3, 4)}}))
    with pytest.raises(mrecd.InvalidRecord, match="id"):
        traj.append(frame(1, blocks={"atoms": {**atoms(3), "id": u64(1, 2, 4)}}))
    traj.close()
    assert len(open_trajectory(record)) == 1


def test_aligned_block_shares_no_name_with_system(root: Path) -> None:
    system = mrecd.Frame({"atom_types": {"type": ["a"]}})
    declaration = {
        "blocks": {
            "atoms": {"columns": {"x": {"dtype": "f64", "trailing": []}}},
            "atom_types": {
                "aligned_with": "atoms",
                "columns": {"type": {"dtype": "string", "trailing": []}},
            },
        },
        "meta": {},
    }
    with pytest.raises(mrecd.InvalidRecord, match="system"):
        create_trajectory(_Record(root, system), declaration)


def test_targets_resolve_on_resolved_frames(root: Path) -> None:
    declaration = xyz_declaration()
    declaration["blocks"]["sel"] = {
        "columns": {"atom": {"dtype": "u64", "trailing": []}},
        "targets": {"atom": "atoms"},
    }
    declaration["blocks"]["ref"] = {
        "columns": {"site": {"dtype": "u64", "trailing": []}},
        "targets": {"site": "/system/sites"},
    }
    system = mrecd.Frame({"sites": {"w": [1.0, 2.0]}})
    create_trajectory(_Record(root, system), declaration)
    traj = open_trajectory(_Record(root, system))
    traj.append(
        frame(0, blocks={"atoms": atoms(3), "sel": {"atom": u64(2)}, "ref": {"site": u64(1)}})
    )
    with pytest.raises(mrecd.InvalidRecord, match="not below"):
        traj.append(frame(1, blocks={"atoms": atoms(2)}))  # sel still points at row 2
    with pytest.raises(mrecd.InvalidRecord, match="sites"):
        traj.append(frame(1, blocks={"ref": {"site": u64(2)}}))
    traj.append(frame(1, blocks={"atoms": atoms(2), "sel": {"atom": u64(1)}}))
    traj.close()


def test_projection_reads_only_those_arrays(root: Path) -> None:
    declaration = xyz_declaration()
    declaration["blocks"]["bonds"] = {"columns": {"atomi": {"dtype": "u64", "trailing": []}}}
    create_trajectory(root, declaration)
    traj = open_trajectory(root)
    for i in range(3):
        traj.append(frame(i, blocks={"atoms": atoms(5, i), "bonds": {"atomi": u64(i)}}))
    traj.close()
    for name in ("y", "z"):  # without these arrays a projection to x still reads
        for chunk in (root / "trajectory" / "atoms" / name / "c").iterdir():
            chunk.unlink()
    for chunk in (root / "trajectory" / "bonds" / "atomi" / "c").iterdir():
        chunk.unlink()
    reader = open_trajectory(root)
    f = reader.read(2, blocks=["atoms"], columns=["x"])
    assert set(f) == {"atoms"} and set(f["atoms"]) == {"x"}
    np.testing.assert_array_equal(f["atoms"]["x"].values, atoms(5, 2)["x"])


@pytest.mark.directory_only
def test_frame_read_touches_only_its_chunks(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Frame i reads the shard index and the chunks holding its rows, never a whole column."""
    traj = open_trajectory(root, flush_every=500)
    n_atoms, n_frames = 3000, 60
    rng = np.random.default_rng(7)
    for i in range(n_frames):
        xyz = rng.uniform(0, 40, (3, n_atoms))
        traj.append(frame(i, blocks={"atoms": dict(zip("xyz", xyz, strict=True))}))
    traj.close()
    column_bytes = sum(
        p.stat().st_size
        for p in (root / "trajectory" / "atoms" / "x" / "c").rglob("*")
        if p.is_file()
    )
    reads: list[int] = []
    real = _shard._pread_counted

    def counting(source: Any, offset: int, size: int) -> bytes:
        data = real(source, offset, size)
        reads.append(len(data))
        return data

    monkeypatch.setattr(_shard, "_pread_counted", counting)
    reader = open_trajectory(root)
    reader.read(37, columns=["x"])
    chunk = n_atoms * 8
    index = 16 * 255 + 4  # one page
    assert sum(reads) <= index + chunk + 64  # one shard index and one chunk
    assert sum(reads) < column_bytes / 10


@pytest.mark.directory_only
def test_every_array_reads_back_through_zarr_python_and_zarrs(root: Path) -> None:
    declaration = {
        "blocks": {
            "atoms": {
                "columns": {
                    "x": {"dtype": "f64", "trailing": [], "precision": 0.001},
                    "element": {"dtype": "string", "trailing": []},
                    "q": {"dtype": "f64", "trailing": [], "nullable": True},
                    "v": {"dtype": "f64", "trailing": [3]},
                }
            },
            "bonds": {"columns": {"atomi": {"dtype": "u64", "trailing": []}}},
        },
        "meta": {
            "pe": {"dtype": "f64"},
            "flags": {"dtype": "bool3"},
            "note": {"dtype": "json", "fill": None},
        },
    }
    create_trajectory(root, declaration)
    traj = open_trajectory(root, flush_every=7)
    rng = np.random.default_rng(11)
    for i in range(40):
        n = 3 + i % 4
        blocks: dict[str, Any] = {
            "atoms": {
                "x": rng.uniform(-5, 5, n),
                "element": [f"E{k}" for k in range(n)],
                "q": mrecd.Column(
                    rng.normal(size=n),
                    validity=rng.integers(0, 2, n).astype(bool) | (np.arange(n) == 0),
                ),
                "v": rng.normal(size=(n, 3)),
            }
        }
        if i % 9 == 0:
            blocks["bonds"] = {"atomi": np.arange(i % 5, dtype=np.uint64)}
        box = mrecd.Box(np.eye(3) * (10 + i // 10)) if i % 10 == 0 else None
        traj.append(
            frame(
                i * 3 + (i > 20),
                time=0.1 * i,
                blocks=blocks,
                meta={"pe": float(i), "flags": [True, False, i % 2 == 0]},
                box=box,
            )
        )
    traj.close()
    arrays = sorted(
        p.parent
        for p in (root / "trajectory").rglob("zarr.json")
        if json.loads(p.read_text())["node_type"] == "array"
    )
    assert len(arrays) > 15
    for path in arrays:
        plain = zarr.open_array(zs(path), mode="r")[:]
        with zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"}):
            rust = zarr.open_array(zs(path), mode="r")[:]
        mine = _shard.ArrayReader(
            Tree(DirectoryStore(path)), "", json.loads((path / "zarr.json").read_text())
        )
        ours = mine.read(0, mine.shape[0])
        if plain.dtype.kind in "OTU":
            assert plain.tolist() == rust.tolist() == ours.tolist(), path
        else:
            assert plain.tobytes() == rust.tobytes() == ours.tobytes(), path


def test_frames_round_trip_bit_identical(tmp_path: Path) -> None:
    """What the reader returns is what was written (resolved), for a run with every feature."""
    root = make_root(tmp_path / "r.mrec")
    declaration = xyz_declaration(pe={"dtype": "f64", "fill": "NaN"})
    declaration["blocks"]["ins"] = {"columns": {"atomi": {"dtype": "u64", "trailing": []}}}
    create_trajectory(root, declaration)
    traj = open_trajectory(root, flush_every=4)
    rng = np.random.default_rng(5)
    expected: list[mrecd.Frame] = []
    current: dict[str, Any] = {}
    for i in range(25):
        blocks: dict[str, Any] = {}
        if i % 3 != 2:
            blocks["atoms"] = dict(zip("xyz", rng.normal(size=(3, 2 + i % 3)), strict=True))
        if i % 5 == 1:
            blocks["ins"] = {"atomi": np.arange(i % 3, dtype=np.uint64)}
        meta = {"pe": float(i)} if i % 4 else {}
        f = frame(i, blocks=blocks, meta=meta)
        traj.append(f)
        for name, block in f.items():
            current[name] = block
        expected.append(
            mrecd.Frame(dict(current), meta={"pe": float(i) if i % 4 else float("nan")}, step=i)
        )
    traj.close()
    back = list(open_trajectory(root))
    assert back == expected


def test_trajectory_is_a_sequence(root: Path) -> None:
    traj = open_trajectory(root)
    for i in range(6):
        traj.append(frame(i, blocks={"atoms": atoms(1, i)}))
    view = traj[1:6:2]
    assert len(view) == 3 and [f.step for f in view] == [1, 3, 5]
    assert [f.step for f in view[::-1]] == [5, 3, 1] and view[-1].step == 5
    assert isinstance(traj, Trajectory) and traj.steps().tolist() == list(range(6))
    traj.close()


def test_zero_frame_trajectory(root: Path) -> None:
    create_trajectory(root, xyz_declaration(pe={"dtype": "f64"}))
    traj = open_trajectory(root)
    assert len(traj) == 0 and traj.steps().tolist() == [] and traj.times() is None
    assert traj.declaration is not None and set(traj.declaration.blocks) == {"atoms"}
    with pytest.raises(IndexError):
        traj[0]


@pytest.mark.positional_only
def test_stale_uncommitted_block_group_is_replaced(root: Path) -> None:
    """A crash after a block's first arrays but before the commit leaves a group with no update."""
    declaration = xyz_declaration()
    declaration["blocks"]["ins"] = {"columns": {"atomi": {"dtype": "u64", "trailing": []}}}
    create_trajectory(root, declaration)
    traj = open_trajectory(root)
    traj.append(frame(0, blocks={"atoms": atoms(2)}))
    traj.flush()
    committed = json.loads((root / "trajectory" / "zarr.json").read_text())
    traj.append(frame(1, blocks={"ins": {"atomi": u64(1, 1, 1)}}))
    traj.close()
    (root / "trajectory" / "zarr.json").write_text(json.dumps(committed))
    write_attrs(root / "trajectory" / "ins", {})
    again = open_trajectory(root)
    assert "ins" not in again[0]
    again.append(frame(1, blocks={"ins": {"atomi": u64(0)}}))
    again.close()
    assert open_trajectory(root)[1]["ins"]["atomi"].values.tolist() == [0]


def test_reopen_without_appending_keeps_partial_chunks(root: Path) -> None:
    """Regression: trimming on reopen once dropped the committed partial tail chunk of an
    array that received no new rows afterwards (found by the SIGKILL test)."""
    declaration = xyz_declaration()
    declaration["blocks"]["flags"] = {
        "columns": {"on": {"dtype": "bool", "trailing": [], "nullable": True}}
    }
    create_trajectory(root, declaration)
    traj = open_trajectory(root)
    traj.append(
        frame(
            0,
            blocks={
                "atoms": atoms(2),
                "flags": {"on": mrecd.Column([True, False], validity=[True, False])},
            },
        )
    )
    traj.append(frame(1, blocks={"atoms": atoms(2, 1)}))
    traj.close()
    before = list(open_trajectory(root))
    reopened = open_trajectory(root)
    reopened.append(frame(2, blocks={"atoms": atoms(2, 2)}))  # flags gets no rows in this session
    reopened.close()
    after = list(open_trajectory(root))
    assert after[:2] == before
    assert after[2]["flags"] == before[1]["flags"]


@pytest.mark.parametrize("precision", [None, 1e-3])
def test_producer_reusing_its_buffer_does_not_change_queued_frames(
    root: Path, precision: float | None
) -> None:
    """MD codes update one positions array in place; queued and carried frames must not follow."""
    create_trajectory(root, xyz_declaration(precision))
    traj = open_trajectory(root, flush_every=100)
    positions = np.zeros((3, 4))
    written = []
    for i in range(5):
        positions += 1.0  # in place, after the previous frame was appended
        traj.append(
            frame(i, blocks={"atoms": {"x": positions[0], "y": positions[1], "z": positions[2]}})
        )
        written.append(positions[0].copy())
    positions[:] = -7.0
    traj.close()
    back = open_trajectory(root)
    assert len(back) == 5
    for i, x in enumerate(written):
        expected = x if precision is None else mrecd.quantize(x, precision)
        np.testing.assert_array_equal(back[i]["atoms"]["x"].values, expected)


def test_queued_materialization_is_invisible_until_its_commit(root: Path) -> None:
    """Regression (found by the soak): index arrays created when a frame is queued were
    visible, empty, beside the committed markers; 'arrays win' then lost the block."""
    traj = open_trajectory(root, flush_every=1000)
    traj.append(frame(0, blocks={"atoms": atoms(3)}, box=mrecd.Box(np.eye(3))))
    traj.append(frame(1, blocks={"atoms": atoms(3, 1)}))
    traj.flush()
    traj.append(frame(2, blocks={"atoms": atoms(4, 2)}, box=mrecd.Box(np.eye(3) * 2)))  # queued
    for name in ("atoms/step_index", "atoms/offset", "box/step_index", "box/vectors"):
        assert not (root / "trajectory" / name / "zarr.json").exists(), name
    other = open_trajectory(root)  # what a reader sees if the writer died now
    assert [other[i]["atoms"].count for i in range(2)] == [3, 3]
    assert other[1].box == mrecd.Box(np.eye(3))
    traj.close()
    assert [f["atoms"].count for f in open_trajectory(root)] == [3, 3, 4]


@pytest.mark.positional_only
def test_offset_without_step_index_is_an_unfinished_commit(root: Path) -> None:
    """Writers land offset before step_index; a lone offset is ignored, not refused."""
    traj = open_trajectory(root)
    traj.append(frame(0, blocks={"atoms": atoms(2)}))
    traj.append(frame(1, blocks={"atoms": atoms(2, 1)}))
    traj.close()
    offset = zarr.create_array(
        str(root / "trajectory" / "atoms" / "offset"), shape=(3,), dtype="uint64"
    )
    offset[:] = [0, 2, 4]
    assert [f["atoms"].count for f in open_trajectory(root)] == [2, 2]
    again = open_trajectory(root)
    again.append(frame(2, blocks={"atoms": atoms(5, 2)}))  # materializes over the leftover
    again.close()
    assert [f["atoms"].count for f in open_trajectory(root)] == [2, 2, 5]


@pytest.mark.positional_only
def test_readers_keep_a_bounded_number_of_shards_open(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One descriptor per touched shard would exhaust `ulimit -n` on a long run."""
    monkeypatch.setattr(_shard, "_OPEN_SHARDS", 2)
    traj = open_trajectory(root, flush_every=500)
    for i in range(3 * 255 + 1):  # one frame per chunk: x spans four shards
        traj.append(frame(i, blocks={"atoms": atoms(2100, i)}))
    traj.close()
    assert len(list((root / "trajectory" / "atoms" / "x" / "c").iterdir())) == 4
    reader = open_trajectory(root)
    for i in (0, 300, 600, 765, 10, 310):  # every shard, then back to the first ones
        np.testing.assert_array_equal(
            reader.read(i, columns=["x"])["atoms"]["x"].values, atoms(2100, i)["x"]
        )
    block = reader._reader.block("atoms") if reader._reader else None
    assert block is not None and len(block.columns["x"]._ranges) == 2


@pytest.mark.parametrize(
    ("soft", "budget"),
    [(256, 32), (1024, 32), (4096, 128), (20000, 512), (2**20, 512)],
)
def test_the_open_shard_budget_follows_the_descriptor_limit(
    monkeypatch: pytest.MonkeyPatch, soft: int, budget: int
) -> None:
    """A long run's random reads keep its shards open when `ulimit -n` allows it."""
    monkeypatch.setattr(_shard.resource, "getrlimit", lambda _: (soft, 2**20))
    assert _shard._open_shards_budget() == budget


def test_small_chunks_of_an_indexed_block_are_decoded_once_at_random_frames(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decoded-chunk cache sized in bytes: an indexed block's 8-byte rows (one
    chunk spans many frames) stay decoded while frames are read at random."""
    traj = open_trajectory(root, flush_every=500)
    for i in range(3000):
        blocks: dict[str, Any] = {"atoms": atoms(2, i)}
        if i % 2 == 0:
            blocks["sites"] = {"atomi": np.arange(i, i + 12, dtype=np.uint64)}
        traj.append(frame(i, blocks=blocks))
    traj.close()
    reader = open_trajectory(root)
    assert reader._reader is not None
    sites = reader._reader.block("sites")
    assert sites is not None
    column = sites.columns["atomi"]
    chunks = -(-sites.total_rows // column.inner_rows)
    assert chunks > _shard._CHUNK_CACHE  # more chunks than the old fixed cache held
    decoded: list[int] = []
    real = column._decode_chunk
    monkeypatch.setattr(column, "_decode_chunk", lambda c: decoded.append(c) or real(c))
    for i in np.random.default_rng(0).integers(0, 3000, 400):
        got = reader[int(i)]["sites"]["atomi"].values
        np.testing.assert_array_equal(got, np.arange(i - i % 2, i - i % 2 + 12))
    assert sorted(decoded) == sorted(set(decoded))  # each chunk decoded once
    with pytest.raises(ValueError, match="read-only"):
        got[0] = 7  # views of a shared decoded chunk


def test_a_commit_whose_marker_changed_meanwhile_is_refused_and_invisible(root: Any) -> None:
    """The marker is a conditional put on the ETag the writer last saw (storage-seam issue)."""
    create_trajectory(root, xyz_declaration())
    traj = open_trajectory(root)
    traj.append(frame(0, blocks={"atoms": atoms(3)}))
    traj.flush()
    marker = root / "trajectory" / "zarr.json"
    rogue = json.loads(marker.read_text())
    rogue["attributes"]["rogue"] = True  # another writer, past the lease, commits meanwhile
    marker.write_text(json.dumps(rogue))
    traj.append(frame(1, blocks={"atoms": atoms(3, 1.0)}))
    with pytest.raises(mrecd.WriterBusy, match="another writer committed"):
        traj.flush()
    after = json.loads(marker.read_text())["attributes"]
    assert after["rogue"] is True and after["nstep"] == 1
    assert len(open_trajectory(root)) == 1


def _recorded_run(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    step: str,
    fail: str | None,
    *,
    frames: int = 3,
    flush_every: int | None = None,
) -> list[str]:
    """Append ``frames`` frames and close, recording each array's ``step`` ("sync": its
    fsync, "write": its commit's writes) and each marker publication; the array whose key
    ends with ``fail`` fails that step."""
    from mrecd.bindings.zarr import _trajectory_write

    owner: Any = _shard.ArrayAppender if step == "sync" else _shard.ArrayCommit
    events: list[str] = []
    real_step, real_publish = getattr(owner, step), _trajectory_write.TrajectoryWriter._publish

    def recorded(self: Any) -> None:
        key = (self.path if step == "sync" else self.appender.path).key
        if key.endswith(fail or "\0"):
            raise OSError(5, f"injected {step} failure")
        real_step(self)
        events.append(f"{step} {key.rsplit('/', 1)[-1]}")

    def publish(self: Any, marker: Any, document: Any, *, durable: bool) -> None:
        events.append(f"publish {document['attributes']['nstep']} durable={durable}")
        real_publish(self, marker, document, durable=durable)

    monkeypatch.setattr(owner, step, recorded)
    monkeypatch.setattr(_trajectory_write.TrajectoryWriter, "_publish", publish)
    create_trajectory(root, xyz_declaration(1e-3))
    traj = open_trajectory(root, flush_every=flush_every)
    try:
        for i in range(frames):
            traj.append(frame(i, blocks={"atoms": atoms(4, i)}))
        traj.close()
    finally:
        monkeypatch.undo()
    return events


@pytest.mark.positional_only  # fsync is the positional stores' durability
def test_a_durable_commit_publishes_after_every_array_synced(root: Path, monkeypatch: Any) -> None:
    """The arrays' fsyncs run at once (a pool), and the marker waits for all of them."""
    events = _recorded_run(root, monkeypatch, "sync", fail=None)
    assert events[-1] == "publish 3 durable=True"
    synced = {e for e in events[:-1] if e.startswith("sync")}
    assert {"sync x", "sync y", "sync z"} <= synced
    assert "publish 3 durable=True" not in events[:-1]
    assert [f.step for f in open_trajectory(root)] == [0, 1, 2]


@pytest.mark.positional_only  # fsync is the positional stores' durability
def test_a_failed_fsync_publishes_nothing(root: Path, monkeypatch: Any) -> None:
    with pytest.raises(OSError, match="injected sync failure"):
        _recorded_run(root, monkeypatch, "sync", fail="atoms/y")
    assert len(open_trajectory(root)) == 0  # the marker still says nstep 0


def test_each_commit_publishes_after_all_its_array_writes_and_in_order(
    root: Path, monkeypatch: Any
) -> None:
    """Arrays are written at once and the next commit encodes early; neither reorders commits."""
    events = _recorded_run(root, monkeypatch, "write", fail=None, frames=5, flush_every=2)
    publishes = [e for e in events if e.startswith("publish")]
    assert [p.split()[1] for p in publishes] == ["2", "4", "5"]
    start = 0
    for marker in publishes:
        end = events.index(marker)
        written = {e for e in events[start:end] if e.startswith("write")}
        assert {"write x", "write y", "write z"} <= written  # every array of that commit
        start = end + 1
    assert [f.step for f in open_trajectory(root)] == [0, 1, 2, 3, 4]


def test_a_failed_array_write_publishes_nothing(root: Path, monkeypatch: Any) -> None:
    with pytest.raises(OSError, match="injected write failure"):
        _recorded_run(root, monkeypatch, "write", fail="atoms/y", flush_every=2)
    assert len(open_trajectory(root)) == 0  # the first commit never published


def test_a_series_is_the_callers_to_change(root: Path) -> None:
    """Decoded chunks are cached read-only; a series read from one is a copy."""
    create_trajectory(root, xyz_declaration(pe={"dtype": "f64"}))
    traj = open_trajectory(root)
    for i in range(3):
        traj.append(frame(i, blocks={"atoms": atoms(2, i)}, meta={"pe": -float(i)}))
    traj.close()
    reader = open_trajectory(root)
    values = reader.series("pe")
    values += 10.0
    assert reader.series("pe").tolist() == [0.0, -1.0, -2.0]


def test_a_step_index_is_written_after_its_offset(root: Path, monkeypatch: Any) -> None:
    """Arrays go at once, but a commit cut short may leave an ``offset`` without its
    ``step_index`` (ignored), never the reverse (a reader refuses it)."""
    events: list[str] = []
    real_write = _shard.ArrayCommit.write

    def write(self: Any) -> None:
        key = self.appender.path.key.split("trajectory/", 1)[1]
        if key == "atoms/offset":
            time.sleep(0.05)  # a slow offset must still land before its step_index
        real_write(self)
        events.append(key)

    monkeypatch.setattr(_shard.ArrayCommit, "write", write)
    create_trajectory(root, xyz_declaration(1e-3))
    traj = open_trajectory(root, flush_every=2)
    for step, n in enumerate([4, 4, 5, 3, 6, 6]):  # the row count changes: indexed from frame 2
        traj.append(frame(step, blocks={"atoms": atoms(n, step)}))
    traj.close()
    first = events.index("atoms/step_index")  # created with its offset, in one commit
    assert "atoms/offset" in events[:first]
    assert "atoms/x" in events[:first]
    assert [len(f["atoms"]["x"].values) for f in open_trajectory(root)] == [4, 4, 5, 3, 6, 6]


@pytest.mark.directory_only  # damages files directly
def test_a_shard_left_without_its_index_by_a_killed_first_commit_is_not_read(root: Path) -> None:
    """A commit killed between a new array's shard data and its index leaves a zeroed index
    before the array's first ``zarr.json``: the next writer starts that array afresh."""
    create_trajectory(root, xyz_declaration(1e-3))
    traj = open_trajectory(root)
    for step in range(2):
        traj.append(frame(step, blocks={"atoms": atoms(4, step)}))
    traj.close()
    leftover = root / "trajectory/atoms/step_index/c/0"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(bytes(4084) + b"chunk bytes written, index never")
    traj = open_trajectory(root)
    for step, n in enumerate([5, 3], start=2):  # the row count changes: the block is indexed
        traj.append(frame(step, blocks={"atoms": atoms(n, step)}))
    traj.close()
    assert [len(f["atoms"]["x"].values) for f in open_trajectory(root)] == [4, 4, 5, 3]
