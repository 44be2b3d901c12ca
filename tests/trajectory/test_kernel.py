"""The native commit encoder (``_kernel.c``) and the Python path it replaces where it is built."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import google_crc32c
import numpy as np
import pytest
from numcodecs import Shuffle, Zstd

import mrecd
from mrecd.bindings.zarr import _shard
from mrecd.bindings.zarr._codecs import inner_codecs
from mrecd.bindings.zarr._shard import ChunkCodec, encode_batches
from mrecd.model._precision import quantize_rows

kernel = _shard._kernel
needs_kernel = pytest.mark.skipif(kernel is None, reason="the native encoder was not built here")


def _decoded(data: bytes, size: int) -> bytes:
    """The plain bytes of one chunk through numcodecs (crc32c checked first)."""
    payload, trailer = data[:-4], data[-4:]
    assert int(google_crc32c.value(payload)).to_bytes(4, "little") == trailer
    return bytes(Shuffle(size).decode(Zstd().decode(payload)))


def test_ci_builds_the_native_encoder_and_writers_use_it() -> None:
    """CI measures and tests what a user's install builds: the compile must not fail there,
    and a declared-precision column's chunks must go through it."""
    if os.environ.get("CI") != "true":
        pytest.skip("only CI promises a C compiler and libzstd")
    codec = ChunkCodec("f64", (3000,), inner_codecs("f64", precision=1e-3))
    assert codec._native_level == 3, "the native encoder was not built or is not used"
    chunks = _chunks()
    owner = chunks[0].base
    assert owner is not None
    native = _shard._kernel.encode([(owner, 0, len(chunks), 24_000, 8)], 3, 2)[0]
    assert encode_batches([(codec, chunks)])[0] == native


@needs_kernel
@pytest.mark.parametrize("size", [1, 2, 4, 8, 16])
def test_every_element_size_encodes_what_numcodecs_decodes(size: int) -> None:
    rng = np.random.default_rng(size)
    nbytes = size * 777
    buffer = rng.integers(0, 7, 5 * nbytes + 3, dtype=np.uint8).tobytes()
    [chunks] = kernel.encode([(buffer, 3, 5, nbytes, size)], 3, 2)
    assert len(chunks) == 5
    for k, data in enumerate(chunks):
        plain = buffer[3 + k * nbytes : 3 + (k + 1) * nbytes]
        assert _decoded(data, size) == plain


@needs_kernel
def test_runs_of_several_buffers_come_back_in_order() -> None:
    a = np.arange(4000, dtype="<f8")
    b = np.arange(900, dtype="<i2")
    out = kernel.encode([(a, 800, 3, 800, 8), (b, 0, 0, 10, 2), (b, 0, 2, 900, 2)], 3, 2)
    assert [len(x) for x in out] == [3, 0, 2]
    raw_a = a.tobytes()
    assert [_decoded(d, 8) for d in out[0]] == [
        raw_a[800 * (k + 1) : 800 * (k + 2)] for k in range(3)
    ]
    assert [_decoded(d, 2) for d in out[2]] == [b.tobytes()[:900], b.tobytes()[900:]]
    assert kernel.encode([], 3, 2) == []


@needs_kernel
@pytest.mark.parametrize("length", [0, 1, 7, 8, 9, 4096, 10_001])
def test_crc_is_google_crc32c(length: int) -> None:
    data = np.random.default_rng(length).integers(0, 256, length, dtype=np.uint8).tobytes()
    assert kernel.crc(data) == google_crc32c.value(data)


@needs_kernel
@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (([(b"x" * 64, 0, 9, 8, 8)], 3, 2), ValueError, "run past the end"),
        (([(b"x" * 64, 60, 1, 8, 8)], 3, 2), ValueError, "run past the end"),
        (([(b"x" * 64, 0, 1, 9, 8)], 3, 2), ValueError, "whole number"),
        (([(b"x" * 64, 0, 1, 8, 0)], 3, 2), ValueError, "whole number"),
        (([(b"x" * 64, -1, 1, 8, 8)], 3, 2), ValueError, "negative"),
        (([(b"x" * 64, 0, 1, 8, 8)], 99, 2), ValueError, "zstd level 99"),
        (([(b"x" * 64, 0, 1, 8, 8)], 3, 0), ValueError, "threads"),
        (([(b"x" * 64, 0, 1)], 3, 2), TypeError, "a run is"),
        (([(object(), 0, 1, 8, 8)], 3, 2), TypeError, "bytes-like"),
        ((5, 3, 2), TypeError, "sequence"),
    ],
)
def test_bad_runs_are_refused(
    args: tuple[object, ...], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        kernel.encode(*args)  # type: ignore[arg-type]


@needs_kernel
def test_threads_calling_at_once_each_get_their_own_bytes() -> None:
    """zstd contexts are pooled across calls: concurrent calls must not share one."""
    rng = np.random.default_rng(7)
    buffers = [rng.normal(size=3000 * 16).astype("<f8") for _ in range(6)]
    start = threading.Barrier(len(buffers))

    def encode(buffer: np.ndarray) -> list[list[list[bytes]]]:
        start.wait()  # all six in the native code together
        return [kernel.encode([(buffer, 0, 16, 24_000, 8)], 3, 2) for _ in range(20)]

    with ThreadPoolExecutor(len(buffers)) as pool:
        calls = list(pool.map(encode, buffers))  # a call's error is raised here
    for buffer, results in zip(buffers, calls, strict=True):
        raw = buffer.tobytes()
        expected = [raw[k * 24_000 : (k + 1) * 24_000] for k in range(16)]
        for [chunks] in results:
            assert [_decoded(d, 8) for d in chunks] == expected


def _chunks() -> list[np.ndarray]:
    rows = [np.random.default_rng(k).uniform(0, 40, 3000) for k in range(6)]
    return quantize_rows(rows, 1e-3)


@pytest.mark.parametrize("native", [True, False])
def test_a_batch_encodes_as_single_chunks_do_on_either_path(
    native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if native and kernel is None:
        pytest.skip("the native encoder was not built here")
    if not native:
        monkeypatch.setattr(_shard, "_kernel", None)
    codec = ChunkCodec("f64", (3000,), inner_codecs("f64", precision=1e-3))
    chunks = _chunks()
    plain = [np.array(c) for c in chunks]  # the same values, not one array's rows: gathered
    [batch, gathered] = encode_batches([(codec, chunks), (codec, plain)])
    assert batch == gathered == [codec.encode(c) for c in chunks]
    assert all(np.array_equal(codec.decode(d), c) for d, c in zip(batch, chunks, strict=True))


def test_a_trajectory_written_without_the_native_encoder_reads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no compiler was found at install, appends encode in Python, to the same values."""
    monkeypatch.setattr(_shard, "_kernel", None)
    positions = [np.random.default_rng(k).uniform(0, 40, (3, 300)) for k in range(70)]
    store = mrecd.open(tmp_path / "data")
    with store.create_record("run") as rec:
        rec.trajectory.extend(
            mrecd.Frame(
                {"atoms": {c: mrecd.Column(p[i], precision=1e-3) for i, c in enumerate("xyz")}},
                step=k,
            )
            for k, p in enumerate(positions)
        )
    with store.record("run") as rec:
        assert len(rec.trajectory) == 70
        frame = rec.trajectory[69]
    assert np.array_equal(frame["atoms"]["x"].values, mrecd.quantize(positions[69][0], 1e-3))
