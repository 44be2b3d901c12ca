"""push / pull against a real S3-protocol server (moto on 127.0.0.1) and the memory store."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from mrecd.errors import AlreadyExists, InvalidRecord, NotFound, WriterBusy
from mrecd.storage import (
    CountingStore,
    DirectoryStore,
    PutMode,
    Store,
    drop_memory_store,
    memory_store,
    open_store,
    pull,
    push,
)
from mrecd.storage._object import ObjectStore

ROOT_JSON = b'{"zarr_format":3,"node_type":"group","attributes":{}}'
REPO = Path(__file__).parents[2]


def make_record(path: Path, *, big: bool = False) -> dict[str, bytes]:
    """A hand-built record directory (groups, an array, chunks, a hidden file); its files."""
    files = {
        "zarr.json": ROOT_JSON,
        "meta/zarr.json": ROOT_JSON.replace(b"{}", b'{"molrec_version":2}'),
        "frame/zarr.json": ROOT_JSON,
        "frame/atoms/zarr.json": ROOT_JSON.replace(b"{}", b'{"count":3}'),
        "frame/atoms/x/zarr.json": b'{"zarr_format":3,"node_type":"array"}',
        "frame/atoms/x/c/0": os.urandom(3000),
        "frame/atoms/x/c/1": b"",
        "metrics/metrics.jsonl": b'{"step": 1}\n',
    }
    if big:  # past the 8 MiB block: streamed, and a multipart upload on S3
        files["trajectory/atoms/x/c/0/0"] = os.urandom(11 << 20)
    for key, data in files.items():
        (path / key).parent.mkdir(parents=True, exist_ok=True)
        (path / key).write_bytes(data)
    (path / ".staging-leftover").write_bytes(b"hidden")
    (path / "frame" / ".lock").write_bytes(b"")
    return files


def tree(path: Path) -> dict[str, bytes]:
    """Every file under ``path``, hidden ones included, relative key → bytes."""
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def make_zip(path: Path, files: dict[str, bytes]) -> bytes:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for key, data in files.items():
            archive.writestr(key, data)
    return path.read_bytes()


@pytest.fixture
def record(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    path = tmp_path / "data" / "run-42.mrec"
    return path, make_record(path)


@pytest.fixture
def memory_dest() -> Iterator[Store]:
    name = uuid.uuid4().hex
    yield memory_store(name)
    drop_memory_store(name)


class FailingStore(CountingStore):
    """Forwards to ``inner`` until the ``fail_at``-th put, which raises (a push killed there)."""

    def __init__(self, inner: Store, fail_at: int) -> None:
        super().__init__(inner)
        self.fail_at = fail_at
        self.puts: list[tuple[str, PutMode]] = []

    def _tick(self, key: str, mode: PutMode) -> None:
        self.puts.append((key, mode))
        if len(self.puts) == self.fail_at:
            raise RuntimeError("killed")

    def put(
        self,
        key: str,
        data: bytes | bytearray | memoryview,
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        self._tick(key, mode)
        return super().put(key, data, mode=mode, durable=durable)

    def put_file(
        self, key: str, source: IO[bytes], *, mode: PutMode = "overwrite", durable: bool = False
    ) -> str:
        self._tick(key, mode)
        return super().put_file(key, source, mode=mode, durable=durable)


class TestS3:
    def test_push_then_pull_is_byte_identical(
        self, tmp_path: Path, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(ObjectStore, "part_size", 5 << 20)  # 11 MiB: three parts
        source = tmp_path / "run-42.mrec"
        files = make_record(source, big=True)
        url = push(source, f"{s3_bucket}/lab")
        assert url == f"{s3_bucket}/lab/run-42.mrec"
        remote = open_store(url)
        assert sorted(remote.keys()) == sorted(files)  # hidden names stay home
        back = pull(url, tmp_path / "back")
        assert back == tmp_path / "back" / "run-42.mrec"
        assert tree(back) == files
        assert os.listdir(tmp_path / "back") == ["run-42.mrec"]  # no stage left behind

    def test_zip_is_pushed_as_one_object_and_pulled_back(
        self, tmp_path: Path, s3_bucket: str
    ) -> None:
        files = make_record(tmp_path / "src.mrec")
        archive = make_zip(tmp_path / "run-7.mrec.zip", files)
        url = push(tmp_path / "run-7.mrec.zip", f"{s3_bucket}/packed")
        assert url == f"{s3_bucket}/packed/run-7.mrec.zip"
        assert list(open_store(f"{s3_bucket}/packed").keys()) == ["run-7.mrec.zip"]
        assert pull(url, tmp_path / "copy.mrec.zip").read_bytes() == archive
        assert tree(pull(url, tmp_path / "unpacked.mrec")) == files

    def test_second_push_refused_then_overwrite_replaces(
        self, record: tuple[Path, dict[str, bytes]], s3_bucket: str, tmp_path: Path
    ) -> None:
        source, files = record
        push(source, s3_bucket)
        with pytest.raises(AlreadyExists, match="a record of this name exists"):
            push(source, s3_bucket)
        (source / "frame/atoms/x/c/1").unlink()
        (source / "frame/atoms/x/c/0").write_bytes(b"new bytes")
        push(source, s3_bucket, overwrite=True)
        expected = {k: v for k, v in files.items() if k != "frame/atoms/x/c/1"}
        expected["frame/atoms/x/c/0"] = b"new bytes"
        assert tree(pull(f"{s3_bucket}/run-42.mrec", tmp_path / "back")) == expected

    def test_killed_push_leaves_no_record_and_a_repush_succeeds(
        self, record: tuple[Path, dict[str, bytes]], s3_bucket: str, tmp_path: Path
    ) -> None:
        source, files = record
        dest = ObjectStore.from_url(s3_bucket)
        with pytest.raises(RuntimeError, match="killed"):
            push(source, FailingStore(dest, fail_at=4), workers=1)
        assert dest.keys("run-42.mrec") and not dest.exists("run-42.mrec/zarr.json")
        with pytest.raises(NotFound, match=r"no root zarr\.json"):
            pull(f"{s3_bucket}/run-42.mrec", tmp_path / "back")
        assert not (tmp_path / "back").exists()
        push(source, s3_bucket)
        assert tree(pull(f"{s3_bucket}/run-42.mrec", tmp_path / "back")) == files

    def test_a_push_losing_the_race_for_the_root_gets_already_exists(
        self, record: tuple[Path, dict[str, bytes]], s3_bucket: str
    ) -> None:
        source, _ = record
        dest = ObjectStore.from_url(s3_bucket)

        class Racer(FailingStore):
            def _tick(self, key: str, mode: PutMode) -> None:
                if key == "run-42.mrec/zarr.json":  # another push publishes first
                    self.inner.put(key, b'{"winner": true}')

        with pytest.raises(AlreadyExists, match="another push published it first"):
            push(source, Racer(dest, fail_at=0))
        assert dest.get("run-42.mrec/zarr.json") == b'{"winner": true}'


class TestOrderAndRefusals:
    def test_root_is_the_last_put_and_create_only(
        self, record: tuple[Path, dict[str, bytes]], memory_dest: Store
    ) -> None:
        source, files = record
        dest = FailingStore(memory_dest, fail_at=0)
        push(source, dest)
        assert len(dest.puts) == len(files)
        assert dest.puts[-1] == ("run-42.mrec/zarr.json", "create")
        assert all(mode == "overwrite" for _, mode in dest.puts[:-1])

    def test_leftovers_of_a_dead_push_are_replaced(
        self, record: tuple[Path, dict[str, bytes]], memory_dest: Store
    ) -> None:
        source, files = record
        memory_dest.put("run-42.mrec/frame/atoms/x/c/9", b"stale chunk")
        push(source, memory_dest)
        assert sorted(memory_dest.child("run-42.mrec").keys()) == sorted(files)

    def test_name_option_and_bad_names(
        self, record: tuple[Path, dict[str, bytes]], memory_dest: Store
    ) -> None:
        source, _ = record
        assert push(source, memory_dest, name="renamed.mrec").endswith("/renamed.mrec")
        for bad in ("a/b", ".hidden", "x.mrec.zip", ""):
            with pytest.raises(InvalidRecord, match="one path component"):
                push(source, memory_dest, name=bad)

    def test_a_source_that_is_not_a_record(self, tmp_path: Path, memory_dest: Store) -> None:
        with pytest.raises(NotFound, match="no such record"):
            push(tmp_path / "absent.mrec", memory_dest)
        (tmp_path / "data.zarr").mkdir()
        with pytest.raises(InvalidRecord, match=r"must end in \.mrec or \.mrec\.zip"):
            push(tmp_path / "data.zarr", memory_dest)
        (tmp_path / "empty.mrec" / "meta").mkdir(parents=True)
        (tmp_path / "empty.mrec" / "meta" / "zarr.json").write_bytes(ROOT_JSON)
        with pytest.raises(InvalidRecord, match=r"no root zarr\.json"):
            push(tmp_path / "empty.mrec", memory_dest)

    def test_a_record_open_for_writing_is_refused(
        self, record: tuple[Path, dict[str, bytes]], memory_dest: Store
    ) -> None:
        source, _ = record
        (source / "trajectory").mkdir(exist_ok=True)
        (source / "trajectory" / "zarr.json").write_bytes(ROOT_JSON)
        with (
            DirectoryStore(source).writer_lease("trajectory"),
            pytest.raises(WriterBusy, match="another writer holds this trajectory"),
        ):
            push(source, memory_dest)
        push(source, memory_dest)  # closed now

    def test_pull_refusals(
        self, record: tuple[Path, dict[str, bytes]], memory_dest: Store, tmp_path: Path
    ) -> None:
        source, _ = record
        url = push(source, memory_dest)
        with pytest.raises(InvalidRecord, match=r"pulls into a \.mrec path"):
            pull(url, tmp_path / "x.mrec.zip")
        (tmp_path / "taken.mrec").mkdir()
        with pytest.raises(AlreadyExists, match="the destination exists"):
            pull(url, tmp_path / "taken.mrec")
        with pytest.raises(NotFound, match="no such record"):
            pull(f"{memory_dest.url}/absent.mrec", tmp_path / "y.mrec")
        assert pull(url, tmp_path / "taken.mrec", overwrite=True) == tmp_path / "taken.mrec"
        assert (tmp_path / "taken.mrec" / "zarr.json").read_bytes() == ROOT_JSON

    def test_a_zip_and_a_directory_share_one_name(self, tmp_path: Path, memory_dest: Store) -> None:
        files = make_record(tmp_path / "run-1.mrec")
        (tmp_path / "z").mkdir()
        make_zip(tmp_path / "z" / "run-1.mrec.zip", files)
        push(tmp_path / "run-1.mrec", memory_dest)
        with pytest.raises(AlreadyExists, match="a record of this name exists"):
            push(tmp_path / "z" / "run-1.mrec.zip", memory_dest)
        push(tmp_path / "z" / "run-1.mrec.zip", memory_dest, overwrite=True)
        assert list(memory_dest.keys()) == ["run-1.mrec.zip"]


class TestProgress:
    def test_bar_only_when_asked(
        self,
        record: tuple[Path, dict[str, bytes]],
        memory_dest: Store,
        capfd: pytest.CaptureFixture[str],
    ) -> None:
        source, _ = record
        push(source, memory_dest, name="quiet")
        assert capfd.readouterr().err == ""
        push(source, memory_dest, name="loud", progress=True)
        err = capfd.readouterr().err
        assert "push loud" in err and "100%" in err and "B/s" in err


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "server"), str(REPO / "client")])
    return subprocess.run(
        [sys.executable, "-m", "mrecd.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


class TestCommandLine:
    def test_push_and_pull_end_to_end(
        self, record: tuple[Path, dict[str, bytes]], s3_bucket: str, tmp_path: Path
    ) -> None:
        source, files = record
        pushed = run_cli("push", str(source), f"{s3_bucket}/lab")
        assert pushed.returncode == 0, pushed.stderr
        assert pushed.stdout.strip() == f"{s3_bucket}/lab/run-42.mrec"
        assert "100%" in pushed.stderr and "B/s" in pushed.stderr

        again = run_cli("push", str(source), f"{s3_bucket}/lab", "--quiet")
        assert again.returncode == 2
        assert again.stderr.strip().splitlines() == [
            f"mrecd push: {s3_bucket}/lab/run-42.mrec: a record of this name exists "
            "(overwrite to replace it)"
        ]
        forced = run_cli("push", str(source), f"{s3_bucket}/lab", "--overwrite", "--quiet")
        assert forced.returncode == 0 and forced.stderr == ""

        back = tmp_path / "back.mrec"
        pulled = run_cli("pull", f"{s3_bucket}/lab/run-42.mrec", str(back), "--quiet")
        assert pulled.returncode == 0 and pulled.stderr == ""
        assert pulled.stdout.strip() == str(back)
        assert tree(back) == files

        refused = run_cli("pull", f"{s3_bucket}/lab/run-42.mrec", str(back), "--quiet")
        assert refused.returncode == 2
        assert "the destination exists" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1

    def test_push_of_a_missing_record_names_it(self, tmp_path: Path) -> None:
        result = run_cli("push", str(tmp_path / "nope.mrec"), "memory://lab", "--quiet")
        assert result.returncode == 2
        assert result.stderr.strip() == f"mrecd push: {tmp_path / 'nope.mrec'}: no such record"
