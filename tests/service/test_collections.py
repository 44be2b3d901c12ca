"""Collections over HTTP: every route, and every refusal with its problem document."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from fastapi.testclient import TestClient

import mrecd
from mrecd.codecs import RECORDS, decode_frame, decode_records, encode_record

from .conftest import FRAME, PROBLEM

NDJSON = "application/x-ndjson"
ARROW = "application/vnd.apache.arrow.stream"
UNITS = {"length": "angstrom", "energy": "kcal/mol"}
SYSTEM = mrecd.Frame({"atoms": {"element": np.array(["O", "H", "H"])}})


def frames(k: int, n: int = 2) -> list[mrecd.Frame]:
    """``n`` trajectory frames of record ``k`` (three atoms, x only, meta pe)."""
    return [
        mrecd.Frame({"atoms": {"x": np.arange(3.0) + k + s}}, meta={"pe": -float(s)}, step=s)
        for s in range(n)
    ]


def record_bytes(k: int, *, index: int | None = None, n: int = 2) -> bytes:
    extra = None if index is None else {"index": {"n_heavy": index}}
    return encode_record({"k": k}, SYSTEM, frames(k, n), extra)


def record_json(k: int, *, index: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "meta": {"k": k},
        "system": SYSTEM.to_dict(),
        "trajectory": [f.to_dict() for f in frames(k)],
    }
    if index is not None:
        out["index"] = {"n_heavy": index}
    return out


def problem(response: Any, status: int, slug: str, path: str | None = None) -> dict[str, Any]:
    """Check ``response`` is problem ``slug`` with ``status`` (naming ``path``); its document."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    doc: dict[str, Any] = response.json()
    assert doc["type"] == f"urn:mrecd:problem:{slug}" and doc["status"] == status
    if path is not None:
        assert doc.get("path") == path, doc
    return doc


def create(client: TestClient, name: str = "qm", **body: Any) -> Any:
    document = {"meta": {"units": UNITS}, "index_columns": {"n_heavy": {"dtype": "i64"}}}
    return client.put(f"/v1/collections/{name}", json={**document, **body})


def post_stream(client: TestClient, body: bytes, name: str = "qm") -> Any:
    return client.post(
        f"/v1/collections/{name}/records", content=body, headers={"Content-Type": RECORDS}
    )


@pytest.fixture
def filled(client: TestClient) -> TestClient:
    """Collection ``qm`` with 5 records (k = 0..4, index n_heavy = 10 k), 2 frames each."""
    assert create(client).status_code == 201
    body = b"".join(record_bytes(k, index=10 * k) for k in range(5))
    r = post_stream(client, body)
    assert r.status_code == 200 and r.json() == {"first": 0, "count": 5, "n_records": 5}
    return client


# -- create ------------------------------------------------------------------------------------


def test_create_then_summary(client: TestClient) -> None:
    r = create(client, declaration={"blocks": {}, "meta": {}})
    assert r.status_code == 201 and r.json() == {"name": "qm", "created": True}
    summary = client.get("/v1/collections/qm")
    assert summary.status_code == 200 and summary.headers["x-mrecd-records"] == "0"
    doc = summary.json()
    assert doc["n_records"] == 0 and doc["n_frames"] == 0 and doc["declaration"] is None
    assert doc["meta"]["units"] == UNITS and doc["meta"]["molrec_version"] == 2
    assert doc["index_columns"] == {"n_heavy": {"dtype": "i64", "trailing": []}}
    assert doc["forcefield"] is False and doc["read_only"] is False
    assert client.get("/v1/collections").json() == {"collections": ["qm"]}
    assert client.get("/v1/collections?prefix=x").json() == {"collections": []}


