"""A host run directory's metrics: ``artifacts/<stem>.mlp.jsonl`` only (storage.md §2, §4.3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mrecd
from mrecd import InvalidRecord, NotFound, ReadOnlyError, WriterBusy
from mrecd.storage import Location

W1, W2 = "2026-08-04T00:00:01+00:00", "2026-08-04T00:00:02+00:00"


def host_wal(where: Location, stem: str = "metrics") -> bytes:
    return (where / "artifacts" / f"{stem}.mlp.jsonl").read_bytes()


def test_log_writes_the_host_wal_and_reads_it_back(where: Location) -> None:
    with mrecd.open_host_metrics(where, mode="r+") as host:
        host.log(1, {"train/loss": 0.5}, wall_time=W1)
        host.log(1, {"train/loss": 0.4}, wall_time=W2)  # same step: the later wins
        host.log(2, {"train/loss": 0.3}, lr=0.1, wall_time=W2, tags={"split": "train"})
    lines = host_wal(where).splitlines()
    assert json.loads(lines[0]) == {"t": "scalar", "k": "train/loss", "s": 1, "w": W1, "v": 0.5}
    assert json.loads(lines[3])["tags"] == {"split": "train"}
    host = mrecd.open_host_metrics(where)
    assert host.keys() == ["train/loss", "lr"] and "lr" in host
    loss = host.series("train/loss")
    assert loss.values == [0.4, 0.3] and loss.steps == [1, 2]
    # a host is no record: no Zarr group, no closed form, nothing under metrics/
    assert not (where / "zarr.json").exists() and not (where / "metrics").exists()


def test_the_stem_names_the_file_and_discovery_matches_mlp_jsonl_only(where: Location) -> None:
    with mrecd.open_host_metrics(where, "eval", mode="r+") as host:
        host.log(1, mae=0.1, wall_time=W1)
    with mrecd.open_host_metrics(where, mode="r+") as host:
        host.log(1, loss=1.0, wall_time=W1)
    store = where.store
    # leftovers recognised solely to be ignored, and files that are not *.mlp.jsonl
    store.put((where / "artifacts" / "old.mlp.index.json").key, b"{}")
    store.put((where / "artifacts" / "old.mlp.zarr" / "zarr.json").key, b"{}")
    store.put((where / "artifacts" / "notes.jsonl").key, b"")
    assert mrecd.host_metric_stems(where) == ["eval", "metrics"]
    assert mrecd.open_host_metrics(where, "eval").series("mae").values == [0.1]


def test_the_host_wal_is_authoritative_over_leftovers(where: Location) -> None:
    with mrecd.open_host_metrics(where, mode="r+") as host:
        host.log(1, loss=1.0, wall_time=W1)
    line = b'{"t":"scalar","k":"loss","s":1,"w":"2026-08-04T00:00:01+00:00","v":9.0}\n'
    where.store.put((where / "artifacts" / "metrics.mlp.zarr" / "metrics.jsonl").key, line)
    assert mrecd.open_host_metrics(where).series("loss").values == [1.0]


def test_a_torn_tail_is_ignored_and_cut_by_the_next_writer(where: Location) -> None:
    with mrecd.open_host_metrics(where, mode="r+") as host:
        host.log(1, loss=1.0, wall_time=W1)
    key = (where / "artifacts" / "metrics.mlp.jsonl").key
    first = host_wal(where)
    where.store.put(key, first + b'{"t":"scalar","k":"loss","s":2')  # a killed writer
    assert mrecd.open_host_metrics(where).series("loss").values == [1.0]
    with mrecd.open_host_metrics(where, mode="r+") as host:
        host.log(3, loss=0.5, wall_time=W2)
    assert host_wal(where).startswith(first) and host_wal(where).count(b"\n") == 2


def test_refusals(where: Location) -> None:
    with mrecd.open_host_metrics(where, mode="r+") as host:
        host.log(1, loss=1.0, wall_time=W1)
        with pytest.raises(InvalidRecord, match="with a step"):
            host.log(None, loss=2.0)
        with pytest.raises(WriterBusy, match="one appending writer"):
            mrecd.open_host_metrics(where, mode="r+").log(2, loss=0.5)
    with pytest.raises(ReadOnlyError):
        mrecd.open_host_metrics(where).log(2, loss=0.5)
    with pytest.raises(NotFound):
        mrecd.open_host_metrics(where).series("nope")
    for stem in ("", "a/b", ".hidden"):
        with pytest.raises(InvalidRecord, match="stem"):
            mrecd.open_host_metrics(where, stem)
    with pytest.raises(ValueError, match="mode"):
        mrecd.open_host_metrics(where, mode="w")  # type: ignore[arg-type]
    where.store.put((where / "artifacts" / "metrics.mlp.jsonl").key, host_wal(where) + b"[1, 2]\n")
    with pytest.raises(InvalidRecord, match="single JSON object"):
        mrecd.open_host_metrics(where).keys()


def test_a_host_directory_holding_a_record_under_artifacts(tmp_path: Path) -> None:
    """storage.md §1: a record inside a host run directory is recognised as any record."""
    run = tmp_path / "run-7"
    with mrecd.open_host_metrics(run, mode="r+") as host:
        host.log(1, loss=1.0, wall_time=W1)
    mrecd.create_record(run / "artifacts" / "result.mrec", status={"state": "succeeded"}).close()
    assert mrecd.host_metric_stems(run) == ["metrics"]
    with mrecd.open_record(run / "artifacts" / "result.mrec") as record:
        assert record.status == {"state": "succeeded"}
