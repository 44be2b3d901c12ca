"""Live appends on object storage (obstore's memory store and a moto bucket).

mrecd's live layout (unsharded chunks of <= 8 frames) and its conditional
writes: a failed PUT at any point leaves the store at its last commit, racing
writers never both commit at one nstep, a crashed writer's tail is
overwritten conditionally or collected, and plain zarr-python reads the
record while it is live.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

import mrecd
from mrecd.api._trajectory import (
    collect_trajectory_garbage,
    create_trajectory,
    open_trajectory,
)
from mrecd.bindings.zarr import collect_garbage
from mrecd.bindings.zarr._object_live import LIVE_FRAMES_PER_CHUNK, ConditionalStore
from mrecd.cli import main
from mrecd.errors import StepOrderError, StoreUnavailable, WriterBusy
from mrecd.storage import ByteRequest, Location, ObjectInfo, PutMode, Store
from mrecd.storage._object import ObjectStore

from .conftest import frame, make_root, xyz_declaration

ATOMS = 40


@pytest.fixture(params=["object", "s3"])
def store(request: pytest.FixtureRequest) -> Store:
    """A fresh object store: obstore's in-memory one, or a prefix of a moto bucket."""
    if request.param == "object":
        from obstore.store import MemoryStore

        return ObjectStore(MemoryStore(), "memory-obstore://test", "lab")
    return ObjectStore.from_url(f"{request.getfixturevalue('s3_bucket')}/lab")