def test_a_second_create_is_409(client: TestClient) -> None:
    assert create(client).status_code == 201
    problem(create(client), 409, "already-exists", "qm")


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"meta": {}}, "meta.units"),  # units are required
        ({"meta": {"units": {"length": "parsecs of nonsense"}}}, None),
        ({"declaration": {"blocks": {"atoms": {"columns": {"x": {"dtype": "f99"}}}}}}, None),
        ({"index_columns": {"n_atoms": {"dtype": "u64"}}}, None),  # reserved name
        ({"index_columns": {"n": {"dtype": "i64", "derive": "len"}}}, "index_columns.n.derive"),
        ({"forcefield": {"not": "a force field"}}, None),
        ({"colour": "blue"}, "body.colour"),
    ],
)
def test_bad_creates_are_422_and_leave_nothing(
    client: TestClient, store_dir: Path, body: dict[str, Any], path: str | None
) -> None:
    doc = problem(
        create(client, **body), 422, "invalid-request" if "colour" in body else "invalid-record"
    )
    assert doc["detail"]
    if path is not None:
        assert doc["path"] == path
    assert not list(store_dir.glob("*.mrec.lmdb"))
    assert client.get("/v1/collections").json() == {"collections": []}


def test_a_bad_name_is_422(client: TestClient) -> None:
    problem(create(client, name="..x"), 422, "invalid-record", "name")
    problem(create(client, name="..%2Fescape"), 422, "invalid-record", "name")


# -- append ------------------------------------------------------------------------------------


def test_append_a_stream_and_json_in_one_transaction_each(filled: TestClient) -> None:
    r = filled.post("/v1/collections/qm/records", json=[record_json(5, index=50)])
    assert r.json() == {"first": 5, "count": 1, "n_records": 6}
    r = filled.post("/v1/collections/qm/records", json=record_json(6, index=60))  # one object
    assert r.json() == {"first": 6, "count": 1, "n_records": 7}
    local = mrecd.open(filled.app.state.settings.store).collection("qm")  # type: ignore[attr-defined]
    assert [rec.meta["k"] for rec in local] == list(range(7))
    assert local.index["n_heavy"].values.tolist() == [0, 10, 20, 30, 40, 50, 60]
    assert list(local[6].trajectory) == frames(6) and local[6].system == SYSTEM


