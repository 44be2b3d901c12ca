"""A batch read answers the same bytes whether the server reads its records for
the first time (the values its checks read are sent) or again (values only)."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient

import mrecd
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
