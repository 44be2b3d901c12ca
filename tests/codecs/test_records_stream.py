"""The records stream decoder's short ways give what the general ones give, and refuse as they do.

The decoder splits items in place (each a view of the chunk it arrived in),
joins only an item that spans chunks, scans a compact header without
``json.loads``'s wrapping and takes a stored record's ``updates`` member
checked once for a stream's records that share it. Each is held here to the
plain reading: the same records from any chunking, the same header values as
``json.loads``, the same refusals.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.codecs import (
    RecordStreamDecoder,
    SystemCache,
    decode_records,
    encode_frame,
    stored_record_parts,
)

SYSTEM = encode_frame(
    mrecd.Frame({"atoms": {"element": np.array(["O", "H", "H"])}}, meta={"formula": "H2O"}),
    meta_types=True,
)
TAGS = {"pe": "f64"}


def encode_stored_record(*args: Any, **kwargs: Any) -> bytes:
    """A stored record's bytes: its parts joined."""
    return b"".join(stored_record_parts(*args, **kwargs))


def updates(n: int, atoms: int = 3) -> list[bytes]:
    """``n`` stored updates of ``atoms`` rows (the layout a collection stores)."""
    return [
        encode_frame(
            mrecd.Frame(
                {"atoms": {"x": np.arange(atoms, dtype=float) + s}}, meta={"pe": -float(s)}, step=s
            ),
            meta_types=False,
        )
        for s in range(n)
    ]


def stream(count: int) -> bytes:
    """``count`` stored records of 0-4 updates, with and without a system."""
    return b"".join(
        encode_stored_record(
            {"k": k},
            SYSTEM if k % 2 else None,
            updates(k % 5, 2 + k % 3),
            meta_types=TAGS,
            boxes=[],
            extra={"r": k},
        )
        for k in range(count)
    )


def length(data: bytes) -> bytes:
    return struct.pack("<Q", len(data)) + data


def fed(body: bytes, size: int) -> list[mrecd.codecs.RecordItem]:
    decoder = RecordStreamDecoder()
    got = []
    for at in range(0, len(body), size):
        got += decoder.feed(body[at : at + size])
    decoder.close()
    return got


@pytest.mark.parametrize("size", [1, 5, 8, 9, 61, 256, 4096])
def test_any_chunking_gives_the_records_of_the_whole_body(size: int) -> None:
    body = stream(12)
    whole = list(decode_records(body))
    got = fed(body, size)
    assert [g.extra for g in got] == [w.extra for w in whole] == [{"r": k} for k in range(12)]
    assert [g.meta for g in got] == [{"k": k} for k in range(12)]
    assert [g.system for g in got] == [w.system for w in whole]
    assert [list(g.frames or []) for g in got] == [list(w.frames or []) for w in whole]
    assert [len(g.frames or []) for g in got] == [k % 5 for k in range(12)]


def test_frames_view_the_stream_read_only() -> None:
    (item,) = decode_records(encode_stored_record({}, None, updates(2), meta_types=TAGS))
    assert item.frames is not None
    x = item.frames[1]["atoms"]["x"].values
    assert x.tolist() == [1.0, 2.0, 3.0] and not x.flags.writeable


def test_a_stream_cut_inside_an_item_spanning_chunks_is_refused() -> None:
    body = stream(3)
    decoder = RecordStreamDecoder()
    for at in range(0, len(body) - 5, 64):
        decoder.feed(body[at : min(at + 64, len(body) - 5)])
    with pytest.raises(mrecd.FrameBytesError, match="ended inside record 2"):
        decoder.close()