@pytest.fixture
def no_grace(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Objects past the commit count as a dead writer's at once (a crash test's restart)."""
    monkeypatch.setenv("MRECD_LIVE_TAIL_GRACE", "0")
    yield


def tagged(step: int, tag: float) -> mrecd.Frame:
    """A frame whose coordinates say who wrote it (``tag``)."""
    base = np.full(ATOMS, tag) + np.arange(ATOMS) * 1e-3
    return frame(step, blocks={"atoms": {"x": base, "y": base + 1.0, "z": base + 2.0}})


def new_trajectory(store: Store) -> Location:
    root = make_root(Location(store, "run.mrec"))
    create_trajectory(root, xyz_declaration())
    return root


class FailingStore(Store):
    """``inner``, but its ``fail_at``-th PUT (1-based, counted from arming) fails."""

    def __init__(self, inner: Store) -> None:
        super().__init__()
        self.inner = inner
        self.puts = 0
        self.fail_at: int | None = None

    @property
    def url(self) -> str:
        return self.inner.url

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        return self.inner.get(key, byte_range)

    def head(self, key: str) -> ObjectInfo | None:
        return self.inner.head(key)

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        return self.inner.list_dir(prefix)

    def list_info(self, prefix: str = "") -> dict[str, ObjectInfo]:
        return self.inner.list_info(prefix)

    def put(
        self,
        key: str,
        data: bytes | bytearray | memoryview,
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        self.puts += 1
        if self.puts == self.fail_at:
            raise StoreUnavailable("injected: the PUT never reached the store", path=key)
        return self.inner.put(key, data, mode=mode, durable=durable)

    def delete(self, key: str) -> None:
        self.inner.delete(key)


BATCHES = (1, 3, 9)


def run_batches(root: Location, first: int = 0) -> int:
    """Append BATCHES (one flush each); the frames committed before an error."""
    traj = open_trajectory(root)
    committed = first
    try:
        for size in BATCHES:
            traj.extend([tagged(committed + i, committed + i) for i in range(size)])
            traj.flush()
            committed += size
    except (StoreUnavailable, mrecd.MrecdError):
        pass
    finally:
        with contextlib.suppress(mrecd.MrecdError):
            traj.close()
    return committed


def assert_frames(root: Location, n: int) -> None:
    with open_trajectory(root) as traj:
        assert len(traj) == n
        for i in range(n):
            got = traj[i]
            assert got.step == i
            np.testing.assert_array_equal(
                got["atoms"]["x"].values, tagged(i, i)["atoms"]["x"].values
            )


def test_live_layout_is_unsharded_chunks_of_a_few_frames(store: Store) -> None:
    root = new_trajectory(store)
    with open_trajectory(root) as traj:
        traj.extend([tagged(i, i) for i in range(20)])
    x = (root / "trajectory" / "atoms" / "x" / "zarr.json").read_text()
    import json

    meta = json.loads(x)
    assert meta["shape"] == [20 * ATOMS]
    assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [LIVE_FRAMES_PER_CHUNK * ATOMS]
    assert all(c["name"] != "sharding_indexed" for c in meta["codecs"])
    chunks = sorted(k for k in store.keys("run.mrec/trajectory/atoms/x/c"))
    assert len(chunks) == 3  # 8 + 8 + 4 frames
    assert_frames(root, 20)


def test_plain_zarr_python_reads_a_live_record(store: Store) -> None:
    import zarr
    import zarr.storage

    assert isinstance(store, ObjectStore)
    root = new_trajectory(store)
    traj = open_trajectory(root)
    traj.extend([tagged(i, i) for i in range(11)])
    traj.flush()  # committed, the writer still open: a live record
    plain = zarr.storage.ObjectStore(store._store, read_only=True)
    group = zarr.open_group(plain, path=f"{store.prefix}/run.mrec/trajectory", mode="r")
    assert group.attrs["nstep"] == 11
    x = np.asarray(group["atoms/x"][:])
    expected = np.concatenate([tagged(i, i)["atoms"]["x"].values for i in range(11)])
    np.testing.assert_array_equal(x, expected)
    traj.close()


def test_a_failed_put_at_any_point_leaves_the_last_commit(store: Store, no_grace: None) -> None:
    probe = FailingStore(store.child("probe"))
    root = new_trajectory(probe)
    probe.puts = 0
    assert run_batches(root) == sum(BATCHES)
    total = probe.puts
    assert total > 10
    for k in range(1, total + 1):
        failing = FailingStore(store.child(f"k{k}"))
        root = new_trajectory(failing)
        failing.puts, failing.fail_at = 0, k
        committed = run_batches(root)
        assert committed < sum(BATCHES)
        clean = Location(store.child(f"k{k}"), "run.mrec")
        assert_frames(clean, committed)  # the store opens at its last nstep, nothing half-seen
        assert mrecd.api._trajectory.validate_trajectory(clean) == []
        # a later writer takes over the dead one's tail (conditionally) and goes on
        assert run_batches(clean, committed) == committed + sum(BATCHES)
        assert_frames(clean, committed + sum(BATCHES))


def test_a_young_tail_is_not_overwritten(store: Store) -> None:
    failing = FailingStore(store)
    root = new_trajectory(failing)
    failing.puts, failing.fail_at = 0, 3  # dies inside the first commit, after two data PUTs
    assert run_batches(root) == 0
    traj = open_trajectory(Location(store, "run.mrec"))
    with pytest.raises(WriterBusy, match="in flight"):
        traj.append(tagged(0, 0))
        traj.flush()
    with pytest.raises(WriterBusy, match="lost a race"):  # this writer is done: reopen
        traj.release_writer()
    assert len(traj) == 0
    traj.close()


def test_a_slow_producer_is_not_taken_for_a_slow_commit(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MRECD_LIVE_TAIL_GRACE", "0.2")
    root = new_trajectory(store)
    with open_trajectory(root) as traj:
        traj.append(tagged(0, 0))  # the block's group document is PUT now
        time.sleep(0.15)  # more than half the grace before the commit
        traj.append(tagged(1, 1))
        traj.flush()
    assert_frames(root, 2)


def test_gc_deletes_only_what_is_past_the_commit(
    store: Store, no_grace: None, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = FailingStore(store)
    root = new_trajectory(failing)
    failing.puts = 0
    with open_trajectory(root) as traj:
        traj.extend([tagged(i, i) for i in range(10)])
    failing.puts, failing.fail_at = 0, 8  # the next commit dies before its marker
    with pytest.raises(StoreUnavailable), open_trajectory(root) as traj:
        traj.extend([tagged(10 + i, 10 + i) for i in range(20)])
        traj.flush()
    clean = Location(store, "run.mrec")
    before = set(store.keys("run.mrec"))
    dry = collect_garbage(clean, dry_run=True)
    assert dry.deleted and set(store.keys("run.mrec")) == before
    assert all(k.startswith("run.mrec/trajectory/") and "/c/" in k for k in dry.deleted)
    if store.url.startswith("s3://"):  # the command line takes URLs
        assert main(["gc", f"{store.url}/run.mrec", "--dry-run"]) == 0
        assert "would delete" in capsys.readouterr().out
        done = collect_trajectory_garbage(f"{store.url}/run", dry_run=False)
        assert [sorted(g.deleted) for _, g in done] == [sorted(dry.deleted)]
    else:
        assert sorted(collect_garbage(clean).deleted) == sorted(dry.deleted)
    assert set(store.keys("run.mrec")) == before - set(dry.deleted)
    assert_frames(clean, 10)
    assert collect_garbage(clean).deleted == []


def test_gc_refuses_a_target_without_a_trajectory(s3_bucket: str) -> None:
    with pytest.raises(mrecd.NotFound):
        collect_trajectory_garbage(f"{s3_bucket}/lab/nothing-here")
    assert main(["gc", f"{s3_bucket}/lab/nothing-here"]) == 2


def test_a_stale_writer_loses_and_writes_nothing_visible(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = new_trajectory(store)
    first = open_trajectory(root)
    second = open_trajectory(Location(store, "run.mrec"))
    first.extend([tagged(i, i) for i in range(3)])
    first.flush()
    second.acquire_writer()  # opened at nstep 3
    first.extend([tagged(3 + i, 3 + i) for i in range(5)])
    first.flush()  # nstep 8: the second writer is stale now
    second.extend([tagged(3 + i, -1.0) for i in range(5)])
    with pytest.raises(WriterBusy):
        second.flush()
    with contextlib.suppress(WriterBusy):
        second.release_writer()
    assert_frames(root, 8)  # the loser's frames never show, the winner's are intact
    # it rolled back: no object past the commit is left (what it created is gone,
    # what it rewrote holds the committed bytes again)
    monkeypatch.setenv("MRECD_LIVE_TAIL_GRACE", "0")
    assert collect_garbage(root, dry_run=True).deleted == []
    monkeypatch.delenv("MRECD_LIVE_TAIL_GRACE")
    second.extend([tagged(8, 8)])  # reopened: it appends after the winner's frames
    second.flush()
    assert_frames(root, 9)
    first.release_writer()
    second.close()
    first.close()


def test_a_held_writer_overtaken_by_another_never_reads_back(store: Store) -> None:
    root = new_trajectory(store)
    first = open_trajectory(root)
    second = open_trajectory(Location(store, "run.mrec"))
    first.extend([tagged(i, i) for i in range(3)])
    first.flush()  # first holds its writer at nstep 3
    second.refresh()
    second.extend([tagged(3 + i, -1.0) for i in range(4)])
    second.flush()  # nstep 7, committed by the other writer
    assert first.refresh() == 7  # not its own writer's 3
    assert len(first) == 7
    assert first[6].step == 6
    assert first.acquire_writer() == 7  # stale: reopened after the other's frames
    first.extend([tagged(7, 7.0)])
    first.flush()
    assert len(first) == 8 and second.refresh() == 8
    first.close()
    second.close()


def test_the_conditional_store_refuses_after_a_loss(store: Store) -> None:
    root = new_trajectory(store)
    view = ConditionalStore(store, "run.mrec/trajectory")
    other = ConditionalStore(store, "run.mrec/trajectory")
    view.put("run.mrec/trajectory/new/zarr.json", b"{}")
    with pytest.raises(WriterBusy):  # it is not new any more for the other view
        other.put("run.mrec/trajectory/new/zarr.json", b"{}")
    with pytest.raises(WriterBusy, match="lost a race"):
        other.put("run.mrec/trajectory/else/zarr.json", b"{}")
    assert store.get("run.mrec/trajectory/else/zarr.json") is None  # the loser wrote nothing
    assert root.store.get("run.mrec/trajectory/new/zarr.json") == b"{}"  # the winner's stays


def test_a_lost_commit_restores_a_rewritten_key_it_had_no_copy_of(store: Store) -> None:
    group = "run.mrec/trajectory/atoms/zarr.json"
    store.put(group, b'{"committed": true}')
    view = ConditionalStore(store, "run.mrec/trajectory")
    view.trust(group)  # committed and rewritable, but its bytes were never handed over
    view.begin()
    view.put(group, b'{"this commit": true}')
    store.put("run.mrec/trajectory/x/c/0", b"another writer's")  # a race this view loses
    with pytest.raises(WriterBusy):
        view.put("run.mrec/trajectory/x/c/0", b"ours")
    # rolled back to the committed bytes: never deleted, never left with the lost commit's
    assert store.get(group) == b'{"committed": true}'
    assert store.get("run.mrec/trajectory/x/c/0") == b"another writer's"


class HeldStore(FailingStore):
    """``inner``, but a PUT of ``held`` waits until :attr:`release` is set."""

    def __init__(self, inner: Store, held: str) -> None:
        super().__init__(inner)
        self.held = held
        self.arrived = threading.Event()
        self.release = threading.Event()

    def put(
        self,
        key: str,
        data: bytes | bytearray | memoryview,
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        if key == self.held:
            self.arrived.set()
            self.release.wait(30)
        return self.inner.put(key, data, mode=mode, durable=durable)


def test_a_rollback_never_deletes_what_another_writer_created_meanwhile(store: Store) -> None:
    chunk, other = "run.mrec/trajectory/x/c/1", "run.mrec/trajectory/y/c/1"
    held = HeldStore(store, chunk)
    view = ConditionalStore(held, "run.mrec/trajectory")
    view.begin()
    errors: list[BaseException] = []

    def create_chunk() -> None:
        try:
            view.put(chunk, b"ours, in flight")
        except WriterBusy as exc:
            errors.append(exc)

    flight = threading.Thread(target=create_chunk)
    flight.start()
    assert held.arrived.wait(30)
    store.put(chunk, b"the winner's")  # another writer creates it while ours is in flight
    store.put(other, b"the winner's")
    with pytest.raises(WriterBusy):  # this commit has lost: it rolls back
        view.put(other, b"ours")
    held.release.set()
    flight.join(30)
    assert len(errors) == 1  # our create found the winner's object and wrote nothing
    assert store.get(chunk) == b"the winner's"  # the rollback did not delete it
    assert store.get(other) == b"the winner's"


def race(root: Location, writer: int, count: int, stats: dict[str, int]) -> None:
    """Append ``count`` frames tagged ``writer`` one by one, retrying every lost race."""
    traj = open_trajectory(root)
    rng = random.Random(writer)
    try:
        for seq in range(count):
            tag = writer * 1000 + seq
            while True:
                try:
                    n = traj.refresh()
                    traj.append(tagged(n, tag))
                    traj.flush()
                    break
                except StepOrderError:
                    continue  # another writer committed since len was read: a new step
                except WriterBusy:
                    stats["lost"] += 1
                    with contextlib.suppress(WriterBusy):  # the lost writer cannot commit
                        traj.release_writer()
                    time.sleep(rng.uniform(0.001, 0.01))
    finally:
        with contextlib.suppress(WriterBusy):
            traj.close()


def committed_tags(root: Location) -> list[float]:
    with open_trajectory(root) as traj:
        return [float(traj[i]["atoms"]["x"].values[0]) for i in range(len(traj))]


def test_racing_writers_one_wins_per_nstep(store: Store) -> None:
    root = new_trajectory(store)
    stats = {"lost": 0}
    threads = [
        threading.Thread(target=race, args=(Location(store, "run.mrec"), w, 6, stats))
        for w in (1, 2, 3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    tags = committed_tags(root)
    assert sorted(tags) == sorted(w * 1000 + s for w in (1, 2, 3) for s in range(6))
    with open_trajectory(root) as traj:
        assert [traj[i].step for i in range(len(traj))] == list(range(18))
    assert mrecd.api._trajectory.validate_trajectory(root) == []
