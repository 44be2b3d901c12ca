"""The upstream ``run-minimal`` golden reads back as run-surface.md §4.2 says.

The golden ships the catalog (``attrs/metrics.summary.json``) and ``meta``;
the WAL it describes is given in §4.2 (upstream does not ship the file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import mrecd
from mrecd.storage import Location

GOLDEN = Path(__file__).parents[1] / "fixtures" / "run-minimal"
UPSTREAM = Path("/work/shared/fixtures/run-minimal")
WAL = (
    b'{"t":"scalar","k":"train/loss","s":1,"w":"2026-08-04T00:00:01+00:00","v":0.5}\n'
    b'{"t":"scalar","k":"train/loss","s":2,"w":"2026-08-04T00:00:02+00:00","v":0.25}\n'
    b'{"t":"scalar","k":"eval/MAE","s":2,"w":"2026-08-04T00:00:02+00:00","v":0.1}\n'
)


def attrs(name: str) -> Any:
    return json.loads((GOLDEN / "attrs" / f"{name}.json").read_text())


def write_wal(where: Location) -> None:
    where.store.put((where / "metrics" / "metrics.jsonl").key, WAL)


def test_the_spec_wal_is_233_bytes_of_3_lines() -> None:
    assert len(WAL) == 233 and WAL.count(b"\n") == 3
    assert attrs("metrics.summary")["wal"] == {"lines": 3, "bytes": 233}


def test_densifying_the_golden_wal_gives_the_golden_catalog(where: Location) -> None:
    rec = mrecd.create_record(where, meta=attrs("meta"), status={"state": "succeeded"})
    write_wal(where)
    rec.metrics.flush()
    doc = json.loads((where / "metrics" / "zarr.json").read_bytes())
    assert doc["attributes"] == attrs("metrics.summary")
    assert (where / "metrics" / "metrics.jsonl").read_bytes() == WAL
    for group in ("series", "steps", "wall_time"):
        assert (where / "metrics" / group / "train%2Floss" / "zarr.json").is_file()
        assert (where / "metrics" / group / "eval%2FMAE" / "zarr.json").is_file()
    rec.close()


def test_the_golden_reads_back_as_section_4_2_says(where: Location) -> None:
    rec = mrecd.create_record(where, meta=attrs("meta"), status={"state": "succeeded"})
    write_wal(where)
    rec.metrics.flush()
    rec.close()
    read = mrecd.open_record(where)
    assert read.meta["creator"] == attrs("meta")["creator"]
    loss, mae = read.metrics.series("train/loss"), read.metrics.series("eval/MAE")
    assert loss.value_array().tolist() == [0.5, 0.25]
    assert loss.step_array() is not None and loss.step_array().tolist() == [1, 2]  # type: ignore[union-attr]
    assert mae.value_array().tolist() == [0.1]
    assert loss.catalog_entry() == attrs("metrics.summary")["series"]["train/loss"]
    assert mae.catalog_entry() == attrs("metrics.summary")["series"]["eval/MAE"]


def test_the_golden_wal_alone_reads_back_the_same_series(where: Location) -> None:
    rec = mrecd.create_record(where, meta=attrs("meta"), status={"state": "running"})
    write_wal(where)
    assert rec.metrics.keys() == ["train/loss", "eval/MAE"]
    assert rec.metrics.series("train/loss").values == [0.5, 0.25]
    rec.close()


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="the upstream fixtures are not checked out")
def test_the_vendored_copy_is_the_upstream_golden() -> None:
    for name in ("meta", "metrics.summary"):
        upstream = UPSTREAM / "attrs" / f"{name}.json"
        assert (GOLDEN / "attrs" / f"{name}.json").read_bytes() == upstream.read_bytes()
