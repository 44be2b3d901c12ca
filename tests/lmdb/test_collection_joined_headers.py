"""A run's header rests parsed as one joined JSON text (``_joined``) answer
exactly what parsing them one at a time (``_each``) answers, on plain runs
and on rests crafted to make the joints of the joined text lie."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from test_collection_plain_runs import PAYLOAD, _hint, _plain, xyz

from mrecd.bindings.lmdb._plans import _each, _joined, plain_headers


def _raw(rest: str) -> bytes:
    """An update whose header is the hint's ``blocks`` text followed by ``rest``."""
    import json

    text = '{"blocks":' + json.dumps(xyz(), separators=(",", ":")) + rest
    prefix = b"MRF1" + struct.pack("<I", len(text.encode())) + text.encode()
    return prefix + bytes(-len(prefix) % 8) + PAYLOAD


def _same(bufs: list[bytes], keys: tuple[str, ...] = ("pe",), k: int = 0, last: int = -1) -> Any:
    got = plain_headers(bufs, k, _hint(), last, keys)
    assert got == _each(bufs, k, _hint(), last, keys)
    return got


def test_a_plain_run_is_parsed_joined_with_the_answer_of_one_at_a_time() -> None:
    bufs = [_plain(s, -1.0 - s / 8) for s in (0, 1, 5, 6, 70)]
    steps, metas, _ = _same(bufs)
    assert steps == [0, 1, 5, 6, 70] and metas[2] == {"pe": -1.625}
    rests = [b[8 + len(_hint().prefix) + 1 : 8 + struct.unpack_from("<I", b, 4)[0]] for b in bufs]
    assert _joined(rests, -1, ("pe",)) is not None  # the joined path answered


CRAFTED = {
    "two objects in one rest": [
        ',"meta":{"pe":1.0},"step":0},{"meta":{"pe":1.0},"step":1}',
        ',"meta":{"pe":1.0},"step":2}',
    ],
    "a string across a joint": [
        ',"meta":{"pe":"}',
        ',"},"step":0}',
        ',"meta":{"pe":1.0},"step":1},{"meta":{"pe":1.0},"step":2}',
    ],
    "an array across a joint": [
        ',"meta":{"pe":[{}',
        ',}]},"step":0}',
        ',"meta":{"pe":1.0},"step":1},{"meta":{"pe":1.0},"step":2}',
    ],
    "whitespace inside a rest": [',"meta": {"pe":1.0},"step":0}', ',"meta":{"pe":2.0},"step":1}'],
    "an escaped key": [',"meta":{"p\\u0065":1.0},"step":0}', ',"meta":{"pe":2.0},"step":1}'],
    "a string value": [',"meta":{"pe":"NaN"},"step":0}', ',"meta":{"pe":2.0},"step":1}'],
    "a duplicated key": [',"meta":{"pe":1.0},"step":0,"step":1}', ',"meta":{"pe":2.0},"step":2}'],
    "an array value": [',"meta":{"pe":[1.0]},"step":0}', ',"meta":{"pe":2.0},"step":1}'],
    "a step going back": [',"meta":{"pe":1.0},"step":5}', ',"meta":{"pe":2.0},"step":4}'],
    "a bare NaN": [',"meta":{"pe":NaN},"step":0}', ',"meta":{"pe":2.0},"step":1}'],
    "an integer meta": [',"meta":{"pe":1},"step":0}', ',"meta":{"pe":2.0},"step":1}'],
    "a boolean step": [',"meta":{"pe":1.0},"step":true}'],
    "a step beyond i64": [',"meta":{"pe":1.0},"step":9223372036854775808}'],
}


@pytest.mark.parametrize("rests", CRAFTED.values(), ids=CRAFTED.keys())
def test_crafted_rests_answer_as_one_at_a_time(rests: list[str]) -> None:
    bufs = [_raw(rest) for rest in rests] + [_plain(10**6)]
    _same(bufs)
    _same([_plain(-5), *bufs], k=0, last=-10)


def test_keys_that_could_hide_a_joint_are_parsed_one_at_a_time() -> None:
    keys = ("a,{b",)
    rests = [',"meta":{"a,{b":1.0},"step":0}', ',"meta":{"a,{b":2.0},"step":1}']
    steps, _, _ = _same([_raw(rest) for rest in rests], keys=keys)
    assert steps == [0, 1]
    assert _joined([r[1:].encode() for r in rests], -1, keys) is None
