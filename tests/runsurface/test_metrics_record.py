"""``rec.metrics`` on a record: WAL appends, reopen, torn tails, densify and the watermark (§4)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr

import mrecd
from mrecd import InvalidRecord, NotFound, ReadOnlyError, WriterBusy
from mrecd.bindings.zarr._zarr_store import ZarrAdapter
from mrecd.storage import Location

W1, W2 = "2026-08-04T00:00:01+00:00", "2026-08-04T00:00:02+00:00"


def new_run(where: Location) -> mrecd.StoredRecord:
    return mrecd.create_record(where, status={"state": "running"})


def wal(where: Location) -> bytes:
    return (where / "metrics" / "metrics.jsonl").read_bytes()


def catalog(where: Location) -> dict[str, object]:
    doc = json.loads((where / "metrics" / "zarr.json").read_bytes())
    attributes: dict[str, object] = doc["attributes"]
    return attributes


def test_log_appends_json_lines_readable_at_once(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, {"train/loss": 0.5}, lr=0.1, wall_time=W1)
    lines = wal(where).splitlines()
    assert json.loads(lines[0]) == {"t": "scalar", "k": "train/loss", "s": 1, "w": W1, "v": 0.5}
    assert json.loads(lines[1])["k"] == "lr"
    assert rec.metrics.keys() == ["train/loss", "lr"]
    assert rec.metrics.series("lr").values == [0.1]
    rec.metrics.release()


def test_the_wal_survives_reopen_and_appends_continue(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, loss=1.0, wall_time=W1)
    rec.metrics.release()  # a writer that stops without densifying
    again = mrecd.open_record(where, "r+")
    assert again.metrics.series("loss").values == [1.0]
    again.metrics.log(2, loss=0.5, wall_time=W2)
    assert again.metrics.series("loss").steps == [1, 2]
    again.close()
    assert mrecd.open_record(where).metrics.series("loss").values == [1.0, 0.5]


def test_a_torn_tail_is_ignored_by_readers_and_cut_by_the_next_writer(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, loss=1.0, wall_time=W1)
    rec.metrics.release()
    key = (where / "metrics" / "metrics.jsonl").key
    l1 = wal(where)
    where.store.put(key, l1 + b'{"t":"scalar","k":"loss","s":2,"w"')  # a killed writer
    assert mrecd.open_record(where).metrics.series("loss").values == [1.0]
    rec.metrics.log(3, loss=0.25, wall_time=W2)
    assert wal(where).startswith(l1) and wal(where).count(b"\n") == 2
    assert rec.metrics.series("loss").steps == [1, 3]
    rec.close()


def test_close_densifies_with_the_watermark(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, {"train/loss": 0.5}, wall_time=W1)
    rec.metrics.log(1, {"train/loss": 0.4}, wall_time=W2)  # same step: the later wins
    rec.close()
    size = len(wal(where))
    assert catalog(where)["wal"] == {"lines": 2, "bytes": size}
    assert catalog(where)["series"] == {
        "train/loss": {"type": "scalar", "count": 1, "latest_step": 1, "latest_timestamp": W2}
    }
    assert mrecd.open_record(where).metrics.series("train/loss").values == [0.4]


def test_wal_lines_past_the_watermark_are_newer(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, loss=1.0, wall_time=W1)
    rec.metrics.flush()
    rec.metrics.log(1, loss=0.9, wall_time=W2)  # past the watermark, same step: replaces
    rec.metrics.log(2, loss=0.8, wall_time=W2)
    rec.metrics.release()
    series = mrecd.open_record(where).metrics.series("loss")
    assert series.values == [0.9, 0.8] and series.steps == [1, 2]


def test_dense_data_up_to_the_watermark_is_authoritative(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, loss=1.0, wall_time=W1)
    rec.close()
    key = (where / "metrics" / "metrics.jsonl").key
    data = wal(where)
    where.store.put(key, data.replace(b'"v":1.0', b'"v":7.0'))  # the WAL prefix is not read
    assert mrecd.open_record(where).metrics.series("loss").values == [1.0]


def test_without_a_wal_key_the_dense_series_are_the_whole_record(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, loss=1.0, wall_time=W1)
    rec.close()
    doc = json.loads((where / "metrics" / "zarr.json").read_bytes())
    del doc["attributes"]["wal"]
    (where / "metrics" / "zarr.json").write_bytes(json.dumps(doc).encode())
    rec = mrecd.open_record(where, "r+")
    rec.metrics.log(2, loss=0.5, wall_time=W2)
    assert rec.metrics.series("loss").values == [1.0]
    rec.metrics.release()


def test_unknown_catalog_keys_and_entries_survive_densify(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, loss=1.0, wall_time=W1)
    rec.close()
    doc = json.loads((where / "metrics" / "zarr.json").read_bytes())
    doc["attributes"]["producer"] = {"x": None}
    doc["attributes"]["series"]["loss"]["colour"] = "red"
    (where / "metrics" / "zarr.json").write_bytes(json.dumps(doc).encode())
    (where / "metrics" / "notes.txt").write_bytes(b"keep")
    rec = mrecd.open_record(where, "r+")
    rec.metrics.log(2, loss=0.5, wall_time=W2)
    rec.close()
    assert catalog(where)["producer"] == {"x": None}
    entry = catalog(where)["series"]["loss"]  # type: ignore[index]
    assert entry["colour"] == "red" and entry["count"] == 2
    assert (where / "metrics" / "notes.txt").read_bytes() == b"keep"


def test_dense_arrays_are_f64_i64_and_strings_aligned(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, loss=1.0, wall_time=W1)
    rec.metrics.log(2, loss=float("nan"), wall_time=W2)
    rec.close()
    for group, dtype in (("series", "float64"), ("steps", "int64"), ("wall_time", "string")):
        doc = json.loads((where / "metrics" / group / "loss" / "zarr.json").read_bytes())
        assert doc["data_type"] == dtype and doc["shape"] == [2]
    values = mrecd.open_record(where).metrics.series("loss").value_array()
    assert values[0] == 1.0 and np.isnan(values[1])


def test_a_corrupt_complete_line_is_refused_on_read(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, loss=1.0, wall_time=W1)
    rec.metrics.release()
    where.store.put((where / "metrics" / "metrics.jsonl").key, wal(where) + b"[1,2]\n")
    with pytest.raises(InvalidRecord, match=r"line 2 is not a single JSON object.*§4.3"):
        mrecd.open_record(where).metrics.keys()


def test_reads_of_an_unknown_series_and_writes_read_only_are_refused(where: Location) -> None:
    new_run(where).close()
    rec = mrecd.open_record(where)
    with pytest.raises(NotFound, match="no metrics series 'loss'"):
        rec.metrics.series("loss")
    with pytest.raises(ReadOnlyError, match="read-only"):
        rec.metrics.log(1, loss=1.0)


def test_without_positional_writes_appends_are_conditional_puts(where: Location) -> None:
    rec = new_run(where)
    where.store.positional_writes = False  # as on object storage: read-modify-put on the ETag
    rec.metrics.log(1, loss=1.0, wall_time=W1)
    rec.metrics.log(2, loss=0.5, wall_time=W2)
    assert wal(where).count(b"\n") == 2
    key = (where / "metrics" / "metrics.jsonl").key
    where.store.put(key, wal(where) + encode_other())  # a second writer slipped in
    with pytest.raises(WriterBusy, match=r"exactly one appending writer.*§4.3"):
        rec.metrics.log(3, loss=0.25, wall_time=W2)
    rec.metrics.release()


def encode_other() -> bytes:
    return b'{"t":"scalar","k":"loss","s":9,"w":"2026-08-04T00:00:09Z","v":9}\n'


def test_a_training_loop_logs_like_a_tracking_server(where: Location) -> None:
    with mrecd.create_record(where, status={"state": "running"}) as rec:
        for step in range(5):
            rec.metrics.log(step, loss=1.0 / (step + 1), lr=1e-3)
    closed = mrecd.open_record(where)
    assert closed.metrics.series("loss").steps == [0, 1, 2, 3, 4]
    assert closed.metrics.series("lr").value_array().tolist() == [1e-3] * 5


def test_a_second_appending_writer_is_refused(where: Location) -> None:
    first = new_run(where)
    first.metrics.log(1, loss=1.0, wall_time=W1)
    second = mrecd.open_record(where, "r+")
    with pytest.raises(WriterBusy, match=r"another writer is appending.*§4.3"):
        second.metrics.log(2, loss=0.5, wall_time=W2)
    first.close()
    second.metrics.log(2, loss=0.5, wall_time=W2)
    second.close()
    assert mrecd.open_record(where).metrics.series("loss").steps == [1, 2]


def test_flush_keeps_the_writer_and_appends_continue(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, loss=1.0, wall_time=W1)
    rec.metrics.flush()
    rec.metrics.log(2, loss=0.5, wall_time=W2)
    first_line = wal(where).index(b"\n") + 1
    assert wal(where).count(b"\n") == 2
    assert catalog(where)["wal"] == {"lines": 1, "bytes": first_line}
    rec.close()
    assert catalog(where)["wal"] == {"lines": 2, "bytes": len(wal(where))}


def test_a_packed_record_reads_its_metrics(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, loss=1.0, wall_time=W1)
    rec.close()
    packed = mrecd.pack_record(where)
    assert mrecd.open_record(packed).metrics.series("loss").values == [1.0]


def test_a_series_is_logged_with_steps_always_or_never(where: Location) -> None:
    rec = new_run(where)
    rec.metrics.log(1, loss=1.0, wall_time=W1)
    rec.metrics.log(lr=0.1, wall_time=W1)
    with pytest.raises(InvalidRecord, match=r"'loss' was logged with a step.*§4.2"):
        rec.metrics.log(loss=0.5, wall_time=W2)
    rec.close()
    again = mrecd.open_record(where, "r+")
    with pytest.raises(InvalidRecord, match=r"'lr' was logged without a step"):
        again.metrics.log(3, lr=0.2, wall_time=W2)
    again.close()
    assert wal(where).count(b"\n") == 2


# -- series the closed form holds, and what stays in the WAL (§4.2, §4.3) ----------------------

GROUP = b'{"zarr_format":3,"node_type":"group","attributes":{}}'


def foreign_wal(where: Location, *events: dict[str, object]) -> bytes:
    """A run whose WAL another writer appended (``events`` in wire form, one line each)."""
    mrecd.create_record(
        where, meta={"modules": {"hist": {"version": [1, 0]}}}, status={"state": "running"}
    ).close()
    data = b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)
    where.store.put((where / "metrics" / "zarr.json").key, GROUP)
    where.store.put((where / "metrics" / "metrics.jsonl").key, data)
    return data


def test_a_custom_typed_series_of_numbers_densifies_with_its_type(where: Location) -> None:
    data = foreign_wal(
        where,
        {"t": "hist", "k": "grad/mean", "s": 1, "w": W1, "v": 3},
        {"t": "hist", "k": "grad/mean", "s": 2, "w": W2, "v": 0.25},
    )
    rec = mrecd.open_record(where, "r+")
    rec.metrics.log(2, loss=0.5, wall_time=W2)
    rec.close()
    cat = catalog(where)
    assert cat["wal"] == {"lines": 3, "bytes": len(wal(where))} and wal(where).startswith(data)
    assert cat["series"]["grad/mean"] == {  # type: ignore[index]
        "type": "hist",
        "count": 2,
        "latest_step": 2,
        "latest_timestamp": W2,
    }
    group = zarr.open_group(ZarrAdapter(where.as_store()), path="metrics", mode="r")
    dense = group["series/grad%2Fmean"]
    assert isinstance(dense, zarr.Array) and dense.dtype == np.float64
    assert dense[...].tolist() == [3.0, 0.25]
    series = mrecd.open_record(where).metrics.series("grad/mean")
    assert series.type == "hist" and series.values == [3.0, 0.25] and series.steps == [1, 2]
    assert mrecd.validate_record(where) == []


def test_the_watermark_stops_before_a_line_the_closed_form_cannot_hold(where: Location) -> None:
    """A custom value that is no number has no f64 slot: it and every later line stay in the WAL,
    authoritative past the watermark, so nothing is lost and the dense arrays hold exactly the
    lines before it (§4.2)."""
    data = foreign_wal(
        where,
        {"t": "scalar", "k": "loss", "s": 1, "w": W1, "v": 1.0},
        {"t": "hist", "k": "grad", "s": 1, "w": W1, "v": {"bins": [0, 1], "counts": [3, 4]}},
        {"t": "scalar", "k": "loss", "s": 2, "w": W2, "v": 0.5},
    )
    first = data.index(b"\n") + 1
    rec = mrecd.open_record(where, "r+")
    rec.metrics.log(3, loss=0.25, wall_time=W2)
    rec.close()
    cat = catalog(where)
    assert cat["wal"] == {"lines": 1, "bytes": first}
    assert set(cat["series"]) == {"loss"}  # type: ignore[arg-type]
    assert cat["series"]["loss"]["count"] == 1  # type: ignore[index]
    metrics = mrecd.open_record(where).metrics
    assert metrics.series("loss").values == [1.0, 0.5, 0.25]
    assert metrics.series("grad").values == [{"bins": [0, 1], "counts": [3, 4]}]
    assert mrecd.validate_record(where) == []
    again = mrecd.open_record(where, "r+")  # densifying again moves nothing past that line
    again.metrics.flush()
    assert catalog(where)["wal"] == {"lines": 1, "bytes": first}
    again.close()


@pytest.mark.parametrize(
    "breaking",
    [
        {"t": "hist", "k": "loss", "s": 2, "w": W2, "v": 0.5},  # the key changes type
        {"t": "scalar", "k": "loss", "w": W2, "v": 0.5},  # a stepped series loses its step
        {"t": "hist", "k": "big", "s": 2, "w": W2, "v": 2**53 + 1},  # no exact f64
    ],
    ids=["type-change", "step-presence", "huge-integer"],
)
def test_other_lines_the_closed_form_cannot_hold(
    where: Location, breaking: dict[str, object]
) -> None:
    data = foreign_wal(where, {"t": "scalar", "k": "loss", "s": 1, "w": W1, "v": 1.0}, breaking)
    rec = mrecd.open_record(where, "r+")
    rec.metrics.flush()
    rec.close()
    assert catalog(where)["wal"] == {"lines": 1, "bytes": data.index(b"\n") + 1}
    keys = mrecd.open_record(where).metrics.keys()
    assert set(keys) == {"loss", str(breaking["k"])}
    assert mrecd.validate_record(where) == []


def test_tags_stay_in_the_wal_beside_the_closed_form(where: Location) -> None:
    """The closed form has no place for tags (§4.2); the WAL it covers is kept, tags and all."""
    rec = new_run(where)
    rec.metrics.log(1, loss=1.0, wall_time=W1, tags={"split": "train", "note": None})
    rec.close()
    assert catalog(where)["wal"] == {"lines": 1, "bytes": len(wal(where))}
    assert json.loads(wal(where))["tags"] == {"split": "train", "note": None}
    assert mrecd.open_record(where).metrics.series("loss").values == [1.0]
