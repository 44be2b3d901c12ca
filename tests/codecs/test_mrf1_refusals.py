"""Decoder refusals: each malformed value raises FrameBytesError only (lmdb.md §6.2)."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.model import Frame


def value(header: Any, payload: bytes = b"", *, raw_header: bytes | None = None) -> bytes:
    """Frame bytes around ``header`` (a JSON-able object, or raw header bytes)."""
    text = (
        raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    )
    prefix = b"MRF1" + struct.pack("<I", len(text)) + text
    return prefix + bytes(-len(prefix) % 8) + payload


def column(**entry: Any) -> dict[str, Any]:
    return {
        "blocks": {
            "a": {
                "count": 2,
                "structural_shape": None,
                "columns": {"x": {"dtype": "f64", "shape": [2], "offset": 0, **entry}},
            }
        },
        "meta": {},
    }


PAYLOAD = np.array([1.0, 2.0]).tobytes()


def refused(data: Any, rule: str, **kwargs: Any) -> None:
    with pytest.raises(mrecd.FrameBytesError, match=rule):
        mrecd.decode_frame(data, **kwargs)


def test_the_reference_value_decodes() -> None:
    frame = mrecd.decode_frame(value(column(), PAYLOAD))
    assert frame["a"]["x"].values.tolist() == [1.0, 2.0]


def test_frame_bytes_error_is_an_invalid_record() -> None:
    assert issubclass(mrecd.FrameBytesError, mrecd.InvalidRecord)
    assert mrecd.FrameBytesError.status == 400


@pytest.mark.parametrize("magic", [b"MRF2", b"mrf1", b"\x00\x00\x00\x00", b"PK\x03\x04"])
def test_unknown_magic(magic: bytes) -> None:
    refused(magic + value(column(), PAYLOAD)[4:], "magic")


@pytest.mark.parametrize("size", [0, 1, 4, 7])
def test_a_value_shorter_than_8_bytes(size: int) -> None:
    refused(b"MRF1\x00\x00\x00\x00"[:size], "prefix alone is 8")


@pytest.mark.parametrize("length", [1000, 2**32 - 1, 33])
def test_header_length_past_the_end(length: int) -> None:
    data = bytearray(value({"blocks": {}, "meta": {}}))
    struct.pack_into("<I", data, 4, length)
    refused(bytes(data), "runs past the end")


def test_missing_padding_is_past_the_end() -> None:
    data = value({"blocks": {}, "meta": {}})
    refused(data.rstrip(b"\x00")[: 8 + 22], "runs past the end")


@pytest.mark.parametrize(
    ("raw", "rule"),
    [
        (b"{not json}", "not UTF-8 JSON"),
        (b"\xff\xfe{}", "not UTF-8 JSON"),
        (b'{"blocks":{},"meta":{"pe":NaN}}', "not UTF-8 JSON"),
        (b'{"blocks":{},"meta":{"pe":Infinity}}', "not UTF-8 JSON"),
        (b'{"blocks":{},"meta":{"pe":-Infinity}}', "not UTF-8 JSON"),
        (b"[1,2]", "not a JSON object"),
        (b'"blocks"', "not a JSON object"),
        (b"null", "not a JSON object"),
        (b"[" * 100_000, "not UTF-8 JSON"),
        (b'{"blocks":{},"meta":{"big":1' + b"0" * 5000 + b"}}", "not UTF-8 JSON"),
    ],
    ids=[
        "garbage",
        "not-utf8",
        "bare-nan",
        "bare-inf",
        "bare-neg-inf",
        "array",
        "string",
        "null",
        "deep",
        "huge-int",
    ],
)
def test_header_not_json_or_not_an_object(raw: bytes, rule: str) -> None:
    refused(value(None, raw_header=raw), rule)


@pytest.mark.parametrize(
    ("header", "rule"),
    [
        ({"meta": {}}, "blocks is not an object"),
        ({"blocks": [], "meta": {}}, "blocks is not an object"),
        ({"blocks": {}, "meta": {}, "x_vendor": 1}, "unknown header keys"),
        ({"blocks": {"": {"count": 0, "columns": {}}}, "meta": {}}, "non-empty"),
        ({"blocks": {"box": {"count": 0, "columns": {}}}, "meta": {}}, "box"),
        ({"blocks": {"a": []}, "meta": {}}, "block entry is a JSON object"),
        ({"blocks": {"a": {"count": 0, "columns": {}, "unit": "A"}}, "meta": {}}, "unknown block"),
        ({"blocks": {"a": {"columns": {}}}, "meta": {}}, "count"),
        ({"blocks": {"a": {"count": -1, "columns": {}}}, "meta": {}}, "count"),
        ({"blocks": {"a": {"count": 1.0, "columns": {}}}, "meta": {}}, "count"),
        ({"blocks": {"a": {"count": "1", "columns": {}}}, "meta": {}}, "count"),
        ({"blocks": {"a": {"count": 0, "columns": []}}, "meta": {}}, "columns is an object"),
        (
            {"blocks": {"a": {"count": 4, "structural_shape": [3], "columns": {}}}, "meta": {}},
            "does not multiply",
        ),
        (
            {"blocks": {"a": {"count": 4, "structural_shape": "4", "columns": {}}}, "meta": {}},
            "structural_shape",
        ),
        ({"blocks": {"a": {"count": 0, "columns": {}, "targets": ["x"]}}, "meta": {}}, "targets"),
        (
            {"blocks": {"a": {"count": 0, "columns": {}, "targets": {"x": "atoms"}}}, "meta": {}},
            "u64\\[N\\]",
        ),
        (
            {"blocks": {"a": {"count": 0, "columns": {}, "attributes": [1]}}, "meta": {}},
            "attributes",
        ),
        ({"blocks": {}, "meta": []}, "meta"),
        ({"blocks": {}, "meta": {"a": 1}, "meta_types": {"a": "f32"}}, "sixteen"),
        ({"blocks": {}, "meta": {"a": "x"}, "meta_types": {"a": "f64"}}, "typed JSON"),
        ({"blocks": {}, "meta": {"a": None}, "meta_types": {"a": "f64"}}, "null is not NaN"),
        ({"blocks": {}, "meta": {"_meta_types": {}}}, "reserved"),
        ({"blocks": {}, "meta": {}, "step": 1.5}, "not rounded"),
        ({"blocks": {}, "meta": {}, "step": "1"}, "beyond 2\\^53"),
        ({"blocks": {}, "meta": {}, "time": None, "step": 0}, None),
        ({"blocks": {}, "meta": {}, "time": "x"}, "typed JSON"),
        ({"blocks": {}, "meta": {}, "box": {"vectors": [[1, 0], [0, 1]]}}, "3, 3"),
        ({"blocks": {}, "meta": {}, "box": [1]}, "box"),
        (
            {
                "blocks": {},
                "meta": {},
                "box": {
                    "vectors": [[1, 0, 0]] * 3,
                    "cell_defined": False,
                    "boundary": [True, False, False],
                },
            },
            "periodic on no axis",
        ),
    ],
)
def test_header_of_the_wrong_shape(header: dict[str, Any], rule: str | None) -> None:
    if rule is None:  # "time": null means no time
        assert mrecd.decode_frame(value(header)).time is None
        return
    refused(value(header), rule)


@pytest.mark.parametrize("dtype", ["float", "f32", "json", "bytes", "F64", None, 8, ["f64"]])
def test_a_dtype_outside_the_set(dtype: Any) -> None:
    refused(value(column(dtype=dtype), PAYLOAD), "outside the closed set")


@pytest.mark.parametrize("offset", [1, 4, 12])
def test_an_offset_not_a_multiple_of_8(offset: int) -> None:
    refused(value(column(offset=offset), PAYLOAD + bytes(16)), "not a multiple of 8")


@pytest.mark.parametrize("offset", [1, 4, 3])
def test_a_validity_offset_not_a_multiple_of_8(offset: int) -> None:
    refused(value(column(validity=offset), PAYLOAD + bytes(16)), "not a multiple of 8")


@pytest.mark.parametrize(
    ("entry", "payload"),
    [
        ({}, PAYLOAD[:15]),
        ({"offset": 8}, PAYLOAD),
        ({"validity": 16}, PAYLOAD + bytes(1)),
        ({"offset": 2**62}, PAYLOAD),
        ({"validity": 2**63}, PAYLOAD),
        ({"offset": 2**70}, PAYLOAD),
    ],
    ids=["short", "shifted", "validity", "huge-offset", "huge-validity", "bigint-offset"],
)
def test_a_buffer_past_the_end(entry: dict[str, Any], payload: bytes) -> None:
    refused(value(column(**entry), payload), "past the end")


@pytest.mark.parametrize(
    ("entry", "rule"),
    [
        ({"shape": [3]}, "does not start with the block count"),
        ({"shape": []}, "non-empty list"),
        ({"shape": 2}, "non-empty list"),
        ({"shape": [2, -1]}, "non-negative"),
        ({"shape": [2, 1.5]}, "non-negative"),
        ({"shape": [2, True]}, "non-negative"),
        ({"shape": [2, 2**40, 2**40]}, "past the end|too large"),
        ({"shape": [2, 2**64]}, "past the end|too large"),
        ({"offset": -8}, "non-negative"),
        ({"offset": "0"}, "non-negative"),
        ({"offset": None}, "non-negative"),
        ({"values": [1.0, 2.0]}, "offset, not values"),
        ({"validity": -8}, "non-negative"),
        ({"precision": 0}, "precision"),
        ({"precision": "1e-3"}, "precision"),
        ({"unit": "A"}, "unknown column entry keys"),
    ],
)
def test_shape_count_size_and_entry_errors(entry: dict[str, Any], rule: str) -> None:
    refused(value(column(**entry), PAYLOAD + bytes(8)), rule)


def test_a_column_entry_must_be_an_object() -> None:
    header = {"blocks": {"a": {"count": 0, "columns": {"x": [1]}}}, "meta": {}}
    refused(value(header), "column entry is a JSON object")


@pytest.mark.parametrize("name", ["_validity", ""])
def test_reserved_column_names(name: str) -> None:
    header = column()
    header["blocks"]["a"]["columns"] = {name: header["blocks"]["a"]["columns"]["x"]}
    refused(value(header, PAYLOAD), "cannot name a column")


@pytest.mark.parametrize(
    ("entry", "rule"),
    [
        ({"dtype": "string", "values": ["a"]}, "2 strings"),
        ({"dtype": "string", "values": ["a", 1]}, "2 strings"),
        ({"dtype": "string", "values": "ab"}, "2 strings"),
        ({"dtype": "string", "offset": 0, "values": ["a", "b"]}, "not an offset"),
        ({"dtype": "u64", "precision": 0.001}, "f64 only"),
    ],
)
def test_string_and_precision_entries(entry: dict[str, Any], rule: str) -> None:
    header = column()
    base = {"shape": [2], **entry}
    if entry.get("dtype") == "string" and "offset" not in entry:
        base.pop("offset", None)
    header["blocks"]["a"]["columns"]["x"] = {
        **({"offset": 0} if "values" not in entry else {}),
        **base,
    }
    refused(value(header, PAYLOAD), rule)


@pytest.mark.parametrize("byte", [2, 255])
def test_bool_and_validity_bytes_are_0_or_1(byte: int) -> None:
    refused(
        value(column(dtype="bool", shape=[2]), bytes([1, byte]) + bytes(6)), "other than 0 and 1"
    )
    refused(value(column(validity=16), PAYLOAD + bytes([0, byte]) + bytes(6)), "other than 0 and 1")


@pytest.mark.parametrize(
    ("key", "dtype"),
    [("id", "u32"), ("id", "i64"), ("x", "i64"), ("ix", "i64"), ("element", "u8")],
)
def test_a_canonical_key_at_another_dtype_is_refused_never_widened(key: str, dtype: str) -> None:
    header = column(dtype=dtype)
    header["blocks"]["a"]["columns"] = {key: header["blocks"]["a"]["columns"]["x"]}
    refused(value(header, bytes(16)), f"canonical key '{key}'")


def test_a_malformed_target_is_refused() -> None:
    header = column(dtype="u64")
    header["blocks"]["a"]["columns"] = {"atom": header["blocks"]["a"]["columns"]["x"]}
    header["blocks"]["a"]["targets"] = {"atom": "/trajectory/atoms"}
    refused(value(header, bytes(16)), "trajectory")


@pytest.mark.parametrize("buffer", ["MRF1", 12, None, [1, 2], object()])
def test_a_value_that_is_not_bytes_like(buffer: Any) -> None:
    refused(buffer, "bytes-like")


def test_declared_meta_types_do_not_override_the_header() -> None:
    data = mrecd.encode_frame(Frame(meta={"k": 1}, meta_types={"k": "u32"}))
    assert mrecd.decode_frame(data, meta_types={"k": "i64"}).meta_types == {"k": "u32"}
    refused(
        mrecd.encode_frame(Frame(meta={"k": "abc"}, step=0)), "typed JSON", meta_types={"k": "f64"}
    )
