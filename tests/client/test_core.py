"""The sans-I/O core alone: the retry policy, the producer pipeline, requests, the wire."""

from __future__ import annotations

import random

import httpx
import numpy as np
import pytest

import mrecd
from mrecd_client import Producer, RetryPolicy
from mrecd_client._core import Appended, Core, Pipeline
from mrecd_client._wire import FRAMES, NDJSON, FrameStreamDecoder, encode_frames

from .conftest import make_frame

REQUEST = httpx.Request("GET", "http://x/v1/records")


def test_backoff_is_full_jitter_under_a_growing_cap() -> None:
    policy = RetryPolicy(attempts=10, base_delay=0.1, max_delay=1.0)
    rng = random.Random(7)
    for attempt, cap in ((1, 0.1), (2, 0.2), (3, 0.4), (8, 1.0)):
        delays = [policy.delay(attempt, rng=rng) for _ in range(200)]
        assert min(delays) >= 0 and max(delays) <= cap and max(delays) > cap / 2
    assert policy.delay(1, retry_after=0.7) == 0.7
    assert policy.delay(1, retry_after=60) == 1.0


def test_what_is_resent() -> None:
    policy = RetryPolicy(attempts=3)
    refused = httpx.ConnectError("no", request=REQUEST)
    lost = httpx.ReadError("lost", request=REQUEST)
    assert policy.retry_exception(refused, 1, safe=False) is not None  # never left
    assert policy.retry_exception(lost, 1, safe=True) is not None
    assert policy.retry_exception(lost, 1, safe=False) is None  # may have been handled
    assert policy.retry_exception(lost, 3, safe=True) is None  # attempts spent
    assert policy.retry_exception(ValueError("not transport"), 1, safe=True) is None
    answer = httpx.Response
    for status in (429, 500, 502, 503, 504):
        assert policy.retry_response(answer(status), 1, safe=True) is not None
    assert policy.retry_response(answer(500), 1, safe=False) is None
    assert policy.retry_response(answer(503), 1, safe=False) is not None
    for status in (200, 400, 404, 409, 412, 422):
        assert policy.retry_response(answer(status), 1, safe=True) is None
    later = answer(503, headers={"Retry-After": "0.5"})
    assert policy.retry_response(later, 1, safe=True) is not None
    dated = answer(
        429,
        headers={
            "Retry-After": "Wed, 21 Oct 2015 07:28:02 GMT",
            "Date": "Wed, 21 Oct 2015 07:28:00 GMT",
        },
    )
    assert policy.retry_response(dated, 1, safe=True) == 2.0


def test_pipeline_numbers_batches_and_counts_queued_frames() -> None:
    pipe = Pipeline(Producer("p", 0), "mrf1", batch_frames=2, nstep=5)
    pipe.add([make_frame(s) for s in range(5)])
    assert pipe.full() and len(pipe) == 10
    first, second = pipe.cut(2), pipe.cut(2)
    assert (first.seq, second.seq, second.previous) == (0, 1, first)
    assert first.headers() == {
        "Producer-Id": "p",
        "Producer-Epoch": "0",
        "Producer-Seq": "0",
        "Content-Type": FRAMES,
    }
    pipe.landed(first, Appended(nstep=7, first=5, count=2, duplicate=False))
    assert len(pipe) == 10 and pipe.nstep == 7 and first.previous is None and not first.frames
    last = pipe.cut(expected_nstep=9)
    assert last.headers()["If-Match"] == '"9"' and len(last.frames) == 1
    assert last.headers()["Content-Type"] == "application/x-mrec-frame"


def test_a_failed_batch_moves_the_producer_to_the_next_epoch() -> None:
    pipe = Pipeline(Producer("p", 3), "mrf1", batch_frames=1)
    pipe.add([make_frame(s) for s in range(4)])
    a, b = pipe.cut(1), pipe.cut(1)
    refused = mrecd.InvalidRecord("bad")
    pipe.failed(a, refused)
    assert pipe.producer == Producer("p", 4) and pipe.next_seq == 0 and not pipe.pending
    assert pipe.take_error() is None  # b is still in flight
    pipe.failed(b, mrecd.SequenceGap("gap", expected=0))  # a straggler: not the error
    assert pipe.take_error() is refused and pipe.take_error() is None


def test_a_fenced_producer_refuses_further_frames() -> None:
    pipe = Pipeline(Producer("p", 0), "mrf1", batch_frames=1)
    pipe.add([make_frame(0)])
    fenced = mrecd.ProducerFenced("old", epoch=2)
    pipe.failed(pipe.cut(), fenced)
    with pytest.raises(mrecd.ProducerFenced):
        pipe.add([make_frame(1)])


def test_producer_values_are_checked() -> None:
    assert len(Producer.random().id) == 32
    for bad in ("", "a b", "x" * 129, 7):
        with pytest.raises(mrecd.InvalidRecord, match="Producer-Id"):
            Producer(bad)  # type: ignore[arg-type]
    for epoch in (-1, 2**53, True, 1.0):
        with pytest.raises(mrecd.InvalidRecord, match="Producer-Epoch"):
            Producer("ok", epoch)  # type: ignore[arg-type]


def test_requests_carry_the_token_and_escape_names() -> None:
    core = Core("http://host:8000/", token="s3cret")
    request = core.frame("run 1", 3, ["atoms"], ["x", "y"])
    assert str(request.url) == (
        "http://host:8000/v1/records/run%201/trajectory/frames/3?blocks=atoms&columns=x%2Cy"
    )
    assert request.headers["authorization"] == "Bearer s3cret"
    descending = core.frames("r", range(4, -1, -1), 5)
    assert descending.url.params.get("stop") is None and descending.url.params["step"] == "-1"
    assert "authorization" not in Core("http://h").summary("r").headers


@pytest.mark.parametrize("wire", ["mrf1", "json"])
def test_stream_decoder_splits_any_chunking(wire: str) -> None:
    frames = [make_frame(s) for s in range(5)]
    if wire == "json":
        body = b"".join(encode_frames([f], "json")[0][1:-1] + b"\n" for f in frames)
        kind = NDJSON
    else:
        body, kind = encode_frames(frames, "mrf1")
    for size in (1, 7, 1000, len(body)):
        decoder = FrameStreamDecoder(kind)
        got = [f for at in range(0, len(body), size) for f in decoder.feed(body[at : at + size])]
        decoder.close()
        assert got == frames
    truncated = FrameStreamDecoder(kind)
    truncated.feed(body[:-3])
    with pytest.raises(mrecd.FrameBytesError):
        truncated.close()


def test_series_values_take_the_declared_dtype() -> None:
    core = Core("http://h")
    answer = httpx.Response(200, json={"values": [[1, 2, 3], ["NaN", "Infinity", 0]]})
    values = core.series_array(answer, "f64x3")
    assert values.dtype == np.float64 and values.shape == (2, 3) and np.isnan(values[1, 0])
    flags = core.series_array(httpx.Response(200, json={"values": [True, False]}), "bool")
    assert flags.dtype == np.bool_
