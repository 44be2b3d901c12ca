"""Metrics values without storage: safe names, WAL lines, the duplicate-step rule (§4)."""

from __future__ import annotations

import math

import pytest

from mrecd import InvalidRecord
from mrecd.model import (
    complete_lines,
    decode_safe_name,
    encode_event,
    make_event,
    merge_series,
    parse_wal,
    safe_name,
)

SAFE = [
    ("train/loss", "train%2Floss"),
    ("eval/MAE", "eval%2FMAE"),
    (".", "%2E"),
    ("..", "%2E."),
    ("__x", "%5F_x"),
    ("a b", "a%20b"),
    ("é", "%C3%A9"),
]


@pytest.mark.parametrize(("key", "name"), SAFE)
def test_safe_names_are_the_spec_examples_and_reverse(key: str, name: str) -> None:
    assert safe_name(key) == name
    assert decode_safe_name(name) == key


def test_the_empty_string_is_not_a_key() -> None:
    with pytest.raises(InvalidRecord, match=r"non-empty string \(run-surface.md §4.1\)"):
        safe_name("")


def test_a_later_event_with_the_same_step_wins() -> None:
    w = "2026-08-04T00:00:00Z"
    events = [make_event("train/loss", 0.5, step=100, wall_time=w)]
    events.append(make_event("train/loss", 0.4, step=100, wall_time=w))
    series = merge_series(events)["train/loss"]
    assert series.values == [0.4] and series.steps == [100]


def test_events_without_step_are_never_merged() -> None:
    w = "2026-08-04T00:00:00Z"
    series = merge_series([make_event("k", 1.0, wall_time=w), make_event("k", 2.0, wall_time=w)])
    assert series["k"].values == [1.0, 2.0]


def test_golden_lines_encode_byte_for_byte() -> None:
    event = make_event("train/loss", 0.5, step=1, wall_time="2026-08-04T00:00:01+00:00")
    line = b'{"t":"scalar","k":"train/loss","s":1,"w":"2026-08-04T00:00:01+00:00","v":0.5}\n'
    assert encode_event(event) == line and len(line) == 78


def test_non_finite_values_round_trip_as_strings() -> None:
    w = "2026-08-04T00:00:00Z"
    data = b"".join(encode_event(make_event("k", v, wall_time=w)) for v in (math.nan, -math.inf))
    assert b'"v":"NaN"' in data and b'"v":"-Infinity"' in data
    values = merge_series(parse_wal(data)[0])["k"].values
    assert math.isnan(values[0]) and values[1] == -math.inf


def test_the_reader_sees_complete_lines_only_and_skips_blank_ones() -> None:
    l1 = encode_event(make_event("k", 1.0, step=1, wall_time="2026-08-04T00:00:00Z"))
    events, lines = parse_wal(l1 + b"\n" + b'{"t":"scalar","k":"k"')
    assert [e.value for e in events] == [1.0] and lines == 2
    assert complete_lines(l1 + b"L2") == l1


def test_a_complete_non_object_line_is_refused_as_corruption() -> None:
    with pytest.raises(InvalidRecord, match=r"line 1 is not a single JSON object") as info:
        parse_wal(b"[1,2]\n")
    assert "run-surface.md §4.3" in info.value.message
    assert info.value.path == "metrics/metrics.jsonl:1"


def test_a_complete_line_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(InvalidRecord, match=r"not valid UTF-8 JSON.*run-surface.md §4.3"):
        parse_wal(b'{"k":"\xff"}\n')


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"step": 1.5}, r"step 1.5 is an integer"),
        ({"step": True}, r"step True is an integer"),
        ({"wall_time": "2026-08-04T00:00:00"}, r"explicit offset"),
    ],
)
def test_event_fields_are_checked(kwargs: dict[str, object], message: str) -> None:
    wall = kwargs.pop("wall_time", "2026-08-04T00:00:00Z")
    with pytest.raises(InvalidRecord, match=message):
        make_event("k", 1.0, wall_time=wall, **kwargs)  # type: ignore[arg-type]


def test_a_scalar_value_is_a_number() -> None:
    with pytest.raises(InvalidRecord, match=r"a scalar value is a number.*§4.1"):
        make_event("k", "high", wall_time="2026-08-04T00:00:00Z")
