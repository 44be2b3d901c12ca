"""MRF1 frame bytes: round trips of every dtype, tag, mask, precision, target, box (lmdb.md §6)."""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.codecs import decode_blocks, encode_blocks
from mrecd.model import DTYPES, META_TAGS, STRING_DTYPE, Block, Box, Column, Frame, numpy_dtype

CUBE = np.eye(3) * 20.0


def sample(dtype: str, shape: tuple[int, ...] = (3,)) -> np.ndarray:
    """Values of ``dtype`` with its extremes, filled to ``shape``."""
    n = int(np.prod(shape))
    if dtype == "string":
        pool = ["C", "", "ünïcødé", '"quoted"\n']
        return np.array([pool[i % len(pool)] for i in range(n)], dtype=STRING_DTYPE).reshape(shape)
    np_dtype = numpy_dtype(dtype)
    if dtype == "bool":
        return (np.arange(n) % 2 == 0).reshape(shape)
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        pool = [info.min, 0, info.max, 1]
        return np.array([pool[i % 4] for i in range(n)], dtype=np_dtype).reshape(shape)
    if np_dtype.kind == "c":
        pool_c = [1 + 2j, complex(-0.0, np.nan), complex(np.inf, -np.inf), 0j]
        return np.array([pool_c[i % 4] for i in range(n)], dtype=np_dtype).reshape(shape)
    pool_f = [-0.0, np.nan, np.finfo(np.float64).max, 5e-324, -np.inf, 1.5]
    return np.array([pool_f[i % 6] for i in range(n)], dtype=np_dtype).reshape(shape)


def roundtrip(frame: Frame, **decode: Any) -> Frame:
    data = mrecd.encode_frame(frame)
    assert len(data) % 8 == 0
    back = mrecd.decode_frame(data, **decode)
    assert back == frame
    return back


def same_bytes(a: Column, b: Column) -> bool:
    if a.dtype == "string":
        return bool(a.values.tolist() == b.values.tolist())
    return bool(a.values.dtype == b.values.dtype and a.values.tobytes() == b.values.tobytes())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3,), (0,), (2, 3), (2, 3, 3), (4, 0), (1, 1, 1, 5)], ids=str)
def test_every_dtype_and_trailing_shape_round_trips_bit_for_bit(
    dtype: str, shape: tuple[int, ...]
) -> None:
    values = sample(dtype, shape)
    frame = Frame({"b": {"v": Column(values, dtype)}})
    back = roundtrip(frame)
    column = back["b"]["v"]
    assert column.dtype == dtype
    assert column.shape == shape
    assert same_bytes(column, frame["b"]["v"])


@pytest.mark.parametrize("dtype", DTYPES)
def test_masks_round_trip_on_every_dtype(dtype: str) -> None:
    column = Column(sample(dtype, (5,)), dtype, validity=[True, False, True, False, False])
    back = roundtrip(Frame({"b": {"v": column}}))
    assert back["b"]["v"].validity is not None
    assert back["b"]["v"].validity.tolist() == [True, False, True, False, False]


def test_an_all_true_mask_writes_no_validity_buffer() -> None:
    masked = Frame({"b": {"s": Column(["a", "b"], "string", validity=[True, True])}})
    header = _header(mrecd.encode_frame(masked))
    assert "validity" not in header["blocks"]["b"]["columns"]["s"]
    assert mrecd.encode_frame(masked) == mrecd.encode_frame(Frame({"b": {"s": ["a", "b"]}}))


def test_a_string_column_with_a_mask_uses_a_buffer() -> None:
    frame = Frame({"b": {"s": Column(["a", "b", "c"], validity=[False, True, True])}})
    data = mrecd.encode_frame(frame)
    entry = _header(data)["blocks"]["b"]["columns"]["s"]
    assert entry == {"dtype": "string", "shape": [3], "values": ["a", "b", "c"], "validity": 0}
    assert roundtrip(frame)["b"]["s"].validity.tolist() == [False, True, True]  # type: ignore[union-attr]


@pytest.mark.parametrize("tag", META_TAGS)
def test_every_meta_tag_round_trips_on_a_system_frame(tag: str) -> None:
    held: dict[str, Any] = {
        "bool": False,
        "i32": -(2**31),
        "i64": -(2**63),
        "u32": 2**32 - 1,
        "u64": 2**64 - 1,
        "f64": math.nan,
        "string": "Infinity",
        "json": {"k": [1, None, "x"]},
        "bool3": (True, False, True),
        "i32x3": (1, -2, 3),
        "i64x3": (-(2**63), 0, 2**63 - 1),
        "u32x3": (0, 1, 2**32 - 1),
        "u64x3": (2**64 - 1, 0, 2**53 + 1),
        "f64x3": (math.inf, -math.inf, -0.0),
        "f64x6": (1.0, 2.0, 3.0, 4.0, 5.0, math.nan),
        "f64x9": tuple(float(i) for i in range(9)),
    }
    frame = Frame(meta={"k": held[tag]}, meta_types={"k": tag})
    back = roundtrip(frame)
    assert back.meta_types == {"k": tag}


