"""``application/x-mrec-records``: records round-trip, stacked or one by one; bad bytes refused."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.codecs import (
    RecordStreamDecoder,
    StoredFrames,
    decode_records,
    encode_frame,
    encode_record,
    stored_record_parts,
)

SYSTEM = mrecd.Frame({"atoms": {"element": np.array(["O", "H", "H"])}}, meta={"formula": "H2O"})


def encode_stored_record(*args: Any, **kwargs: Any) -> bytes:
    """A stored record's bytes: its parts joined."""
    return b"".join(stored_record_parts(*args, **kwargs))


def frames(n: int, *, box: bool = False) -> list[mrecd.Frame]:
    out = []
    for s in range(n):
        column = mrecd.Column(np.arange(3.0) + s, validity=np.array([True, s % 2 == 0, True]))
        out.append(
            mrecd.Frame(
                {"atoms": {"x": column, "id": np.arange(3, dtype=np.uint64)}, "probe": {"v": [s]}},
                meta={"pe": -float(s), "tag": f"s{s}"},
                step=10 * s,
                time=0.5 * s if s % 2 else None,
                box=mrecd.Box(np.eye(3) * 20.0) if box and s == 1 else None,
            )
        )
    return out


def items(body: bytes) -> list[bytes]:
    """The length-prefixed items of a stream."""
    out, at = [], 0
    while at < len(body):
        (size,) = struct.unpack_from("<Q", body, at)
        out.append(body[at + 8 : at + 8 + size])
        at += 8 + size
    return out


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_records_round_trip(n: int) -> None:
    trajectory = frames(n, box=True)
    body = encode_record({"k": n}, SYSTEM, trajectory, {"r": 4}) + encode_record({}, None, None)
    first, second = decode_records(body)
    assert first.meta == {"k": n} and first.system == SYSTEM and first.extra == {"r": 4}
    assert first.frames == trajectory
    assert second.meta == {} and second.system is None and second.frames is None


def test_alike_frames_travel_stacked_in_one_value() -> None:
    body = encode_record({}, None, frames(5))
    header = json.loads(items(body)[0])
    assert len(items(body)) == 2 and header["stacked"]["rows"] == {
        "atoms": [3] * 5,
        "probe": [1] * 5,
    }


def test_frames_that_differ_travel_one_by_one() -> None:
    mixed = [*frames(2), mrecd.Frame({"atoms": {"x": [1.0, 2.0, 3.0]}}, step=99)]
    body = encode_record({}, None, mixed)
    assert len(items(body)) == 4 and "stacked" not in json.loads(items(body)[0])
    (item,) = decode_records(body)
    assert item.frames == mixed


def test_the_decoder_takes_any_chunking() -> None:
    body = b"".join(encode_record({"k": k}, SYSTEM, frames(k % 3)) for k in range(6))
    decoder = RecordStreamDecoder()
    got = []
    for at in range(0, len(body), 7):
        got += decoder.feed(body[at : at + 7])
    decoder.close()
    assert [g.meta["k"] for g in got] == list(range(6))
    assert all(g.frames == frames(k % 3) for k, g in enumerate(got))


def length(data: bytes) -> bytes:
    return struct.pack("<Q", len(data)) + data


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (encode_record({}, SYSTEM, frames(2))[:-3], "ended inside record 0"),
        (b"\x01\x00", "ended inside record 0"),
        (length(b"[1]"), "header is a JSON object"),
        (length(b"{nope"), "not JSON"),
        (length(b'{"system": 1}'), "system is true or false"),
        (length(b'{"system": false, "frames": -1}'), "not negative"),
        (length(b'{"system": false, "frames": "2"}'), "a count or null"),
        (length(b'{"system": false, "frames": 1}') + length(b"MRF0...."), "magic"),
    ],
)
def test_bad_streams_are_refused(body: bytes, match: str) -> None:
    with pytest.raises(mrecd.FrameBytesError, match=match):
        list(decode_records(body))


def test_a_stacked_header_that_does_not_match_its_rows_is_refused() -> None:
    head, stack = items(encode_record({}, None, frames(3)))
    header = json.loads(head)
    header["stacked"]["rows"]["atoms"] = [3, 3, 2]
    with pytest.raises(mrecd.FrameBytesError, match="stacked rows"):
        list(decode_records(length(json.dumps(header).encode()) + length(stack)))
    header = json.loads(head)
    header["frames"] = 2
    header["stacked"]["frames"] = header["stacked"]["frames"][:2]
    header["stacked"]["rows"] = {"atoms": [3, 6], "probe": [1, 2]}
    (item,) = decode_records(length(json.dumps(header).encode()) + length(stack))
    assert [f.step for f in item.frames or []] == [0, 10]


