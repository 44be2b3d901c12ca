"""Property-based decoding: random and mutated frame bytes only ever raise FrameBytesError,
return quickly, and never allocate more than a small multiple of the input.
"""

from __future__ import annotations

import json
import math
import struct
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mrecd
from mrecd.model import Block, Box, Column, Frame

#: Peak allocation allowed while decoding ``n`` bytes: a small multiple plus a constant.
#: JSON parsing builds Python objects (a list of small ints costs ~4-8 bytes per input
#: byte, a dict of short keys ~10); nothing may scale with sizes the header merely claims.
ALLOWED_FACTOR = 32
ALLOWED_CONSTANT = 256 * 1024
#: A decode (or refusal) of these small inputs takes milliseconds; this is a hang guard.
ALLOWED_SECONDS = 1.0


def reference_values() -> list[bytes]:
    """Valid encodings that exercise every part of the header."""
    atoms = Block(
        {
            "x": Column(np.array([0.1, 0.2, 0.3]), precision=1e-3),
            "id": np.array([1, 2, 3], dtype=np.uint64),
            "element": Column(["C", "O", "N"], validity=[True, False, True]),
            "v": np.arange(9.0).reshape(3, 3),
            "c": np.array([1 + 1j, 2j, 3], dtype=np.complex64),
            "flag": np.array([True, False, True]),
        },
        attributes={"x_vendor": {"k": [1]}},
    )
    members = Block({"atom": np.array([0, 2], dtype=np.uint64)}, targets={"atom": "atoms"})
    grid = Block({"rho": np.zeros(8)}, structural_shape=[2, 2, 2])
    system = Frame(
        {"atoms": atoms, "members": members, "grid": grid, "empty": Block(count=0)},
        meta={
            "n": 3,
            "e": math.nan,
            "v": (1.0, 2.0, 3.0),
            "big": 2**64 - 1,
            "doc": {"a": [1, None]},
        },
        meta_types={"v": "f64x3", "n": "i32"},
        box=Box(np.eye(3) * 10, boundary=[True, True, False]),
    )
    update = Frame(
        {"atoms": {"x": np.arange(4.0), "y": np.arange(4.0), "z": np.arange(4.0)}},
        meta={"pe": -12.3},
        step=7,
        time=0.5,
        box=Box(np.zeros((3, 3)), cell_defined=False),
    )
    return [mrecd.encode_frame(system), mrecd.encode_frame(update), mrecd.encode_frame(Frame())]


REFERENCES = reference_values()


def decode_guarded(data: bytes, decoder: Callable[..., Any] = mrecd.decode_frame) -> None:
    """Decode ``data``: only FrameBytesError may escape; time and memory are bounded."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    started = time.perf_counter()
    try:
        decoder(data)
    except mrecd.FrameBytesError as exc:
        assert str(exc)  # a message naming the rule
    finally:
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < ALLOWED_SECONDS, f"decoding {len(data)} bytes took {elapsed:.2f}s"
    assert peak <= ALLOWED_FACTOR * len(data) + ALLOWED_CONSTANT, (
        f"peak {peak} for {len(data)} bytes"
    )


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes(data: bytes) -> None:
    decode_guarded(data)


@FUZZ
@given(st.binary(max_size=2048))
def test_random_bytes_behind_a_valid_prefix(tail: bytes) -> None:
    decode_guarded(b"MRF1" + struct.pack("<I", len(tail)) + tail)
    decode_guarded(b"MRF1" + struct.pack("<I", len(tail) // 2) + tail)


@FUZZ
@given(st.sampled_from(REFERENCES), st.lists(st.integers(min_value=0), min_size=1, max_size=8))
def test_bit_flips(reference: bytes, positions: list[int]) -> None:
    data = bytearray(reference)
    for p in positions:
        bit = p % (8 * len(data))
        data[bit // 8] ^= 1 << (bit % 8)
    decode_guarded(bytes(data))


@FUZZ
@given(st.sampled_from(REFERENCES), st.integers(min_value=0))
def test_truncation(reference: bytes, cut: int) -> None:
    decode_guarded(reference[: cut % (len(reference) + 1)])


@FUZZ
@given(st.sampled_from(REFERENCES), st.binary(min_size=1, max_size=64), st.integers(min_value=0))
def test_splices(reference: bytes, junk: bytes, at: int) -> None:
    i = at % (len(reference) + 1)
    decode_guarded(reference[:i] + junk + reference[i:])
    decode_guarded(reference[:i] + junk + reference[i + len(junk) :])


JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, 7, 8, 2**31, 2**32, 2**53 + 1, 2**62, 2**63, 2**64, -1, -8]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(
        ["f64", "u64", "string", "bool", "c128", "f32", "NaN", "Infinity", "/trajectory/x"]
    ),
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _set(node: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    node[path[0]] = _set(node[path[0]], path[1:], new)
    return node


def _split(data: bytes) -> tuple[dict[str, Any], bytes]:
    (length,) = struct.unpack_from("<I", data, 4)
    start = 8 + length + (-(8 + length) % 8)
    return json.loads(data[8 : 8 + length]), data[start:]


def _join(header: Any, payload: bytes) -> bytes:
    text = json.dumps(header, separators=(",", ":")).encode()
    prefix = b"MRF1" + struct.pack("<I", len(text)) + text
    return prefix + bytes(-len(prefix) % 8) + payload


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(REFERENCES), st.data())
def test_header_edits(reference: bytes, data: st.DataObject) -> None:
    header, payload = _split(reference)
    paths = _paths(header)
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        path = data.draw(st.sampled_from(paths))
        header = _set(header, path, data.draw(JSON_VALUES))
        paths = _paths(header)
    decode_guarded(_join(header, payload))
    decode_guarded(_join(header, payload), lambda b: mrecd.codecs.decode_blocks(b, copy=True))


@pytest.mark.parametrize(
    "entry",
    [
        {"dtype": "f64", "shape": [2**40], "offset": 0},
        {"dtype": "u8", "shape": [2**62], "offset": 0},
        {"dtype": "c128", "shape": [2**40, 2**40], "offset": 0},
        {"dtype": "string", "shape": [2**40], "values": ["a"]},
        {"dtype": "f64", "shape": [2**40], "offset": 0, "validity": 0},
        {"dtype": "bool", "shape": [2**40, 0], "offset": 0, "validity": 2**40},
    ],
)
def test_claimed_sizes_never_allocate(entry: dict[str, Any]) -> None:
    count = entry["shape"][0]
    header = {
        "blocks": {"a": {"count": count, "structural_shape": None, "columns": {"v": entry}}},
        "meta": {},
    }
    data = _join(header, bytes(64))
    with pytest.raises(mrecd.FrameBytesError):
        mrecd.decode_frame(data)
    decode_guarded(data)


def test_a_huge_count_with_no_columns_costs_nothing() -> None:
    data = _join({"blocks": {"a": {"count": 2**62, "columns": {}}}, "meta": {}}, b"")
    decode_guarded(data)
    assert mrecd.decode_frame(data)["a"].count == 2**62


def test_large_valid_values_decode_without_copying() -> None:
    frame = Frame({"a": {"x": np.arange(200_000.0)}})
    data = mrecd.encode_frame(frame)
    tracemalloc.start()
    back = mrecd.decode_frame(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert back == frame
    assert peak < 64 * 1024  # a view: nowhere near the 1.6 MB of the buffer