@pytest.mark.parametrize(
    ("tag", "value", "spelled"),
    [
        ("f64", math.nan, "NaN"),
        ("f64", math.inf, "Infinity"),
        ("f64", -math.inf, "-Infinity"),
        ("u64", 2**64 - 1, "18446744073709551615"),
        ("i64", -(2**63), "-9223372036854775808"),
    ],
)
def test_meta_values_are_in_typed_json_form_in_the_header(
    tag: str, value: Any, spelled: Any
) -> None:
    header = _header(mrecd.encode_frame(Frame(meta={"k": value}, meta_types={"k": tag})))
    assert header["meta"] == {"k": spelled} and header["meta_types"] == {"k": tag}


def test_a_trajectory_update_is_typed_by_the_declaration() -> None:
    frame = Frame(meta={"pe": -12.3, "n": 3}, meta_types={"n": "i32"}, step=7, time=math.nan)
    data = mrecd.encode_frame(frame)
    header = _header(data)
    assert "meta_types" not in header
    assert header["step"] == 7 and header["time"] == "NaN"
    back = mrecd.decode_frame(data, meta_types={"pe": "f64", "n": "i32"})
    assert back == frame
    untyped = mrecd.decode_frame(data)  # inference when nothing types it
    assert untyped.meta_types == {"pe": "f64", "n": "i64"}


def test_meta_types_can_be_forced_in_or_out() -> None:
    system = Frame(meta={"n": 1}, meta_types={"n": "u32"})
    assert "meta_types" not in _header(mrecd.encode_frame(system, meta_types=False))
    update = Frame(meta={"n": 1}, meta_types={"n": "u32"}, step=0)
    assert _header(mrecd.encode_frame(update, meta_types=True))["meta_types"] == {"n": "u32"}


def test_empty_meta_writes_no_meta_types() -> None:
    header = _header(mrecd.encode_frame(Frame()))
    assert header == {"blocks": {}, "meta": {}}


def test_precision_is_carried_on_a_system_frame() -> None:
    column = Column(np.array([0.12345, -1.0, 2.71828]), precision=1e-3)
    back = roundtrip(Frame({"atoms": {"x": column}}))
    assert back["atoms"]["x"].precision == 1e-3
    assert back["atoms"]["x"].values.tobytes() == column.values.tobytes()
    assert (
        _header(mrecd.encode_frame(Frame({"atoms": {"x": column}})))["blocks"]["atoms"]["columns"][
            "x"
        ]["precision"]
        == 1e-3
    )


def test_targets_structural_shape_and_attributes_round_trip() -> None:
    members = Block(
        {"atom": np.array([0, 1], dtype=np.uint64), "ibead": np.array([0, 0], dtype=np.uint64)},
        targets={"atom": "/frame/atoms", "ibead": "atoms"},
        attributes={"x_vendor": {"k": [1, None]}},
    )
    grid = Block({"rho": np.arange(24.0)}, structural_shape=[2, 3, 4])
    back = roundtrip(Frame({"members": members, "grid": grid}))
    assert back["members"].targets == {"atom": "/frame/atoms", "ibead": "atoms"}
    assert back["members"].attributes == {"x_vendor": {"k": [1, None]}}
    assert back["grid"].structural_shape == (2, 3, 4)


def test_a_trajectory_update_carries_no_block_attributes() -> None:
    block = Block({"v": np.zeros(1)}, attributes={"k": 1})
    header = _header(mrecd.encode_frame(Frame({"b": block}, step=0)))
    assert "attributes" not in header["blocks"]["b"]


@pytest.mark.parametrize(
    "box",
    [
        Box(CUBE),
        Box(CUBE, origin=[1.0, -2.0, 3.5], boundary=[True, True, False]),
        Box(np.zeros((3, 3)), cell_defined=False, origin=[0.5, 0.5, 0.5]),
        Box([[10.0, 2.0, 0.0], [0.0, 10.0, 1.0], [0.0, 0.0, 10.0]], origin=[np.nan, 0.0, -0.0]),
    ],
    ids=["default", "slab", "undefined", "triclinic"],
)
def test_box_variants_round_trip(box: Box) -> None:
    back = roundtrip(Frame({"a": {"x": np.zeros(1)}}, box=box, step=3))
    assert back.box == box
    header = _header(mrecd.encode_frame(Frame(box=box)))
    assert set(header["box"]) == {"vectors", "origin", "boundary", "cell_defined"}


def test_step_and_time_extremes_round_trip() -> None:
    roundtrip(Frame(step=-(2**63), time=-0.0))
    roundtrip(Frame(step=2**63 - 1, time=math.inf))
    assert _header(mrecd.encode_frame(Frame(step=2**63 - 1)))["step"] == "9223372036854775807"


