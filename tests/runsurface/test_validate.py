"""``mrecd validate`` checks observables and metrics (run-surface.md §4-§5)."""

from __future__ import annotations

import json

import numpy as np

import mrecd
from mrecd.api import validate_record
from mrecd.storage import Location

DOC = {"kind": "scalar", "description": "d", "time_dependent": False}
W = "2026-08-04T00:00:01+00:00"


def run(where: Location) -> mrecd.StoredRecord:
    rec = mrecd.create_record(where, status={"state": "succeeded"})
    rec.write_observable("x", np.zeros(3), DOC)
    rec.metrics.log(1, loss=1.0, wall_time=W)
    rec.metrics.log(2, loss=0.5, wall_time=W)
    rec.close()
    return rec


def rules(where: Location) -> list[tuple[str, str]]:
    return [(v.path, v.rule) for v in validate_record(where)]


def test_a_clean_run_record_validates(where: Location) -> None:
    run(where)
    assert validate_record(where) == []


def test_an_unpaired_observable_is_reported(where: Location) -> None:
    run(where)
    where.store.delete_prefix((where / "observables" / "meta" / "x").key)
    assert rules(where) == [("observables/x", "run-surface.md §5")]


def test_a_corrupt_wal_line_is_reported(where: Location) -> None:
    run(where)
    key = (where / "metrics" / "metrics.jsonl").key
    where.store.put(key, (where.store.get(key) or b"") + b"[1,2]\n")
    assert rules(where) == [("metrics/metrics.jsonl:3", "run-surface.md §4.3")]


def test_a_watermark_past_the_wal_is_reported(where: Location) -> None:
    run(where)
    key = (where / "metrics" / "metrics.jsonl").key
    where.store.put(key, (where.store.get(key) or b"").split(b"\n")[0] + b"\n")
    found = validate_record(where)
    assert [(v.path, v.rule) for v in found] == [("metrics/metrics.jsonl", "run-surface.md §4.2")]
    assert "is not the first 2 complete lines" in found[0].message


def test_dense_series_disagreeing_with_the_wal_are_reported(where: Location) -> None:
    run(where)
    key = (where / "metrics" / "metrics.jsonl").key
    data = (where.store.get(key) or b"").replace(b'"v":0.5', b'"v":0.6')
    where.store.put(key, data)
    assert rules(where) == [("metrics/series/loss", "run-surface.md §4.2")]


def test_a_catalog_count_off_the_arrays_is_reported(where: Location) -> None:
    run(where)
    doc = json.loads((where / "metrics" / "zarr.json").read_bytes())
    doc["attributes"]["series"]["loss"]["count"] = 3
    (where / "metrics" / "zarr.json").write_bytes(json.dumps(doc).encode())
    assert rules(where) == [("metrics.series.loss", "run-surface.md §4.2")]


def test_a_custom_metric_type_needs_its_module(where: Location) -> None:
    run(where)
    key = (where / "metrics" / "metrics.jsonl").key
    line = b'{"t":"hist","k":"grad","s":3,"w":"2026-08-04T00:00:03Z","v":[1,2]}\n'
    where.store.put(key, (where.store.get(key) or b"") + line)
    found = validate_record(where)
    assert [(v.path, v.rule) for v in found] == [("metrics.series.grad", "run-surface.md §4.1")]
    assert "names no module under meta/modules" in found[0].message


def test_a_time_dependent_observable_spans_the_trajectory(where: Location) -> None:
    rec = mrecd.create_record(where, status={"state": "succeeded"})
    for step in range(3):
        rec.trajectory.append(  # type: ignore[union-attr]
            mrecd.Frame({"atoms": {"x": np.zeros(2)}}, step=step)
        )
    rec.write_observable("msd", np.zeros(3), DOC | {"time_dependent": True})
    rec.write_observable("bad", np.zeros(4), DOC | {"time_dependent": True})
    rec.close()
    found = validate_record(where)
    assert [(v.path, v.rule) for v in found] == [("observables/bad", "run-surface.md §5")]
    assert "4 rows on its leading axis, the trajectory 3 frames" in found[0].message