@pytest.mark.parametrize(
    "text",
    [
        b' {"system": false, "frames": null, "meta": {"a": 1}}',  # whitespace around
        b'{"system": false, "frames": null, "meta": {"a": 1}}\n',
        b'\xef\xbb\xbf{"system":false,"frames":null,"meta":{"a":1}}',  # a UTF-8 BOM
        '{"system":false,"frames":null,"meta":{"a":1}}'.encode("utf-16"),
        b'{"system":false,"frames":null,"meta":{"a":1},"x":NaN}',
    ],
)
def test_headers_read_as_json_loads_reads_them(text: bytes) -> None:
    (item,) = decode_records(length(text))
    want = json.loads(text)
    assert item.meta == want["meta"] == {"a": 1}
    assert item.extra.keys() == want.keys() - {"meta", "system", "frames"}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (b'{"system":false,"frames":null} x', "not JSON"),
        (b'{"system":false,"frames":null}{}', "not JSON"),
        (b'{"system":false,"frames":null', "not JSON"),
        (b'{"system":false,"frames":nul}', "not JSON"),
        (b'{"system":false,"frames":null,"a":"\xff"}', "not JSON"),
        (b"[]", "JSON object"),
    ],
)
def test_headers_json_loads_refuses_are_refused(text: bytes, match: str) -> None:
    with pytest.raises(mrecd.FrameBytesError, match=match):
        list(decode_records(length(text)))


def stored(member: object, values: list[bytes], k: int = 0) -> bytes:
    header = {"r": k, "meta": {}, "system": False, "frames": len(values), "updates": member}
    return length(json.dumps(header).encode()) + b"".join(length(v) for v in values)


def test_records_sharing_a_member_take_its_tags_and_their_own_cells() -> None:
    plain = {"meta_types": TAGS}
    body = stored(plain, updates(2)) + stored({**plain, "boxes": [0]}, updates(1), 1)
    body += stored(plain, updates(3), 2)
    first, boxed, last = decode_records(body)
    assert [f.meta for f in last.frames or []] == [{"pe": -0.0}, {"pe": -1.0}, {"pe": -2.0}]
    assert [f.meta_types for f in first.frames or []] == [TAGS, TAGS]
    assert boxed.frames is not None and len(boxed.frames) == 1


@pytest.mark.parametrize(
    ("member", "match"),
    [
        ({"meta_types": {"pe": 1}}, "maps keys to tags"),
        ({"meta_types": {"pe": "f64"}, "boxes": [1]}, "ascending"),
        ({"meta_types": {"pe": "f64"}, "boxes": [0, 0]}, "ascending"),
        ({"meta_types": {"pe": "f64"}, "boxes": "0"}, "ascending"),
        ({"meta_types": TAGS, "boxes": None}, "ascending"),
        ([TAGS], "updates is"),
    ],
)
def test_a_bad_member_after_a_good_one_is_refused(member: object, match: str) -> None:
    body = stored({"meta_types": TAGS}, updates(1)) + stored(member, updates(1), 1)
    with pytest.raises(mrecd.FrameBytesError, match=match) as caught:
        list(decode_records(body))
    assert caught.value.path == "records[1].updates"


@pytest.mark.parametrize("bad", [b"MRF0" + bytes(8), b"MRF1", b"MRF1abc", b""])
@pytest.mark.parametrize("system", [False, True])
def test_an_update_that_is_not_mrf1_is_refused_with_its_ordinal(bad: bytes, system: bool) -> None:
    good = updates(3)
    header = {
        "meta": {},
        "system": system,
        "frames": 3,
        "updates": {"meta_types": TAGS},
    }
    items = [SYSTEM] if system else []
    body = length(json.dumps(header).encode()) + b"".join(
        length(v) for v in [*items, good[0], bad, good[2]]
    )
    for size in (len(body), 3):
        with pytest.raises(mrecd.FrameBytesError, match="not MRF1") as caught:
            fed(body, size)
        assert caught.value.path == "records[0].trajectory[1]"


