"""Byte-exact worked values of lmdb.md §6 and §6.3."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.codecs import MAGIC, encode_blocks
from mrecd.model import Block, Column, Frame

X = [0.8212890625, -0.0517578125, -0.0078125, -0.8369140625]
Y = [0.1, 0.2, 0.3, 0.4]
Z = [-1.0, -2.0, -3.0, -4.0]
HEADER_6_3 = (
    '{"blocks":{"atoms":{"count":4,"structural_shape":null,"columns":{"x":{"dtype":"f64",'
    '"shape":[4],"offset":0},"y":{"dtype":"f64","shape":[4],"offset":32},"z":{"dtype":"f64",'
    '"shape":[4],"offset":64}}}},"meta":{"pe":-12.3},"step":1}'
)


def worked_frame() -> Frame:
    return Frame(
        {"atoms": {"x": np.array(X), "y": np.array(Y), "z": np.array(Z)}},
        meta={"pe": -12.3},
        step=1,
    )


def test_the_336_byte_worked_value() -> None:
    data = mrecd.encode_frame(worked_frame())
    assert len(HEADER_6_3) == 228
    expected = (
        b"MRF1"
        + struct.pack("<I", 228)
        + HEADER_6_3.encode()
        + bytes(4)
        + np.array(X, dtype="<f8").tobytes()
        + np.array(Y, dtype="<f8").tobytes()
        + np.array(Z, dtype="<f8").tobytes()
    )
    assert len(data) == 336
    assert data == expected
    assert data[:4] == MAGIC == bytes.fromhex("4d524631")
    assert data[240:272] == np.array(X, dtype="<f8").tobytes()
    back = mrecd.decode_frame(expected, meta_types={"pe": "f64"})
    assert back == worked_frame()
    assert back["atoms"]["x"].values.tolist() == X


@pytest.mark.parametrize(
    ("length", "pad"), [(228, 4), (42, 6), (353, 7), (523, 5), (2495, 1), (0, 0), (8, 0)]
)
def test_header_length_to_pad(length: int, pad: int) -> None:
    # Header of exactly `length` bytes: a meta string sized to fit.
    base = len(json.dumps({"blocks": {}, "meta": {"k": ""}}, separators=(",", ":")))
    if length < base:
        data = _hand_made_header(length)
    else:
        data = encode_blocks({}, {"meta": {"k": "a" * (length - base)}})
    (header_length,) = struct.unpack_from("<I", data, 4)
    assert header_length == length
    assert len(data) == 8 + length + pad
    assert data[8 + length :] == bytes(pad)
    if length >= base:
        mrecd.decode_frame(data)  # decodes, padding present with an empty payload


def _hand_made_header(length: int) -> bytes:
    text = b'{"blocks":{}}' if length >= 13 else b" " * length
    text = text.ljust(length)
    return b"MRF1" + struct.pack("<I", length) + text + bytes(-(8 + length) % 8)


def index_block() -> Block:
    return Block(
        {
            "first_frame": np.array([0, 3], dtype=np.uint64),
            "n_frames": np.array([3, 2], dtype=np.uint64),
            "n_atoms": np.array([4, 4], dtype=np.uint64),
            "has_trajectory": np.array([True, True]),
            "smiles": ["OO", "OO"],
        }
    )


def test_the_index_with_a_string_column() -> None:
    data = encode_blocks({"records": index_block()}, {"meta": {}})
    (header_length,) = struct.unpack_from("<I", data, 4)
    assert header_length == 353
    header = json.loads(data[8 : 8 + header_length])
    columns = header["blocks"]["records"]["columns"]
    assert [
        columns[c]["offset"] for c in ("first_frame", "n_frames", "n_atoms", "has_trajectory")
    ] == [
        0,
        16,
        32,
        48,
    ]
    assert columns["smiles"] == {"dtype": "string", "shape": [2], "values": ["OO", "OO"]}
    payload_start = 8 + 353 + 7
    assert data[8 + 353 : payload_start] == bytes(7)
    assert len(data) - payload_start == 56
    assert data[payload_start + 48 : payload_start + 56] == b"\x01\x01" + bytes(6)
    blocks, _ = mrecd.codecs.decode_blocks(data)
    assert blocks["records"] == index_block()


def test_a_masked_f64_column_at_128_has_validity_at_144_and_next_at_152() -> None:
    block = Block(
        {
            "a": np.zeros((2, 8)),  # 128 bytes: 0..128
            "m": Column(np.array([1.0, 2.0]), validity=[True, False]),
            "next": np.array([7, 8], dtype=np.uint64),
        }
    )
    data = encode_blocks({"b": block}, {"meta": {}})
    (length,) = struct.unpack_from("<I", data, 4)
    columns = json.loads(data[8 : 8 + length])["blocks"]["b"]["columns"]
    assert columns["m"]["offset"] == 128
    assert columns["m"]["validity"] == 144
    assert columns["next"]["offset"] == 152
    start = 8 + length + (-(8 + length) % 8)
    assert data[start + 144 : start + 152] == b"\x01\x00" + bytes(6)


def test_a_system_frame_carries_meta_types() -> None:
    data = mrecd.encode_frame(Frame(meta={"smiles": "OO", "total_charge": 0}))
    (length,) = struct.unpack_from("<I", data, 4)
    header: dict[str, Any] = json.loads(data[8 : 8 + length])
    assert header["meta"] == {"smiles": "OO", "total_charge": 0}
    assert header["meta_types"] == {"smiles": "string", "total_charge": "i64"}


def test_the_first_h2o2_frames_lay_xyz_at_0_32_64() -> None:
    frame = Frame(
        {"atoms": {"x": np.zeros(4), "y": np.ones(4), "z": np.full(4, 2.0)}},
        meta={"pe": -12.2},
        step=2,
    )
    data = mrecd.encode_frame(frame)
    (length,) = struct.unpack_from("<I", data, 4)
    columns = json.loads(data[8 : 8 + length])["blocks"]["atoms"]["columns"]
    assert [columns[c]["offset"] for c in "xyz"] == [0, 32, 64]
    bare = mrecd.encode_frame(Frame(meta={"pe": -12.2}, step=2))
    (length,) = struct.unpack_from("<I", bare, 4)
    assert json.loads(bare[8 : 8 + length]) == {"blocks": {}, "meta": {"pe": -12.2}, "step": 2}