def test_a_meta_that_is_not_an_object_is_invalid() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="meta is a JSON object"):
        list(decode_records(length(b'{"meta": [1], "system": false, "frames": null}')))


# -- stored updates (the server's batch read when no block carries forward) --------------------

TAGS = {"pe": "f64", "tag": "string"}


def boxed(n: int) -> tuple[list[mrecd.Frame], list[bytes]]:
    """``n`` resolved frames whose cell changes at frames 0 and 1 only, and their
    stored updates (the cell only where it changes, meta typed by ``TAGS``)."""
    cells = [mrecd.Box(np.eye(3) * 20.0), mrecd.Box(np.eye(3) * 21.0)]

    def frame(f: mrecd.Frame, box: mrecd.Box | None) -> mrecd.Frame:
        return mrecd.Frame(f.blocks, meta=f.meta, step=f.step, time=f.time, box=box)

    made = frames(n)
    stored = [
        encode_frame(frame(f, cells[s] if s < 2 else None), meta_types=False)
        for s, f in enumerate(made)
    ]
    return [frame(f, cells[min(s, 1)]) for s, f in enumerate(made)], stored


def test_stored_updates_round_trip_with_the_cell_carried_forward() -> None:
    resolved, stored = boxed(4)
    system = encode_frame(SYSTEM, meta_types=True)
    body = encode_stored_record(
        {"k": 1}, system, stored, meta_types=TAGS, boxes=[0, 1], extra={"r": 9}
    )
    header = json.loads(items(body)[0])
    assert header["updates"] == {"meta_types": TAGS, "boxes": [0, 1]} and header["frames"] == 4
    assert items(body)[2:] == stored  # the stored bytes as they are
    (item,) = decode_records(body)
    assert isinstance(item.frames, StoredFrames) and len(item.frames) == 4
    assert item.meta == {"k": 1} and item.system == SYSTEM and item.extra == {"r": 9}
    assert item.frames == resolved and item.frames[-1] == resolved[3]
    assert item.frames[1:3] == resolved[1:3] and item.frames[2].box == resolved[1].box
    with pytest.raises(IndexError):
        item.frames[4]


def test_stored_frames_are_built_on_first_use() -> None:
    _, stored = boxed(3)
    broken = stored[2][:8] + b"{" * (len(stored[2]) - 8)  # magic and length kept
    (item,) = decode_records(encode_stored_record({}, None, [*stored[:2], broken], meta_types=TAGS))
    assert item.frames is not None and item.frames[0].step == 0
    with pytest.raises(mrecd.FrameBytesError) as caught:
        item.frames[2]
    assert caught.value.path is not None and caught.value.path.startswith(
        "records[0].trajectory[2]"
    )


@pytest.mark.parametrize(
    ("member", "match"),
    [
        ([1], "updates is"),
        ({"meta_types": {"pe": 1}}, "maps keys to tags"),
        ({"meta_types": {}, "boxes": [1, 0]}, "ascending"),
        ({"meta_types": {}, "boxes": [2]}, "ascending"),
    ],
)
def test_a_bad_updates_member_is_refused(member: object, match: str) -> None:
    _, stored = boxed(2)
    header = {"meta": {}, "system": False, "frames": 2, "updates": member}
    body = length(json.dumps(header).encode()) + b"".join(length(v) for v in stored)
    with pytest.raises(mrecd.FrameBytesError, match=match):
        list(decode_records(body))


def test_an_update_that_is_not_mrf1_is_refused_at_once() -> None:
    header = {"meta": {}, "system": False, "frames": 1, "updates": {"meta_types": {}}}
    with pytest.raises(mrecd.FrameBytesError, match="not MRF1"):
        list(decode_records(length(json.dumps(header).encode()) + length(b"MRF0" + bytes(8))))


def test_stored_frames_alike_and_unlike_decode_as_decode_frame_does() -> None:
    """Updates whose header blocks repeat (viewed by the first one's plan) and
    updates that differ in rows, shape or dtype all decode to their frames."""
    made = []
    for s, n in enumerate([3, 3, 3, 2, 2, 4]):
        xyz = np.arange(3.0 * n).reshape(n, 3) + s
        columns: dict[str, object] = {"xyz": xyz, "q": np.arange(n, dtype=np.int32) - s}
        if s == 4:
            columns["q"] = np.arange(n, dtype=np.int64)
        made.append(mrecd.Frame({"atoms": columns}, meta={"pe": -float(s)}, step=s))
    stored = [encode_frame(f, meta_types=False) for f in made]
    (item,) = decode_records(encode_stored_record({}, None, stored, meta_types={"pe": "f64"}))
    assert item.frames is not None and list(item.frames) == made
    assert item.frames[4]["atoms"]["q"].dtype == "i64"
    assert not item.frames[1]["atoms"]["xyz"].values.flags.writeable
