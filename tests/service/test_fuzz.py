"""Garbage bodies and headers never make a 5xx; every refusal is problem+json."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import FRAME, FRAMES, PROBLEM, make_frame, mrf1

KINDS = st.sampled_from([FRAME, FRAMES, "application/json", "text/plain", ""])
JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)


def _mutations() -> st.SearchStrategy[bytes]:
    good = mrf1(make_frame(1000))
    flips = st.tuples(st.integers(0, len(good) - 1), st.integers(0, 255)).map(
        lambda p: good[: p[0]] + bytes([p[1]]) + good[p[0] + 1 :]
    )
    cuts = st.integers(0, len(good)).map(lambda n: good[:n])
    return st.binary(max_size=200) | flips | cuts


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=_mutations() | JSONISH.map(lambda v: json.dumps(v).encode()), kind=KINDS)
def test_post_never_5xx(client: TestClient, run: str, body: bytes, kind: str) -> None:
    r = client.post(
        f"/v1/records/{run}/trajectory/frames",
        content=body,
        headers={"Content-Type": kind, "If-Match": '"3"'},
    )
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        assert r.headers["content-type"] == PROBLEM
        problem = r.json()
        assert {"type", "title", "status", "detail"} <= set(problem)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document=JSONISH)
def test_put_never_5xx(client: TestClient, document: object) -> None:
    r = client.put("/v1/records/fuzz", json=document, params={"exist_ok": "true"})
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        assert r.headers["content-type"] == PROBLEM