def test_a_bad_system_is_refused_before_a_bad_update() -> None:
    header = {"meta": {}, "system": True, "frames": 1, "updates": {"meta_types": TAGS}}
    body = length(json.dumps(header).encode()) + length(b"MRF0" + bytes(8)) + length(b"nope")
    with pytest.raises(mrecd.FrameBytesError, match="magic") as caught:
        list(decode_records(body))
    assert caught.value.path is not None and caught.value.path.startswith("records[0].system")


def test_a_header_without_frames_has_no_trajectory() -> None:
    (item,) = decode_records(length(b'{"system": false, "meta": {"a": 1}}'))
    assert item.frames is None and item.meta == {"a": 1} and item.extra == {}


def test_stored_record_parts_keep_each_stored_value_and_join_to_the_record_bytes() -> None:
    values = updates(3)
    meta = {"name": "wäter", "n": 2}
    parts = stored_record_parts(meta, SYSTEM, values, meta_types=TAGS, boxes=[0, 2], extra={"r": 5})
    assert all(any(part is value for part in parts) for value in values)  # not copied
    body = b"".join(parts)
    header = {"r": 5, "meta": meta, "system": True, "frames": 3}
    header["updates"] = {"meta_types": TAGS, "boxes": [0, 2]}
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    assert body.startswith(length(text) + length(SYSTEM) + length(values[0]))
    with pytest.raises(ValueError):
        encode_stored_record({"x": float("nan")}, None, [], meta_types={})


def systemed(k: int, atoms: int) -> bytes:
    system = encode_frame(mrecd.Frame({"atoms": {"q": np.arange(atoms, dtype=float)}}))
    return encode_stored_record({"k": k}, system, updates(1, atoms), meta_types=TAGS)


def test_a_system_cache_shares_systems_of_equal_bytes_up_to_its_limit() -> None:
    cache = SystemCache()
    body = systemed(0, 3) + systemed(1, 4) + systemed(2, 3)
    first = list(RecordStreamDecoder(cache).feed(body))
    again = list(RecordStreamDecoder(cache).feed(systemed(3, 4)))
    assert len(cache) == 2 and first[0].system is first[2].system
    assert again[0].system is first[1].system and first[0].system != first[1].system
    assert again[0].system == next(decode_records(systemed(3, 4))).system
    small = SystemCache(limit=1)
    decoded = list(RecordStreamDecoder(small).feed(body))
    assert len(small) == 0 and decoded[0].system == first[0].system


def test_a_bad_system_is_refused_and_not_kept() -> None:
    cache = SystemCache()
    header = {"meta": {}, "system": True, "frames": None}
    body = length(json.dumps(header).encode()) + length(b"MRF1" + bytes(4))
    for _ in range(2):
        with pytest.raises(mrecd.FrameBytesError):
            RecordStreamDecoder(cache).feed(body)
    assert len(cache) == 0


def test_a_full_system_cache_drops_its_oldest_first() -> None:
    frames = [mrecd.Frame({"atoms": {"q": np.arange(n, dtype=float)}}) for n in (1, 2, 3)]
    raws = [encode_frame(frame) for frame in frames]
    cache = SystemCache(limit=len(raws[1]) + len(raws[2]))
    for raw, frame in zip(raws, frames, strict=True):
        cache.put(raw, frame)
    assert cache.get(raws[0]) is None and cache.get(raws[1]) is frames[1]
    assert cache.get(raws[2]) is frames[2] and len(cache) == 2


# -- stored frames: the header text after a planned ``blocks`` text -------------------------


def reheader(value: bytes, text: bytes) -> bytes:
    """MRF1 ``value`` with its header text replaced by ``text`` (payload kept)."""
    (length,) = struct.unpack_from("<I", value, 4)
    payload = value[8 + length + (-(8 + length) & 7) :]
    head = b"MRF1" + struct.pack("<I", len(text)) + text
    return head + bytes(-len(head) & 7) + payload


def header_text(value: bytes) -> bytes:
    (length,) = struct.unpack_from("<I", value, 4)
    return value[8 : 8 + length]