def test_concurrent_appends_all_land_with_distinct_ordinals(filled: TestClient) -> None:
    answers: list[dict[str, int]] = []

    def post(k: int) -> None:
        answers.append(post_stream(filled, record_bytes(k, index=k) * 3).json())

    threads = [threading.Thread(target=post, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    firsts = sorted(a["first"] for a in answers)
    assert firsts == list(range(5, 5 + 24, 3)) and all(a["count"] == 3 for a in answers)
    assert filled.get("/v1/collections/qm").json()["n_records"] == 29


def count(client: TestClient) -> int:
    return int(client.get("/v1/collections/qm").json()["n_records"])


def undeclared_block() -> bytes:
    bad = [mrecd.Frame({"ions": {"x": [1.0]}}, meta={"pe": 0.0}, step=0)]
    return record_bytes(7, index=7) + encode_record({}, None, bad, {"index": {"n_heavy": 1}})


@pytest.mark.parametrize(
    ("body", "content_type", "status", "slug"),
    [
        (undeclared_block(), RECORDS, 422, "invalid-record"),
        (record_bytes(7), RECORDS, 422, "invalid-record"),  # no value for index n_heavy
        (record_bytes(7, index=1)[:-5], RECORDS, 400, "invalid-frame-bytes"),  # truncated
        (b"\x02\x00\x00\x00\x00\x00\x00\x00{]", RECORDS, 400, "invalid-frame-bytes"),
        (b"{not json", "application/json", 422, "invalid-record"),
        (json.dumps([record_json(7, index=1), 3]).encode(), "application/json", 422, None),
        (
            json.dumps([{**record_json(7, index=1), "forcefield": {}}]).encode(),
            "application/json",
            422,
            "invalid-record",
        ),
        (b"{}", "application/json", 422, "invalid-record"),  # a record of nothing
        (b'{"trajectory": 3}', "application/json", 422, "invalid-record"),
        (b"x", "text/plain", 415, "unsupported-media-type"),
        (json.dumps({"meta": {}}).encode(), "application/json", 422, "invalid-record"),
        (
            json.dumps({**record_json(7, index=1), "trajectory": 5}).encode(),
            "application/json",
            422,
            "invalid-record",
        ),
    ],
)
def test_refused_appends_change_nothing(
    filled: TestClient, body: bytes, content_type: str, status: int, slug: str | None
) -> None:
    r = filled.post(
        "/v1/collections/qm/records", content=body, headers={"Content-Type": content_type}
    )
    problem(r, status, slug or "invalid-record")
    assert count(filled) == 5


def test_append_limits(make_client: Callable[..., TestClient]) -> None:
    client = make_client(max_body_bytes=2000, max_frames_per_request=6)
    assert create(client).status_code == 201
    problem(post_stream(client, record_bytes(0, index=0, n=10)), 413, "content-too-large")
    problem(
        post_stream(client, record_bytes(0, index=0) * 2 + b"x" * 2000), 413, "content-too-large"
    )
    assert post_stream(client, record_bytes(0, index=0) * 2).status_code == 200


def test_append_to_an_absent_collection_is_404(client: TestClient) -> None:
    problem(post_stream(client, record_bytes(0), name="absent"), 404, "not-found", "absent")


# -- summary, index ----------------------------------------------------------------------------


def test_summary_of_an_absent_collection_is_404(client: TestClient) -> None:
    problem(client.get("/v1/collections/absent"), 404, "not-found", "absent")


def test_the_index_as_json_mrf1_and_arrow(filled: TestClient) -> None:
    as_json = filled.get("/v1/collections/qm/index")
    assert as_json.headers["content-type"] == "application/json"
    block = mrecd.Block.from_dict(as_json.json())
    assert block["n_frames"].values.tolist() == [2] * 5
    assert block["first_frame"].values.tolist() == [0, 2, 4, 6, 8]
    assert block["n_heavy"].values.tolist() == [0, 10, 20, 30, 40]
    mrf1 = filled.get("/v1/collections/qm/index", headers={"Accept": FRAME})
    assert decode_frame(mrf1.content)["records"] == block
    arrow = filled.get("/v1/collections/qm/index", headers={"Accept": ARROW})
    assert arrow.headers["content-type"] == ARROW
    table = pa.ipc.open_stream(arrow.content).read_all()
    assert table.column_names == ["first_frame", "n_frames", "n_atoms", "has_trajectory", "n_heavy"]
    assert table["n_heavy"].to_pylist() == [0, 10, 20, 30, 40]
    assert table["has_trajectory"].to_pylist() == [True] * 5


def test_the_index_at_a_committed_count_and_its_etag(filled: TestClient) -> None:
    first = filled.get("/v1/collections/qm/index?records=2")
    assert first.json()["count"] == 2 and first.headers["x-mrecd-records"] == "2"
    again = filled.get(
        "/v1/collections/qm/index?records=2", headers={"If-None-Match": first.headers["etag"]}
    )
    assert again.status_code == 304
    whole = filled.get("/v1/collections/qm/index", headers={"If-None-Match": first.headers["etag"]})
    assert whole.status_code == 200 and whole.json()["count"] == 5
    problem(filled.get("/v1/collections/qm/index?records=6"), 412, "precondition-failed", "records")
    problem(filled.get("/v1/collections/qm/index?records=-1"), 422, "invalid-request")
    problem(
        filled.get("/v1/collections/qm/index", headers={"Accept": "text/csv"}),
        406,
        "not-acceptable",
    )


# -- record r, frame i -------------------------------------------------------------------------


def test_record_r_as_a_stream_and_as_json(filled: TestClient) -> None:
    r = filled.get("/v1/collections/qm/records/3")
    assert r.headers["content-type"] == RECORDS and r.headers["x-mrecd-records"] == "5"
    assert r.headers["cache-control"].endswith("immutable")
    (item,) = decode_records(r.content)
    assert item.meta == {"k": 3} and item.system == SYSTEM and item.frames == frames(3)
    assert item.extra == {"r": 3}
    last = filled.get("/v1/collections/qm/records/-1", headers={"Accept": "application/json"})
    doc = last.json()
    assert doc["r"] == 4 and doc["meta"] == {"k": 4}
    assert [mrecd.Frame.from_dict(f) for f in doc["trajectory"]] == frames(4)
    cached = filled.get(
        "/v1/collections/qm/records/3", headers={"If-None-Match": r.headers["etag"]}
    )
    assert cached.status_code == 304 and cached.content == b""


def test_record_refusals(filled: TestClient) -> None:
    problem(filled.get("/v1/collections/qm/records/5"), 404, "out-of-range", "records/5")
    problem(filled.get("/v1/collections/qm/records/-6"), 404, "out-of-range")
    problem(filled.get("/v1/collections/qm/records/x"), 422, "invalid-request", "path.r")
    problem(filled.get("/v1/collections/absent/records/0"), 404, "not-found")
    r = filled.get("/v1/collections/qm/records/0", headers={"Accept": "text/csv"})
    problem(r, 406, "not-acceptable")


def test_frame_i_of_record_r(filled: TestClient) -> None:
    r = filled.get("/v1/collections/qm/records/2/frames/1")
    assert r.headers["content-type"] == FRAME and r.headers["x-mrecd-records"] == "5"
    assert decode_frame(r.content) == frames(2)[1]
    as_json = filled.get(
        "/v1/collections/qm/records/2/frames/-1?columns=x", headers={"Accept": "application/json"}
    )
    assert mrecd.Frame.from_dict(as_json.json()) == frames(2)[1]
    cached = filled.get(
        "/v1/collections/qm/records/2/frames/1", headers={"If-None-Match": r.headers["etag"]}
    )
    assert cached.status_code == 304
    problem(filled.get("/v1/collections/qm/records/2/frames/2"), 404, "out-of-range", "frames/2")
    problem(filled.get("/v1/collections/qm/records/9/frames/0"), 404, "out-of-range")
    problem(filled.get("/v1/collections/qm/records/0/frames/0?blocks=nope"), 422, "invalid-record")
    problem(filled.get("/v1/collections/qm/records/0/frames/0?columns=nope"), 404, "not-found")


def test_frame_of_a_record_without_trajectory_is_404(filled: TestClient) -> None:
    body = encode_record({"static": True}, SYSTEM, None, {"index": {"n_heavy": 0}})
    assert post_stream(filled, body).json()["first"] == 5
    (item,) = decode_records(filled.get("/v1/collections/qm/records/5").content)
    assert item.frames is None and item.system == SYSTEM
    problem(filled.get("/v1/collections/qm/records/5/frames/0"), 404, "out-of-range")


# -- batch reads -------------------------------------------------------------------------------


def test_a_batch_read_in_the_order_asked(filled: TestClient) -> None:
    r = filled.get("/v1/collections/qm/records?r=4,0,-2,0")
    assert r.headers["x-mrecd-count"] == "4" and r.headers["x-mrecd-records"] == "5"
    items = list(decode_records(r.content))
    assert [i.extra["r"] for i in items] == [4, 0, 3, 0]
    assert [i.meta["k"] for i in items] == [4, 0, 3, 0] and items[2].frames == frames(3)
    repeated = filled.get("/v1/collections/qm/records?r=1&r=2")
    assert [i.meta["k"] for i in decode_records(repeated.content)] == [1, 2]


def test_a_batch_read_of_a_slice_as_json_and_json_lines(filled: TestClient) -> None:
    as_json = filled.get(
        "/v1/collections/qm/records?start=1&step=2", headers={"Accept": "application/json"}
    )
    assert [d["r"] for d in as_json.json()] == [1, 3]
    lines = filled.get("/v1/collections/qm/records?stop=-3", headers={"Accept": NDJSON})
    assert [json.loads(line)["meta"]["k"] for line in lines.text.splitlines()] == [0, 1]
    everything = filled.get("/v1/collections/qm/records")
    assert len(list(decode_records(everything.content))) == 5
    empty = filled.get("/v1/collections/qm/records?r=")
    assert empty.status_code == 200 and empty.content == b""


def test_a_long_batch_streams_in_groups(filled: TestClient) -> None:
    many = ",".join(str(k % 5) for k in range(300))
    items = list(decode_records(filled.get(f"/v1/collections/qm/records?r={many}").content))
    assert [i.meta["k"] for i in items] == [k % 5 for k in range(300)]


def test_a_batch_sends_stored_updates_when_no_block_carries_forward(
    client: TestClient,
) -> None:
    """Frames that each restate every block travel as the file stores them (the
    cell carried forward by the reader); a block carried forward travels stacked."""
    assert create(client).status_code == 201
    cells = [mrecd.Box(np.eye(3) * 20.0), mrecd.Box(np.eye(3) * 21.0)]
    moving = [
        mrecd.Frame(f.blocks, meta=f.meta, step=f.step, box=cells[min(s, 1)])
        for s, f in enumerate(frames(0, 3))
    ]
    still = [mrecd.Frame(frames(1)[0].blocks, meta={"pe": -float(s)}, step=s) for s in range(3)]
    body = b"".join(
        encode_record({"k": k}, SYSTEM, f, {"index": {"n_heavy": k}})
        for k, f in enumerate([moving, still])
    )
    assert post_stream(client, body).status_code == 200
    answer = client.get("/v1/collections/qm/records?r=0,1")
    first, second = items_of(answer.content)
    assert json.loads(first[0])["updates"] == {"meta_types": {"pe": "f64"}, "boxes": [0, 1]}
    assert len(first) == 1 + 1 + 3 and "updates" not in json.loads(second[0])
    assert "stacked" in json.loads(second[0])  # atoms carry forward from frame 0
    got = list(decode_records(answer.content))
    assert got[0].frames == moving and got[1].frames == still and got[0].system == SYSTEM
    assert [g.meta["k"] for g in got] == [0, 1] and [g.extra["r"] for g in got] == [0, 1]


def items_of(body: bytes) -> list[list[bytes]]:
    """The length-prefixed items of a record stream, record by record (header first)."""
    out: list[list[bytes]] = []
    at, records = 0, []
    while at < len(body):
        size = int.from_bytes(body[at : at + 8], "little")
        records.append(body[at + 8 : at + 8 + size])
        at += 8 + size
    while records:
        header = json.loads(records[0])
        stacked = header.get("stacked") is not None and header.get("updates") is None
        n = 1 + int(header["system"]) + (1 if stacked else header["frames"] or 0)
        out.append(records[:n])
        records = records[n:]
    return out


def test_batch_refusals(filled: TestClient) -> None:
    doc = problem(filled.get("/v1/collections/qm/records?r=1,5"), 404, "out-of-range", "records/5")
    assert "5" in doc["detail"]
    problem(filled.get("/v1/collections/qm/records?r=1,x"), 422, "invalid-record", "r")
    problem(filled.get("/v1/collections/qm/records?r=1&start=0"), 422, "invalid-record", "r")
    problem(filled.get("/v1/collections/qm/records?step=0"), 422, "invalid-record", "step")
    too_many = ",".join(["0"] * 4097)
    problem(filled.get(f"/v1/collections/qm/records?r={too_many}"), 413, "content-too-large")
    problem(
        filled.get("/v1/collections/qm/records", headers={"Accept": "text/csv"}),
        406,
        "not-acceptable",
    )
    problem(filled.get("/v1/collections/absent/records?r=0"), 404, "not-found")
