"""Typed meta: the sixteen tags, typed JSON forms, writer coercion, reader decoding, inference.

frame.md §10, conventions.md §8, storage.md §5.1.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.model import (
    META_TAGS,
    TAG_LAYOUT,
    Frame,
    coerce_meta,
    decode_meta,
    decode_meta_document,
    dumps_strict,
    encode_meta,
    finite_json,
    infer_tag,
    loads_strict,
    meta_equal,
)

#: One held value per tag, extreme where the tag allows.
HELD: dict[str, Any] = {
    "bool": True,
    "i32": -(2**31),
    "i64": -(2**63),
    "u32": 2**32 - 1,
    "u64": 2**64 - 1,
    "f64": math.nan,
    "string": "NaN",
    "json": {"a": [1, None, {"b": "c"}], "d": 1.5},
    "bool3": (True, False, True),
    "i32x3": (-(2**31), 0, 2**31 - 1),
    "i64x3": (-(2**63), 2**53 + 1, 2**63 - 1),
    "u32x3": (0, 1, 2**32 - 1),
    "u64x3": (0, 2**53, 2**64 - 1),
    "f64x3": (0.0, -0.0, math.inf),
    "f64x6": (1.0, 2.0, 3.0, -math.inf, 0.5, math.nan),
    "f64x9": tuple(float(i) for i in range(9)),
}


def test_there_are_exactly_sixteen_tags() -> None:
    assert set(META_TAGS) == set(HELD)
    assert len(META_TAGS) == 16


@pytest.mark.parametrize(
    "tag", ["f32", "f16", "i8", "i16", "u8", "u16", "c64", "c128", "i64x6", "F64", "", None]
)
def test_tags_outside_the_sixteen_are_refused(tag: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="sixteen tags"):
        Frame(meta={"e": 1.5}, meta_types={"e": tag})
    with pytest.raises(mrecd.InvalidRecord, match="sixteen tags"):
        decode_meta_document({"e": 1.5}, {"e": tag})


# -- typed JSON forms (frame.md §10.4) --------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "held", "spelled"),
    [
        ("f64", math.nan, "NaN"),
        ("f64", math.inf, "Infinity"),
        ("f64", -math.inf, "-Infinity"),
        ("f64", 1.5, 1.5),
        ("u64", 18446744073709551615, "18446744073709551615"),
        ("i64", -9223372036854775808, "-9223372036854775808"),
        ("i64", 2**53, 2**53),
        ("i64", -(2**53), -(2**53)),
        ("i64", 2**53 + 1, "9007199254740993"),
        ("u32", 4294967295, 4294967295),
        ("bool", False, False),
        ("string", "Infinity", "Infinity"),
        ("f64x3", (math.nan, 1.0, -math.inf), ["NaN", 1.0, "-Infinity"]),
        ("u64x3", (0, 2**64 - 1, 5), [0, "18446744073709551615", 5]),
        ("json", {"k": [1, "x"]}, {"k": [1, "x"]}),
    ],
)
def test_each_value_has_exactly_one_spelling(tag: str, held: Any, spelled: Any) -> None:
    assert encode_meta(tag, held) == spelled
    decoded = decode_meta(tag, spelled)
    assert meta_equal(tag, decoded, held)
    json.dumps(spelled, allow_nan=False)  # never a bare NaN token


@pytest.mark.parametrize(
    ("tag", "value", "rule"),
    [
        ("f64", None, "null is not NaN"),
        ("f64", "nan", "typed JSON"),
        ("f64", "inf", "typed JSON"),
        ("f64", "1.5", "typed JSON"),
        ("f64", True, "not a real"),
        ("f64", [1.0], "typed JSON"),
        ("f64", math.inf, "non-finite"),  # a JSON literal such as 1e400 that overflowed
        ("f64", 10**400, "beyond the range"),
        ("i64", 1.5, "not rounded"),
        ("i64", 1.0, "not rounded"),
        ("i64", None, "not rounded"),
        ("i64", True, "not rounded"),
        ("i64", "12", "beyond 2\\^53"),
        ("i64", "+9007199254740993", "beyond 2\\^53"),
        ("i64", "9007199254740993.0", "decimal"),
        ("i64", "0x20000000000001", "decimal"),
        ("i64", 2**63, "outside the range"),
        ("i64", "9223372036854775808", "outside the range"),
        ("i32", 2**31, "outside the range"),
        ("i32", -(2**31) - 1, "outside the range"),
        ("u32", -1, "outside the range"),
        ("u32", 4294967296, "outside the range"),
        ("u64", -1, "outside the range"),
        ("u64", "18446744073709551616", "outside the range"),
        ("bool", 1, "not a boolean"),
        ("bool", "true", "not a boolean"),
        ("string", 3, "not a string"),
        ("string", None, "not a string"),
        ("f64x3", [1.0, 2.0], "exactly 3"),
        ("f64x3", (1.0, 2.0, 3.0), "exactly 3"),  # JSON has arrays, not tuples
        ("f64x3", [1.0, 2.0, None], "null is not NaN"),
        ("u32x3", [1, 2, -3], "outside the range"),
        ("bool3", [True, False, 0], "not a boolean"),
        ("f64x9", [0.0] * 8, "exactly 9"),
    ],
)
def test_a_reader_refuses_every_other_form(tag: str, value: Any, rule: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=rule):
        decode_meta(tag, value)


def test_readers_accept_an_exact_json_integer_beyond_2_53() -> None:
    assert decode_meta("u64", 18446744073709551615) == 18446744073709551615
    assert decode_meta("i64", -(2**63)) == -(2**63)


@pytest.mark.parametrize("bad", [{"a": math.nan}, [math.inf], {1: "x"}, {"a": {1, 2}}, b"x", 1j])
def test_json_values_must_be_finite_json(bad: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        coerce_meta("json", bad)
    with pytest.raises(mrecd.InvalidRecord):
        decode_meta("json", bad)


def test_finite_json_converts_numpy_and_tuples_and_refuses_deep_nesting() -> None:
    assert finite_json({"a": (np.int32(1), np.float64(2.5), np.bool_(True))}) == {
        "a": [1, 2.5, True]
    }
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(mrecd.InvalidRecord, match="nested too deeply"):
        finite_json(deep)


def test_strict_json_helpers_forbid_bare_non_finite_tokens() -> None:
    for token in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError, match="not JSON"):
            loads_strict(f'{{"a": {token}}}')
    with pytest.raises(ValueError):
        dumps_strict({"a": math.nan})
    assert dumps_strict({"a": "é"}) == '{"a":"é"}'


# -- writer coercion (frame.md §10.5) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "value", "rule"),
    [
        ("i32", True, "not an integer"),
        ("i64", 1.0, "never rounded"),
        ("i64", np.float64(2.0), "never rounded"),
        ("i32", 2**31, "outside the range"),
        ("u64", -1, "outside the range"),
        ("f64", True, "boolean is not a real"),
        ("f64", "1.5", "not a real"),
        ("f64", 2**53 + 1, "not exactly an f64"),
        ("f64", 10**400, "beyond the range"),
        ("bool", 1, "not a boolean"),
        ("bool", np.int8(0), "not a boolean"),
        ("f64x3", [1, 2], "exactly 3"),
        ("f64x3", "abc", "sequence"),
        ("f64x3", {"a": 1, "b": 2, "c": 3}, "sequence"),
        ("f64x3", 1.0, "sequence"),
        ("bool3", [1, 0, 1], "not a boolean"),
        ("string", b"abc", "not a string"),
        ("string", 3, "not a string"),
        ("json", math.nan, "not finite JSON"),
        ("json", object(), "not JSON"),
    ],
)
def test_a_writer_refuses_values_not_exactly_of_their_tag(tag: str, value: Any, rule: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=rule):
        coerce_meta(tag, value)
    with pytest.raises(mrecd.InvalidRecord, match=rule):
        Frame(meta={"k": value}, meta_types={"k": tag})


@pytest.mark.parametrize(
    ("tag", "value", "held"),
    [
        ("f64", 3, 3.0),
        ("f64", 2**60, float(2**60)),
        ("f64", np.float64(0.5), 0.5),
        ("i32", np.int64(-5), -5),
        ("u64", np.uint64(2**64 - 1), 2**64 - 1),
        ("f64x3", [1, 2, 3], (1.0, 2.0, 3.0)),
        ("f64x9", np.eye(3), tuple(np.eye(3).ravel().tolist())),
        ("bool3", np.array([True, False, True]), (True, False, True)),
        ("json", (1, 2), [1, 2]),
    ],
)
def test_a_writer_converts_where_exact(tag: str, value: Any, held: Any) -> None:
    out = coerce_meta(tag, value)
    assert out == held
    assert type(out) is type(held)
    if isinstance(held, tuple):
        assert all(type(a) is type(b) for a, b in zip(out, held, strict=True))


def test_an_integer_under_f64_is_stored_as_a_real() -> None:
    frame = Frame(meta={"pe": 3}, meta_types={"pe": "f64"})
    assert frame.meta["pe"] == 3.0 and isinstance(frame.meta["pe"], float)
    assert frame.to_dict()["meta"]["pe"] == 3.0


# -- inference (frame.md §10.6) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        (True, "bool"),
        (1, "i64"),
        (-1, "i64"),
        (-(2**63), "i64"),
        (2**63 - 1, "i64"),
        (2**63, "u64"),
        (2**64 - 1, "u64"),
        (2**64, "f64"),
        (-(2**63) - 1, "f64"),
        (2.5, "f64"),
        (1.0, "f64"),
        ("NaN", "string"),
        ("abc", "string"),
        ([1, 2], "json"),
        ({"a": 1}, "json"),
        (None, "json"),
    ],
)
def test_untagged_values_infer_their_tag(value: Any, tag: str) -> None:
    assert infer_tag(value) == tag


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        (np.int32(1), "i32"),
        (np.uint64(1), "u64"),
        (np.float64(1.0), "f64"),
        (np.bool_(True), "bool"),
        (np.zeros(3), "f64x3"),
        (np.zeros(6), "f64x6"),
        (np.zeros(9), "f64x9"),
        (np.zeros(3, dtype=np.int32), "i32x3"),
        (np.zeros(3, dtype=np.uint64), "u64x3"),
        (np.zeros(3, dtype=bool), "bool3"),
        (np.zeros(4), "json"),
    ],
)
def test_numpy_producer_values_keep_their_exact_tag(value: Any, tag: str) -> None:
    assert infer_tag(value) == tag
    assert Frame(meta={"k": value}).meta_types == {"k": tag}


def test_the_untagged_store_example_reads_as_the_spec_says() -> None:
    attributes = {"a": 1, "b": 2.5, "c": "NaN", "d": [1, 2], "e": None, "f": 18446744073709551615}
    values, tags = decode_meta_document(json.loads(json.dumps(attributes)), {})
    assert tags == {"a": "i64", "b": "f64", "c": "string", "d": "json", "e": "json", "f": "u64"}
    assert values == attributes


def test_storage_examples_of_untagged_inference() -> None:
    raw = json.loads('{"a": -1, "b": 9223372036854775808, "c": 1.5, "d": true, "e": [1,2]}')
    _, tags = decode_meta_document(raw, {})
    assert tags == {"a": "i64", "b": "u64", "c": "f64", "d": "bool", "e": "json"}


def test_an_integer_inferred_f64_becomes_a_real() -> None:
    values, tags = decode_meta_document({"big": 2**64}, {})
    assert tags == {"big": "f64"} and values["big"] == float(2**64)
    assert isinstance(values["big"], float)


def test_a_stale_tag_is_ignored_and_a_bad_tagged_value_refused() -> None:
    values, tags = decode_meta_document({"x": 1.0}, {"x": "f64", "gone": "i32"})
    assert tags == {"x": "f64"} and values == {"x": 1.0}
    with pytest.raises(mrecd.InvalidRecord, match=r"meta\.x"):
        decode_meta_document({"x": "abc"}, {"x": "f64"})


def test_meta_types_must_be_an_object_of_tags() -> None:
    for bad in ([], "f64", None, 3):
        with pytest.raises(mrecd.InvalidRecord, match="JSON object"):
            decode_meta_document({}, bad)
    with pytest.raises(mrecd.InvalidRecord, match="sixteen"):
        decode_meta_document({}, {"stale": "f32"})  # every value is a tag, stale or not


def test_storage_nan_example() -> None:
    values, _ = decode_meta_document({"e": "NaN"}, {"e": "f64"})
    assert math.isnan(values["e"])
    with pytest.raises(mrecd.InvalidRecord):
        decode_meta_document({"e": "abc"}, {"e": "f64"})


def test_meta_types_is_reserved_in_the_document() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="reserved"):
        Frame(meta={"_meta_types": {"a": "i64"}})
    with pytest.raises(mrecd.InvalidRecord, match="reserved"):
        decode_meta_document({"_meta_types": {}}, {})


# -- equality and round trips (frame.md §10.7) ------------------------------------------------


@pytest.mark.parametrize("tag", META_TAGS)
def test_every_tag_round_trips_through_the_frame_json_form(tag: str) -> None:
    frame = Frame(meta={"k": HELD[tag]}, meta_types={"k": tag})
    data = json.loads(json.dumps(frame.to_dict(), allow_nan=False))
    back = Frame.from_dict(data)
    assert back.meta_types == {"k": tag}
    assert back == frame
    _, width = TAG_LAYOUT[tag]
    held = back.meta["k"]
    if width is not None:
        assert isinstance(held, tuple) and len(held) == width


def test_a_whole_valued_f64_does_not_come_back_an_integer() -> None:
    frame = Frame(meta={"e": 2.0})
    back = Frame.from_dict(json.loads(json.dumps(frame.to_dict())))
    assert back.meta_types == {"e": "f64"} and isinstance(back.meta["e"], float)


def test_equality_is_typed() -> None:
    assert Frame(meta={"e": math.nan}) == Frame(meta={"e": math.nan})
    assert Frame(meta={"b": True}) != Frame(meta={"b": 1})
    assert Frame(meta={"n": 1}, meta_types={"n": "i32"}) != Frame(meta={"n": 1})
    assert Frame(meta={"z": -0.0}) != Frame(meta={"z": 0.0})
    assert Frame(meta={"d": {"a": 1, "b": 2}}) == Frame(meta={"d": {"b": 2, "a": 1}})
    assert Frame(meta={"d": [1, 2]}) != Frame(meta={"d": [2, 1]})


def test_the_typed_meta_example_of_the_logical_form() -> None:
    data = {
        "blocks": {},
        "meta": {"com": [0.0, 0.5, 1.0], "n": 3, "title": "water"},
        "meta_types": {"com": "f64x3", "n": "i32", "title": "string"},
    }
    frame = Frame.from_dict(data)
    assert frame.meta == {"com": (0.0, 0.5, 1.0), "n": 3, "title": "water"}
    assert frame.to_dict() == data


def test_a_frame_with_empty_meta_has_no_tags() -> None:
    frame = Frame()
    assert frame.meta == {} and frame.meta_types == {}
    assert frame.to_dict() == {"blocks": {}, "meta": {}, "meta_types": {}}


def test_the_storage_example_tags_every_key() -> None:
    meta = {"smiles": "O", "total_charge": 0, "units": {"length": "angstrom", "mass": "dalton"}}
    frame = Frame(meta=meta)
    assert frame.meta_types == {"smiles": "string", "total_charge": "i64", "units": "json"}
    assert frame.to_dict()["meta"] == meta


def test_a_producer_tag_for_a_missing_key_is_refused_by_the_writer() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="lacks"):
        Frame(meta={}, meta_types={"gone": "f64"})


def test_replace_keeps_the_tags_of_keys_that_stay() -> None:
    frame = Frame(meta={"n": 1, "m": 2}, meta_types={"n": "i32"})
    assert frame.replace(meta={"n": 5}).meta_types == {"n": "i32"}


def test_meta_dump_never_contains_a_bare_nan_token() -> None:
    frame = Frame(meta={k: v for k, v in HELD.items()}, meta_types={k: k for k in HELD})
    text = dumps_strict(frame.to_dict())
    assert "NaN" in text and "Infinity" in text
    assert loads_strict(text)["meta"]["f64"] == "NaN"