def as_decoded(values: list[bytes], tags: dict[str, str]) -> list[object]:
    """What the general decoder makes of each value: its frame, or its refusal."""
    out: list[object] = []
    for value in values:
        try:
            out.append(mrecd.codecs.decode_frame(value, meta_types=tags))
        except mrecd.FrameBytesError as exc:
            out.append(type(exc))
    return out


def as_stored(values: list[bytes], tags: dict[str, str]) -> list[object]:
    (item,) = decode_records(encode_stored_record({}, None, values, meta_types=tags))
    assert item.frames is not None
    out: list[object] = []
    for k in range(len(values)):
        try:
            out.append(item.frames[k])
        except mrecd.FrameBytesError as exc:
            out.append(type(exc))
    return out


def variants() -> list[bytes]:
    """Updates after a first plain one: the same ``blocks`` text with headers
    the short way takes, and ones it must leave to the general decoder."""
    first, second = updates(2)
    text = header_text(second)
    cut = text.index(b',"meta"')
    blocks, rest = text[:cut], text[cut + 1 : -1]
    return [
        first,
        second,
        reheader(second, blocks + b"}"),  # no meta, no step
        reheader(second, blocks + b"," + rest.replace(b"-1.0", b"-1") + b"}"),  # an int f64
        reheader(second, blocks + b"," + rest.replace(b"-1.0", b'"NaN"') + b"}"),
        reheader(second, blocks + b"," + rest.replace(b"-1.0", b"1e400") + b"}"),
        reheader(second, blocks + b"," + rest.replace(b"-1.0", b"NaN") + b"}"),  # bare: refused
        reheader(second, blocks + b", " + rest + b"}"),  # whitespace
        reheader(second, blocks + b"," + rest + b" }"),
        reheader(second, blocks + b"," + rest + b',"odd":1}'),  # an unknown key: refused
        reheader(second, blocks + b"," + rest + b',"blocks":{}}'),  # the last blocks wins
        reheader(second, blocks + b"," + rest.replace(b'"pe"', b'"pf"') + b"}"),  # untagged
        reheader(second, blocks + b',"meta":{"pe":-1.0,"_meta_types":2.0},"step":1}'),
        reheader(second, blocks + b',"meta":{"pe":-1.0},"meta_types":{"pe":"i64"},"step":1}'),
        reheader(second, blocks + b"," + rest + b"}")[:-8],  # the payload is short
        reheader(second, blocks + b"," + rest[:-1] + b"\xff}"),  # not UTF-8
    ]


def test_stored_frames_after_a_planned_one_decode_as_decode_frame_does() -> None:
    values = variants()
    got, want = as_stored(values, TAGS), as_decoded(values, TAGS)
    assert got == want
    assert isinstance(got[2], mrecd.Frame) and got[2].meta == {} and got[2].step is None
    assert isinstance(got[3], mrecd.Frame) and got[3].meta == {"pe": -1.0}
    assert type(got[3].meta["pe"]) is float and got[5] == mrecd.FrameBytesError
    assert isinstance(got[4], mrecd.Frame) and np.isnan(got[4].meta["pe"])
    assert got[6] == got[9] == got[12] == got[13] == got[15] == mrecd.FrameBytesError
    assert isinstance(got[11], mrecd.Frame) and got[11].meta_types == {"pf": "f64"}


def test_plain_meta_keeps_the_tags_in_the_meta_order() -> None:
    tags = {"a": "f64", "b": "f64"}
    frame = mrecd.Frame({"atoms": {"x": [1.0]}}, meta={"b": 2.5, "a": -1.0}, step=3)
    value = encode_frame(frame, meta_types=False)
    (item,) = decode_records(encode_stored_record({}, None, [value, value], meta_types=tags))
    assert item.frames is not None
    for got in item.frames:
        assert list(got.meta_types) == ["b", "a"] and got.meta == {"b": 2.5, "a": -1.0}
    assert item.frames[0].meta_types is not item.frames[1].meta_types
