"""The inner chunk pipeline of the fast path: reused zstd contexts, the C unshuffle."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import google_crc32c
import numpy as np
import pytest
import zstandard
from numcodecs import Shuffle, Zstd

from mrecd import quantize
from mrecd.bindings.zarr._codecs import inner_codecs
from mrecd.bindings.zarr._shard import ChunkCodec, _rows_of_one_array
from mrecd.errors import InvalidRecord
from mrecd.model import numpy_dtype
from mrecd.model._precision import quantize_rows

ROWS = 3000


def _codec() -> ChunkCodec:
    return ChunkCodec("f64", (ROWS,), inner_codecs("f64", precision=1e-3))


def _chunk(seed: int) -> np.ndarray:
    return quantize(np.random.default_rng(seed).uniform(0, 40, ROWS), 1e-3)


def _with_crc(payload: bytes) -> bytes:
    return payload + int(google_crc32c.value(payload)).to_bytes(4, "little")


def test_chunks_round_trip_and_numcodecs_reads_them() -> None:
    codec = _codec()
    values = _chunk(0)
    encoded = codec.encode(values)
    assert np.array_equal(codec.decode(encoded), values)
    # the same bytes through numcodecs' own codecs (what zarr-python runs)
    raw = Shuffle(8).decode(Zstd().decode(encoded[:-4]))
    assert np.array_equal(np.frombuffer(raw, dtype="<f8"), values)


def test_a_frame_without_its_content_size_decodes() -> None:
    """Other writers may stream zstd frames whose header leaves the size out."""
    values = _chunk(1)
    shuffled = values.view(np.uint8).reshape(-1, 8).T.tobytes()
    frame = zstandard.ZstdCompressor(level=3, write_content_size=False).compress(shuffled)
    assert zstandard.frame_content_size(frame) == -1
    assert np.array_equal(_codec().decode(_with_crc(frame)), values)


def test_bytes_that_are_no_zstd_frame_are_refused_as_a_damaged_chunk() -> None:
    with pytest.raises(InvalidRecord, match="does not decompress") as caught:
        _codec().decode(_with_crc(b"\x00" * 64), where="atoms/x[chunk 3]")
    assert caught.value.path == "atoms/x[chunk 3]"


def test_a_frame_longer_than_the_chunk_is_refused() -> None:
    big = zstandard.ZstdCompressor(level=3, write_content_size=False).compress(b"\x01" * 30000)
    with pytest.raises(InvalidRecord, match="does not decompress"):
        _codec().decode(_with_crc(big))


def test_threads_encoding_and_decoding_at_once_agree_with_one_thread() -> None:
    """Each thread has its own zstd contexts: concurrent use never mixes their state."""
    codec = _codec()
    chunks = [_chunk(seed) for seed in range(32)]
    expected = [codec.encode(c) for c in chunks]
    with ThreadPoolExecutor(max_workers=4) as pool:
        encoded = list(pool.map(codec.encode, chunks * 4))
        decoded = list(pool.map(codec.decode, encoded))
    assert encoded == expected * 4
    assert all(np.array_equal(d, c) for d, c in zip(decoded, chunks * 4, strict=True))


@pytest.mark.parametrize(
    ("dtype", "precision", "shape"),
    [("f64", 1e-3, (ROWS,)), ("f64", 1e-2, (ROWS, 3)), ("i32", None, (ROWS,)), ("f64", None, (7,))],
)
def test_a_batch_encodes_to_the_bytes_of_one_chunk_at_a_time(
    dtype: str, precision: float | None, shape: tuple[int, ...]
) -> None:
    codec = ChunkCodec(dtype, shape, inner_codecs(dtype, precision=precision))
    rng = np.random.default_rng(3)
    chunks = [(rng.uniform(-40, 40, shape) * 100).astype(codec.fill().dtype) for _ in range(9)]
    batch = codec.encode_many(chunks)
    assert batch == [codec.encode(chunk) for chunk in chunks]
    assert all(
        np.array_equal(codec.decode(data), chunk) for data, chunk in zip(batch, chunks, strict=True)
    )


def test_a_batch_of_one_or_none_encodes_too() -> None:
    codec = _codec()
    assert codec.encode_many([]) == []
    assert codec.encode_many([_chunk(1)]) == [codec.encode(_chunk(1))]


def test_batches_encoded_in_threads_at_once_agree_with_one_at_a_time() -> None:
    codec = _codec()
    batches = [[_chunk(10 * b + k) for k in range(6)] for b in range(8)]
    with ThreadPoolExecutor(4) as pool:
        encoded = list(pool.map(codec.encode_many, batches))
    assert encoded == [[codec.encode(c) for c in batch] for batch in batches]


@pytest.mark.parametrize("shape", [(ROWS,), (ROWS, 3)])
def test_rows_of_one_array_encode_as_one_chunk_at_a_time(shape: tuple[int, ...]) -> None:
    """Runs of consecutive rows of one array take one transposing copy; the bytes are those
    of a chunk at a time, whatever the mix of runs, gaps, strays and foreign dtypes."""
    codec = ChunkCodec("f64", shape, inner_codecs("f64", precision=1e-3))
    rng = np.random.default_rng(5)
    block = quantize(rng.uniform(-40, 40, (12, *shape)), 1e-3)
    other = quantize(rng.uniform(-40, 40, (4, *shape)), 1e-3)
    stray = quantize(rng.uniform(-40, 40, shape), 1e-3)
    mixes = [
        list(block),  # one run
        list(block[3:9]),  # a run starting inside its array
        [*block[:4], stray, *block[4:8], *other, block[9]],  # runs, a stray, another array
        [block[0], block[2], block[1], block[3]],  # rows of one array out of order
        [*block[::2]],  # every other row: no run
        [*block.astype(np.float32)[:3]],  # another dtype: converted one by one
    ]
    for chunks in mixes:
        assert codec.encode_many(chunks) == [codec.encode(c) for c in chunks]


def test_rows_of_a_batch_rounding_shuffle_in_place_to_the_last_row() -> None:
    """``quantize_rows`` leaves a word of slack after its last row, so a commit taking every
    row of a batch (the last one too) is shuffled from the rows themselves, not gathered."""
    codec = _codec()
    rng = np.random.default_rng(8)
    rows = quantize_rows(list(rng.uniform(-40, 40, (6, ROWS))), 1e-3)
    assert _rows_of_one_array(rows, np.dtype("<f8"), slack=7) is not None
    assert codec.encode_many(rows) == [codec.encode(row) for row in rows]
    # an array without slack after its last row is gathered first: the same bytes
    plain = list(quantize(rng.uniform(-40, 40, (6, ROWS)), 1e-3))
    assert _rows_of_one_array(plain, np.dtype("<f8"), slack=7) is None
    assert _rows_of_one_array(plain[:5], np.dtype("<f8"), slack=7) is not None
    assert codec.encode_many(plain) == [codec.encode(row) for row in plain]


@pytest.mark.parametrize("dtype", ["u8", "i16", "i32", "f64", "c128"])
def test_shuffle_of_every_element_size_is_numcodecs_shuffle(dtype: str) -> None:
    """A batch shuffles elements of 1, 2, 4, 8 and 16 bytes: every chunk is numcodecs'
    shuffle, then a zstd frame numcodecs decodes, then the crc32c of that frame (the zstd
    bytes themselves depend on the zstd build: python-zstandard's or the system's)."""
    size = numpy_dtype(dtype).itemsize
    pipeline = [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "numcodecs.shuffle", "configuration": {"elementsize": size}},
        {"name": "zstd", "configuration": {"level": 3, "checksum": False}},
        {"name": "crc32c"},
    ]
    codec = ChunkCodec(dtype, (ROWS,), pipeline)
    rng = np.random.default_rng(size)
    chunks = list(rng.integers(0, 200, (5, ROWS)).astype(numpy_dtype(dtype)))
    encoded = codec.encode_many(chunks)
    for chunk, data in zip(chunks, encoded, strict=True):
        raw = Shuffle(size).encode(np.ascontiguousarray(chunk).view(np.uint8))
        assert data == _with_crc(data[:-4])
        assert bytes(Zstd().decode(data[:-4])) == bytes(raw)
        assert np.array_equal(codec.decode(data), chunk)