def test_an_empty_frame_and_zero_row_blocks_round_trip() -> None:
    empty = mrecd.encode_frame(Frame())
    assert empty[:4] == b"MRF1" and len(empty) % 8 == 0
    roundtrip(Frame())
    back = roundtrip(
        Frame({"bonds": Block(count=0), "none": Block({"atomi": np.zeros(0, dtype=np.uint64)})})
    )
    assert back["bonds"].count == 0 and len(back["bonds"]) == 0
    assert back["none"]["atomi"].shape == (0,)


def test_a_block_with_no_columns_keeps_its_count() -> None:
    assert roundtrip(Frame({"b": Block(count=7)}))["b"].count == 7


def test_numeric_columns_are_views_in_place_unless_copied() -> None:
    frame = Frame(
        {"a": {"x": np.arange(4.0), "m": Column(np.arange(4.0), validity=[True, False] * 2)}}
    )
    data = bytearray(mrecd.encode_frame(frame))
    view = mrecd.decode_frame(data)
    raw = np.frombuffer(data, dtype=np.uint8)
    assert np.shares_memory(view["a"]["x"].values, raw)
    assert np.shares_memory(view["a"]["m"].validity, raw)  # type: ignore[arg-type]
    copied = mrecd.decode_frame(data, copy=True)
    assert not np.shares_memory(copied["a"]["x"].values, raw)
    assert not np.shares_memory(copied["a"]["m"].validity, raw)  # type: ignore[arg-type]
    data[-40:] = bytes(40)  # the copy outlives changes to the value
    assert copied == frame


def test_views_are_read_only() -> None:
    data = bytearray(mrecd.encode_frame(Frame({"a": {"x": np.arange(4.0)}})))
    column = mrecd.decode_frame(data)["a"]["x"]
    with pytest.raises(ValueError, match="read-only"):
        column.values[0] = 1.0


@pytest.mark.parametrize(
    "buffer_type", [bytes, bytearray, memoryview, lambda b: np.frombuffer(b, np.uint8)]
)
def test_any_bytes_like_value_decodes(buffer_type: Any) -> None:
    frame = Frame({"a": {"x": np.arange(3.0), "e": ["C", "O", "N"]}}, meta={"pe": 1.0})
    assert mrecd.decode_frame(buffer_type(mrecd.encode_frame(frame))) == frame


def test_buffers_are_laid_out_in_order_each_padded_to_8() -> None:
    frame = Frame(
        {
            "a": {
                "flags": np.array([True, False, True]),
                "v": Column(np.arange(3.0), validity=[True, False, True]),
                "s": np.array(["p", "q", "r"]),
                "n": np.arange(3, dtype=np.int16),
            }
        }
    )
    columns = _header(mrecd.encode_frame(frame))["blocks"]["a"]["columns"]
    assert columns["flags"]["offset"] == 0
    assert columns["v"]["offset"] == 8 and columns["v"]["validity"] == 32
    assert "offset" not in columns["s"]
    assert columns["n"]["offset"] == 40


def test_decode_blocks_leaves_meta_undecoded() -> None:
    data = encode_blocks(
        {"records": Block({"n": np.arange(2, dtype=np.uint64)})}, {"meta": {"units": "x"}}
    )
    blocks, header = decode_blocks(data)
    assert blocks["records"]["n"].values.tolist() == [0, 1]
    assert header["meta"] == {"units": "x"}


def _header(data: bytes) -> dict[str, Any]:
    import json

    (length,) = struct.unpack_from("<I", data, 4)
    out: dict[str, Any] = json.loads(data[8 : 8 + length])
    return out


def test_decoded_string_columns_behave_as_arrays() -> None:
    frame = Frame(
        {"a": {"s": Column([["a", "b"], ["c", ""]], validity=[True, False]), "n": [1, 2]}}
    )
    back = mrecd.decode_frame(mrecd.encode_frame(frame))
    column = back["a"]["s"]
    assert column.shape == (2, 2) and len(column) == 2 and column.trailing == (2,)
    assert column.rows(0, 1).values.tolist() == [["a", "b"]]
    assert column.values.dtype == STRING_DTYPE
    assert column.values.tolist() == [["a", "b"], ["c", ""]]
    assert column.same_values(frame["a"]["s"]) and back == frame
    with pytest.raises(ValueError, match="read-only"):
        column.values[0, 0] = "z"


def test_a_string_column_under_a_canonical_real_key_is_refused() -> None:
    data = mrecd.encode_frame(Frame({"a": {"xx": ["C", "O"]}}))
    renamed = data.replace(b'"xx"', b'"x" ')  # same header length: JSON allows the space
    with pytest.raises(mrecd.FrameBytesError, match="canonical key 'x' must be f64, not string"):
        mrecd.decode_frame(renamed)
