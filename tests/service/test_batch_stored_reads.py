"""A batch read answers the same bytes whether the server reads its records for
the first time (the values its checks read are sent) or again (values only)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

import mrecd
from mrecd.bindings.lmdb import frame_key
from mrecd.codecs import RECORDS, decode_records, encode_record

SYSTEM = mrecd.Frame({"atoms": {"element": np.array(["O", "H", "H"])}})


def frames(k: int, n: int) -> list[mrecd.Frame]:
    """``n`` frames of record ``k`` (three atoms, x only, meta pe)."""
    return [
        mrecd.Frame({"atoms": {"x": np.arange(3.0) + k + s}}, meta={"pe": -float(s)}, step=s)
        for s in range(n)
    ]


def test_a_first_and_a_later_batch_read_send_the_same_bytes(client: TestClient) -> None:
    document = {"meta": {"units": {"length": "angstrom"}}}
    assert client.put("/v1/collections/qm", json=document).status_code == 201
    posted = [frames(k, n) for k, n in enumerate([3, 1, 4])]
    body = b"".join(
        encode_record({"k": k}, SYSTEM if k != 1 else None, f) for k, f in enumerate(posted)
    )
    headers = {"Content-Type": RECORDS}
    assert client.post("/v1/collections/qm/records", content=body, headers=headers).is_success
    first = client.get("/v1/collections/qm/records?r=2,0,1,2").content
    again = client.get("/v1/collections/qm/records?r=2,0,1,2").content
    assert first == again
    items = list(decode_records(first))
    assert [item.frames for item in items] == [posted[2], posted[0], posted[1], posted[2]]
    assert [item.system for item in items] == [SYSTEM, SYSTEM, None, SYSTEM]


def test_a_damaged_record_in_the_first_group_is_refused_by_the_stream(
    client: TestClient, store_dir: Path
) -> None:
    """The first group is encoded with the ordinals' check; its error is still
    raised by the stream, after the headers, as every group's."""
    document = {"meta": {"units": {"length": "angstrom"}}}
    assert client.put("/v1/collections/qm", json=document).status_code == 201
    body = b"".join(encode_record({"k": k}, SYSTEM, frames(k, 2)) for k in range(2))
    headers = {"Content-Type": RECORDS}
    assert client.post("/v1/collections/qm/records", content=body, headers=headers).is_success
    col = mrecd.open(store_dir).collection("qm")
    with col._binding._live().env.begin(write=True) as txn:
        txn.put(frame_key(3), b"MRF2" + bytes(txn.get(frame_key(3)))[4:])  # record 1, frame 1
    with pytest.raises(RuntimeError, match="response already started") as refused:
        client.get("/v1/collections/qm/records?r=1")
    cause = refused.value.__cause__
    assert isinstance(cause, mrecd.InvalidRecord) and cause.path == "records[1].trajectory[1]"
    assert client.get("/v1/collections/qm/records?r=0").is_success
    col.close()
