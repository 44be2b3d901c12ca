"""Sharded Zarr V3 arrays that grow along axis 0 by positional writes, and fast row reads.

zarr-python writes a shard by reading and rewriting all of it, so appending
one frame costs O(shard) (``notes/measured.md``). :class:`ArrayAppender`
instead encodes only the new inner chunks with the array's own codec
pipeline, writes them at the shard file's tail, and rewrites the shard index
(kept in memory) at the start of the file (``index_location: "start"``,
chunking.md §4.1). The bytes are plain Zarr V3: zarr-python and zarrs read
them unchanged.

:class:`ArrayReader` reads rows ``[start, stop)`` by touching only the shard
index and the inner chunks holding them. It decodes the pipelines mrecd
writes itself (``bytes``/``vlen-utf8``, ``numcodecs.shuffle``, ``zstd``,
``gzip``, ``crc32c``, sharded or not) and hands any other array to
zarr-python.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import resource
import threading
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import google_crc32c
import numpy as np
import numpy.typing as npt
import zstandard
from numcodecs import VLenUTF8

try:  # numcodecs' C loop: ~2x numpy's scattering copy for the 8-byte unshuffle
    from numcodecs._shuffle import _doUnshuffle as _unshuffle_c
except ImportError:  # pragma: no cover - a numcodecs without it: numpy's copies below
    _unshuffle_c = None

from ...errors import InvalidRecord
from ...model import DTYPE_OF_ZARR, STRING_DTYPE, ZARR_DATA_TYPE, numpy_dtype
from ...storage import Location, RangeReader
from ._codecs import SHARD_INDEX_CODECS

try:  # the native commit encoder, compiled at install where it can be (hatch_build.py)
    from . import _kernel
except ImportError:  # pragma: no cover - no compiler or libzstd at install: encode in Python
    _kernel = None  # type: ignore[assignment]
from ._json import read_json, write_json_atomic
from ._tree import Tree

__all__ = ["ArrayAppender", "ArrayLayout", "ArrayReader", "ChunkCodec", "chunk_key"]

_EMPTY: Final = np.uint64(2**64 - 1)
_CHUNK_CACHE: Final = 4  # decoded chunks kept per array reader, at least
#: Decoded bytes kept per array reader: a small-row array (an indexed block's
#: column) keeps many chunks, each spanning thousands of frames; a coordinate
#: column (one frame per chunk) keeps a few.
_CHUNK_CACHE_BYTES: Final = 512 * 1024


def _open_shards_budget() -> int:
    """Shard files kept open per array reader: 32, more when ``ulimit -n`` allows it.

    Descriptors are finite, but reopening a shard costs an ``open``, an
    ``fstat`` and a ``close`` per read at random frames of a long run (393
    shards per column at 10^5 frames of 3000 atoms); with a soft limit of
    ``L`` an array keeps up to ``L // 32`` open (at most 512).
    """
    try:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (OSError, ValueError):  # pragma: no cover - no limit reported
        return 32
    if soft == resource.RLIM_INFINITY:
        return 512
    return max(32, min(512, soft // 32))


_OPEN_SHARDS: Final = _open_shards_budget()
#: Native threads of one batch compression (:func:`encode_batches`): two, whatever the
#: machine; the appending thread takes a core of its own, and a commit's ~200 chunks
#: would not pay for starting more threads per call.
_ZSTD_THREADS: Final = 2
_MISSING: Final[Any] = object()
_VLEN = VLenUTF8()


def chunk_key(index: int, ndim: int) -> str:
    """The key of chunk (or shard) ``index`` along axis 0, trailing axes whole: ``c/3/0/0``."""
    return "c/" + "/".join([str(index), *["0"] * (ndim - 1)])


class _ZstdContexts(threading.local):
    """zstd contexts of the current thread, reused from chunk to chunk.

    A fresh context per chunk (what numcodecs' module functions make) costs
    about a third of compressing or decompressing a 24 KB chunk; a context
    serves one thread at a time, so each encoding or reading thread has its own.
    """

    def __init__(self) -> None:
        self.compressors: dict[tuple[int, bool], zstandard.ZstdCompressor] = {}
        self.decompressor = zstandard.ZstdDecompressor()

    def compressor(self, level: int, checksum: bool) -> zstandard.ZstdCompressor:
        found = self.compressors.get((level, checksum))
        if found is None:
            found = zstandard.ZstdCompressor(level=level, write_checksum=checksum)
            self.compressors[level, checksum] = found
        return found


_CONTEXTS: Final = _ZstdContexts()


def _crc(data: Any) -> bytes:
    """The crc32c of a bytes-like ``data``, four bytes little-endian (``bytes`` are not copied)."""
    raw = data if type(data) is bytes else bytes(data)
    return int(google_crc32c.value(raw)).to_bytes(4, "little")


# -- the inner codec pipeline ------------------------------------------------------------------


class UnsupportedPipeline(Exception):  # noqa: N818 - a signal for the fallback, not an error
    """The array's codecs are not ones the fast path decodes; use zarr-python."""


@dataclass
class ChunkCodec:
    """Encode/decode one inner chunk of fixed ``shape`` with a Zarr V3 codec list.

    Supports exactly the codecs mrecd writes: ``bytes`` (either endianness),
    ``vlen-utf8``, ``numcodecs.shuffle``, ``zstd``, ``gzip``, ``crc32c``.
    """

    dtype: str
    shape: tuple[int, ...]
    codecs: list[dict[str, Any]]
    _steps: list[tuple[str, Any]] = field(init=False, repr=False)
    _endian: str = field(init=False, repr=False)
    _np_dtype: np.dtype[Any] = field(init=False, repr=False)
    _stored_dtype: np.dtype[Any] = field(init=False, repr=False)
    _nbytes: int = field(init=False, repr=False)
    _precise: bool = field(init=False, repr=False)
    _batchable: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.codecs:
            raise UnsupportedPipeline("no codecs")
        first = self.codecs[0]
        name = first.get("name")
        config = first.get("configuration") or {}
        if name == "bytes" and self.dtype != "string":
            self._endian = "<" if config.get("endian", "little") == "little" else ">"
        elif name == "vlen-utf8" and self.dtype == "string":
            self._endian = "<"
        else:
            raise UnsupportedPipeline(f"array->bytes codec {name!r}")
        self._steps = []
        for codec in self.codecs[1:]:
            cname = codec.get("name")
            conf = codec.get("configuration") or {}
            if cname == "numcodecs.shuffle":
                self._steps.append(("shuffle", int(conf.get("elementsize", 8))))
            elif cname == "zstd":
                level, checksum = int(conf.get("level", 0)), bool(conf.get("checksum", False))
                self._steps.append(("zstd", (level, checksum)))
            elif cname == "gzip":
                self._steps.append(("gzip", int(conf.get("level", 5))))
            elif cname == "crc32c":
                self._steps.append(("crc32c", None))
            else:
                raise UnsupportedPipeline(f"bytes->bytes codec {cname!r}")
        if self.dtype != "string":  # the dtypes every encode and decode uses, resolved once
            self._np_dtype = numpy_dtype(self.dtype)
            self._stored_dtype = self._np_dtype.newbyteorder("<" if self._endian == "<" else ">")
            self._nbytes = int(np.prod(self.shape)) * self._np_dtype.itemsize
        else:
            self._nbytes = 0  # variable: a string chunk's size is in its own encoding
        # bytes (little-endian), shuffle 8, zstd, crc32c: the pipeline of declared-precision
        # columns, which every frame read decodes; it gets a straight-line decode
        kinds = [(kind, arg if kind == "shuffle" else None) for kind, arg in self._steps]
        self._precise = (
            _unshuffle_c is not None
            and self.dtype != "string"
            and self._endian == "<"
            and kinds == [("shuffle", self._np_dtype.itemsize), ("zstd", None), ("crc32c", None)]
        )
        self._batchable = (
            self.dtype != "string"
            and self._nbytes > 0
            and self._endian == "<"
            and kinds == [("shuffle", self._np_dtype.itemsize), ("zstd", None), ("crc32c", None)]
        )

    def fill(self) -> npt.NDArray[Any]:
        """A chunk of the fill value (zeros, ``False``, empty strings)."""
        if self.dtype == "string":
            return np.full(self.shape, "", dtype=STRING_DTYPE)
        return np.zeros(self.shape, dtype=numpy_dtype(self.dtype))

    def encode(self, chunk: npt.NDArray[Any]) -> bytes:
        """Bytes of one full-shape chunk.

        Each step hands its output buffer to the next without an intermediate
        ``bytes`` copy; zstd and crc32c release the GIL, so chunks of one
        commit encode in parallel threads.
        """
        if self.dtype == "string":
            data: Any = _VLEN.encode(np.asarray(chunk, dtype=object).ravel())
        else:
            data = np.ascontiguousarray(chunk, dtype=self._np_dtype).view(np.uint8).ravel()
        native = self._native_level
        if native is not None:  # the bytes a batch of the native encoder makes
            run = (data, 0, 1, data.nbytes, self._np_dtype.itemsize)
            return _kernel.encode([run], native, 1)[0][0]
        for kind, arg in self._steps:
            if kind == "shuffle":
                data = _shuffle(data, arg)
            elif kind == "zstd":
                data = _CONTEXTS.compressor(*arg).compress(data)
            elif kind == "gzip":
                data = gzip.compress(bytes(data), compresslevel=arg, mtime=0)
            else:
                data = bytes(data) + _crc(data)
        return data if type(data) is bytes else bytes(data)

    def encode_many(self, chunks: Sequence[npt.NDArray[Any]]) -> list[bytes]:
        """:meth:`encode` of each of ``chunks`` (full-shape), batched: :func:`encode_batches`."""
        return encode_batches([(self, chunks)])[0]

    @property
    def nbytes(self) -> int:
        """Bytes of one decoded chunk (0: variable, a string chunk)."""
        return self._nbytes

    @property
    def _native_level(self) -> int | None:
        """The zstd level when the native encoder encodes this pipeline (else ``None``)."""
        batch = self.zstd_batch
        return batch[0] if batch is not None and not batch[1] and _kernel is not None else None

    @property
    def zstd_batch(self) -> tuple[int, bool] | None:
        """The zstd level and checksum flag when :func:`encode_batches` batches this pipeline."""
        return self._steps[1][1] if self._batchable else None

    def shuffled(
        self, chunks: Sequence[npt.NDArray[Any]], out: npt.NDArray[np.uint8]
    ) -> npt.NDArray[np.uint8]:
        """The shuffled bytes of each chunk, one row each (the batched pipeline's first step),
        written into ``out`` (``len(chunks) * nbytes`` bytes) and returned as its rows.

        One numpy call shuffles them all, releasing the GIL once: from the chunks as
        they are when they are the rows of one array with a word of slack after them
        (a batch's rounding, :func:`~mrecd.model.quantize_rows`), else from a copy
        gathered by plain memory copies that keep the GIL. (A copy per chunk releases
        and retakes the GIL per chunk, and each retake waits for the busy appending
        thread; numcodecs' per-chunk loop keeps it, but is slower.)
        """
        n, size = len(chunks), self._np_dtype.itemsize
        found = _rows_of_one_array(chunks, self._np_dtype, slack=size - 1)
        if found is None:
            found = self.gathered(chunks, "gathered", slack=size), 0
        owner, offset = found
        _byte_planes(owner, offset, n, self._nbytes, size, out)
        return out.reshape(n, self._nbytes)

    def gathered(
        self, chunks: Sequence[npt.NDArray[Any]], name: str, *, slack: int = 0
    ) -> npt.NDArray[np.uint8]:
        """The plain bytes of ``chunks`` back to back (and ``slack`` more bytes), in this
        thread's buffer ``name``: plain memory copies, which keep the GIL."""
        gathered = _scratch(name, len(chunks) * self._nbytes + slack)
        view = memoryview(gathered).cast("B")
        for k, chunk in enumerate(chunks):
            plain = np.ascontiguousarray(chunk, dtype=self._np_dtype)
            view[k * self._nbytes : (k + 1) * self._nbytes] = memoryview(plain).cast("B")
        return gathered

    def decode(self, data: bytes | memoryview, *, where: str = "") -> npt.NDArray[Any]:
        """The full-shape chunk encoded in ``data``; refuses a checksum mismatch."""
        if self._precise:
            return self._decode_precise(data, where)
        buf: Any = data
        for kind, arg in reversed(self._steps):
            if kind == "crc32c":
                view = memoryview(buf).cast("B")
                if len(view) < 4 or _crc(view[:-4]) != view[-4:]:
                    raise InvalidRecord("chunk checksum (crc32c) does not match", path=where)
                buf = view[:-4]
            elif kind == "zstd":
                buf = _zstd_decompress(buf, self._nbytes, where)
            elif kind == "gzip":
                buf = zlib.decompress(buf, wbits=47)
            else:
                buf = _unshuffle(buf, arg)
        if self.dtype == "string":
            items = _VLEN.decode(bytes(buf))
            return np.asarray(items, dtype=STRING_DTYPE).reshape(self.shape)
        if len(buf) != self._nbytes:
            raise InvalidRecord(
                f"chunk holds {len(buf)} bytes, expected {self._nbytes}", path=where
            )
        array = np.frombuffer(buf, dtype=self._stored_dtype).reshape(self.shape)
        return array if self._endian == "<" else array.astype(self._np_dtype)

    def _decode_precise(self, data: bytes | memoryview, where: str) -> npt.NDArray[Any]:
        """:meth:`decode` of crc32c(zstd(shuffle(bytes))): one copy from zstd's output into
        the returned array (the unshuffle writes it), no intermediate buffers."""
        raw = data if type(data) is bytes else bytes(data)
        if len(raw) < 4 or _crc(raw[:-4]) != raw[-4:]:
            raise InvalidRecord("chunk checksum (crc32c) does not match", path=where)
        plain = _zstd_decompress(memoryview(raw)[:-4], self._nbytes, where)
        if len(plain) != self._nbytes:
            raise InvalidRecord(
                f"chunk holds {len(plain)} bytes, expected {self._nbytes}", path=where
            )
        out = np.empty(self.shape, dtype=self._np_dtype)
        assert _unshuffle_c is not None
        _unshuffle_c(plain, out.reshape(-1).view(np.uint8), self._np_dtype.itemsize)
        return out


def encode_batches(
    batches: Sequence[tuple[ChunkCodec, Sequence[npt.NDArray[Any]]]],
) -> list[list[bytes]]:
    """The encoded bytes of every chunk of every ``(codec, chunks)`` batch, in order.

    With the native encoder (:func:`_encode_native`) where it was built, else in Python
    (:func:`_encode_python`).
    """
    if _kernel is not None:
        return _encode_native(batches)
    return _encode_python(batches)


def _encode_native(
    batches: Sequence[tuple[ChunkCodec, Sequence[npt.NDArray[Any]]]],
) -> list[list[bytes]]:
    """:func:`encode_batches` through ``_kernel``: the chunks of declared-precision pipelines
    (shuffle, zstd, crc32c) of one zstd level go to one native call, which shuffles,
    compresses and checksums them on two native threads without taking the GIL once.

    Chunks that lie back to back in one array (a batch's rounding) are handed over where
    they are; others are first gathered into a buffer of this thread's.
    """
    out: list[list[bytes]] = [[] for _ in batches]
    runs: dict[int, list[tuple[int, tuple[Any, int, int, int, int]]]] = {}
    gathered = 0
    for b, (codec, chunks) in enumerate(batches):
        level = codec._native_level
        if level is None:  # another pipeline, or zstd's own checksum asked for
            out[b] = [codec.encode(chunk) for chunk in chunks]
            continue
        if not chunks:
            continue
        found = _rows_of_one_array(chunks, codec._np_dtype, slack=0)
        if found is None:
            found = codec.gathered(chunks, f"gathered-{gathered}"), 0
            gathered += 1
        owner, offset = found
        run = (owner, offset, len(chunks), codec.nbytes, codec._np_dtype.itemsize)
        runs.setdefault(level, []).append((b, run))
    for level, members in runs.items():
        encoded = _kernel.encode([run for _, run in members], level, _ZSTD_THREADS)
        for (b, _), chunks_bytes in zip(members, encoded, strict=True):
            out[b] = chunks_bytes
    return out


def _encode_python(
    batches: Sequence[tuple[ChunkCodec, Sequence[npt.NDArray[Any]]]],
) -> list[list[bytes]]:
    """:func:`encode_batches` without the native encoder.

    The bytes are those of :meth:`ChunkCodec.encode` one chunk at a time, with
    fewer calls: the chunks of declared-precision pipelines (shuffle, zstd,
    crc32c) are shuffled, then compressed by one zstd call per zstd setting,
    in parallel native threads that never take the GIL. A chunk at a time
    takes and drops the GIL several times per chunk, and under an appending
    thread busy in Python each retake waits up to the interpreter's switch
    interval: a commit's encoding then lags the appends it should overlap.
    """
    out: list[list[bytes]] = [[] for _ in batches]
    batched = [
        (b, codec, chunks) for b, (codec, chunks) in enumerate(batches) if _batches(codec, chunks)
    ]
    scratch = _scratch("shuffled", sum(len(chunks) * codec.nbytes for _, codec, chunks in batched))
    grouped: dict[tuple[int, bool], list[tuple[int, npt.NDArray[np.uint8]]]] = {}
    used = 0
    for b, (codec, chunks) in enumerate(batches):
        setting = codec.zstd_batch
        if setting is None or len(chunks) < 2:  # not batched (see _batches)
            out[b] = [codec.encode(chunk) for chunk in chunks]
            continue
        size = len(chunks) * codec.nbytes
        grouped.setdefault(setting, []).append(
            (b, codec.shuffled(chunks, scratch[used : used + size]))
        )
        used += size
    for (level, checksum), members in grouped.items():
        rows = [row for _, shuffled in members for row in shuffled]
        segments = _CONTEXTS.compressor(level, checksum).multi_compress_to_buffer(
            rows, threads=_ZSTD_THREADS
        )
        k = 0
        for b, shuffled in members:
            for _ in range(len(shuffled)):
                data = segments[k].tobytes()
                out[b].append(data + _crc(data))
                k += 1
    return out


def _batches(codec: ChunkCodec, chunks: Sequence[npt.NDArray[Any]]) -> bool:
    """Whether :func:`encode_batches` compresses ``chunks`` in its one zstd call."""
    return codec.zstd_batch is not None and len(chunks) > 1


_SCRATCH = threading.local()
_SCRATCH_KEPT: Final = 32 << 20  # bytes of shuffled rows a thread keeps between batches


def _scratch(name: str, nbytes: int) -> npt.NDArray[np.uint8]:
    """``nbytes`` of this thread's reusable buffer ``name``.

    A fresh multi-megabyte buffer per commit has its pages faulted in (and
    zeroed by the kernel) as they are first written, some while the GIL is
    held; a kept one is warm. Buffers above ``_SCRATCH_KEPT`` are not kept.
    """
    kept: npt.NDArray[np.uint8] | None = getattr(_SCRATCH, name, None)
    if kept is not None and kept.size >= nbytes:
        return kept[:nbytes]
    fresh = np.empty(nbytes, dtype=np.uint8)
    if nbytes <= _SCRATCH_KEPT:
        setattr(_SCRATCH, name, fresh)
    return fresh


def _rows_of_one_array(
    chunks: Sequence[npt.NDArray[Any]], dtype: np.dtype[Any], *, slack: int
) -> tuple[npt.NDArray[Any], int] | None:
    """The array owning ``chunks`` and the byte offset of the first, when they are
    consecutive C-contiguous chunks of ``dtype`` in its memory (the rows a batch's
    rounding makes) and ``slack`` bytes of it follow the last; else ``None``."""
    first = chunks[0]
    owner = first.base
    if not (
        isinstance(owner, np.ndarray)
        and owner.base is None
        and owner.flags.c_contiguous
        and first.dtype == dtype
        and first.flags.c_contiguous
    ):
        return None
    step = first.nbytes
    start = _address(first)
    offset = start - _address(owner)
    if offset < 0 or offset + len(chunks) * step + slack > owner.nbytes:
        return None
    for k, chunk in enumerate(chunks):
        if (
            chunk.base is not owner
            or _address(chunk) != start + k * step
            or chunk.dtype != dtype
            or chunk.nbytes != step
            or not chunk.flags.c_contiguous
        ):
            return None
    return owner, offset


def _byte_planes(
    source: npt.NDArray[Any], offset: int, n: int, nbytes: int, size: int, out: npt.NDArray[Any]
) -> None:
    """Byte-shuffle ``n`` chunks of ``nbytes`` (elements of ``size`` bytes) that lie back to
    back in ``source``'s memory from byte ``offset``, into ``out``: byte k of every element
    of a chunk, for k in order, chunk after chunk.

    Byte k of an element is the low byte of the little-endian word read ``k`` bytes into
    it, so one casting copy of overlapping unaligned words makes every byte plane (2.4x
    numpy's byte-strided transposing copy, one GIL release). The last word read starts
    ``size - 1`` bytes before the end: that many bytes of ``source`` must follow the
    chunks (numpy refuses a view that would read past ``source``).
    """
    if size not in (1, 2, 4, 8):  # no word of that size: numpy's byte-strided copy
        planes = out.reshape(n, size, nbytes // size).transpose(0, 2, 1)
        flat = source.reshape(-1).view(np.uint8)[offset : offset + n * nbytes]
        planes[...] = flat.reshape(n, nbytes // size, size)
        return
    words = np.ndarray(
        (n, size, nbytes // size),
        dtype=np.dtype(f"<u{size}"),
        buffer=source,
        offset=offset,
        strides=(nbytes, 1, size),
    )
    np.copyto(out.reshape(n, size, nbytes // size), words, casting="unsafe")


def _address(array: npt.NDArray[Any]) -> int:
    """Where ``array``'s first element is in memory."""
    return int(array.__array_interface__["data"][0])


def _zstd_decompress(data: Any, nbytes: int, where: str) -> bytes:
    """One zstd frame decompressed with this thread's context (``nbytes``: its size, if known).

    ``nbytes`` bounds a frame whose header omits its size (other writers may);
    a longer frame, or bytes that are no zstd frame, are a damaged chunk.
    """
    try:
        if not nbytes and zstandard.frame_content_size(data) < 0:  # unbounded: stream it
            return bytes(_CONTEXTS.decompressor.decompressobj().decompress(data))
        return _CONTEXTS.decompressor.decompress(data, max_output_size=nbytes)
    except zstandard.ZstdError as exc:
        raise InvalidRecord(f"chunk does not decompress (zstd: {exc})", path=where) from None


def _shuffle(data: Any, size: int) -> Any:
    """Byte shuffle (``numcodecs.shuffle``): byte k of every element, for k in order."""
    raw = np.frombuffer(data, dtype=np.uint8)
    whole = len(raw) - len(raw) % size
    if whole == len(raw):  # the common case: one transposing copy, no concatenation
        out = np.empty((size, whole // size), dtype=np.uint8)
        out.T[...] = raw.reshape(-1, size)
        return out.reshape(-1)
    return raw[:whole].reshape(-1, size).T.tobytes() + raw[whole:].tobytes()


def _unshuffle(data: Any, size: int) -> Any:
    """The inverse of :func:`_shuffle`."""
    shuffled = np.frombuffer(data, dtype=np.uint8)
    whole = len(shuffled) - len(shuffled) % size
    if whole == len(shuffled) and _unshuffle_c is not None:
        out = np.empty(whole, dtype=np.uint8)  # becomes the decoded chunk: no further copy
        _unshuffle_c(shuffled, out, size)
        return out
    if whole == len(shuffled):
        out = np.empty((whole // size, size), dtype=np.uint8)
        out.T[...] = shuffled.reshape(size, -1)
        return out.reshape(-1)
    return shuffled[:whole].reshape(size, -1).T.tobytes() + shuffled[whole:].tobytes()


# -- layout of an array we write ---------------------------------------------------------------


@dataclass(frozen=True)
class ArrayLayout:
    """How a growable array is cut: ``chunk_rows`` per inner chunk, ``shard_rows`` per shard."""

    dtype: str
    trailing: tuple[int, ...]
    chunk_rows: int
    shard_rows: int
    codecs: tuple[dict[str, Any], ...]

    @property
    def chunks_per_shard(self) -> int:
        """Inner chunks in one shard."""
        return self.shard_rows // self.chunk_rows

    @property
    def index_bytes(self) -> int:
        """Size of a shard index including its crc32c."""
        return 16 * self.chunks_per_shard + 4

    def chunk_shape(self) -> tuple[int, ...]:
        """Inner chunk shape: ``[chunk_rows, *trailing]`` (a 0-length axis counts as 1)."""
        return (self.chunk_rows, *(max(1, t) for t in self.trailing))

    def metadata(self, length: int, attributes: dict[str, Any]) -> dict[str, Any]:
        """The array's ``zarr.json`` at ``length`` rows."""
        trailing = [max(1, t) for t in self.trailing]
        return {
            "zarr_format": 3,
            "node_type": "array",
            "shape": [length, *self.trailing],
            "data_type": ZARR_DATA_TYPE[self.dtype],
            "chunk_grid": {
                "name": "regular",
                "configuration": {"chunk_shape": [self.shard_rows, *trailing]},
            },
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": _fill_json(self.dtype),
            "codecs": [
                {
                    "name": "sharding_indexed",
                    "configuration": {
                        "chunk_shape": [self.chunk_rows, *trailing],
                        "codecs": list(self.codecs),
                        "index_codecs": SHARD_INDEX_CODECS,
                        "index_location": "start",
                    },
                }
            ],
            "attributes": attributes,
            "storage_transformers": [],
        }


def _fill_json(dtype: str) -> Any:
    if dtype == "string":
        return ""
    if dtype == "bool":
        return False
    if dtype in ("c64", "c128"):
        return [0.0, 0.0]
    if dtype == "f64":
        return 0.0
    return 0


# -- writing -------------------------------------------------------------------------------------


class ArrayCommit:
    """The chunks one commit writes to one array, and the metadata that follows them
    (``None``: the published ``zarr.json`` still holds them)."""

    def __init__(
        self,
        appender: ArrayAppender,
        jobs: list[tuple[int, npt.NDArray[Any]]],
        metadata: dict[str, Any] | None,
    ) -> None:
        self.appender = appender
        self.jobs = jobs
        self.metadata = metadata
        self.encoded: list[bytes | None] = [None] * len(jobs)

    def encode_range(self, start: int, stop: int) -> None:
        """Encode jobs ``[start, stop)``; disjoint ranges may run in parallel threads."""
        self.encoded[start:stop] = self.appender.codec.encode_many(
            [chunk for _, chunk in self.jobs[start:stop]]
        )

    @staticmethod
    def encode_all(commits: Sequence[ArrayCommit]) -> None:
        """Encode every job of ``commits`` at once (:func:`encode_batches`)."""
        batches = [(c.appender.codec, [chunk for _, chunk in c.jobs]) for c in commits]
        for commit, encoded in zip(commits, encode_batches(batches), strict=True):
            commit.encoded[:] = encoded

    def then(self, later: ArrayCommit) -> ArrayCommit:
        """This commit and ``later`` (the next one of the same array, both encoded) as one.

        Written, its chunks land where the two commits would put them one after
        the other, and the shard indexes and ``zarr.json`` end as the later one's.
        """
        metadata = self.metadata if later.metadata is None else later.metadata
        merged = ArrayCommit(self.appender, self.jobs + later.jobs, metadata)
        merged.encoded = self.encoded + later.encoded
        return merged

    def write(self) -> None:
        """Chunk bytes at the shard tails, the shard indexes, then ``zarr.json``."""
        encoded = [(job[0], data) for job, data in zip(self.jobs, self.encoded, strict=True)]
        assert all(data is not None for _, data in encoded), "encode before write"
        self.appender._put(encoded, self.metadata)  # type: ignore[arg-type]


class _ShardFile:
    """One shard object open for positional writes, with its index held in memory."""

    def __init__(self, path: Location, layout: ArrayLayout) -> None:
        self.path = path
        self.layout = layout
        self.file = path.store.open_positional(path.key)
        size = self.file.size
        n = layout.chunks_per_shard
        if size >= layout.index_bytes:
            raw = self.file.pread(0, layout.index_bytes)
            if _crc(raw[:-4]) != raw[-4:]:
                raise InvalidRecord("shard index checksum does not match", path=path.key)
            self.index = np.frombuffer(raw[:-4], dtype="<u8").reshape(n, 2).copy()
            self.end = size
        else:
            self.index = np.full((n, 2), _EMPTY, dtype="<u8")
            self.end = layout.index_bytes
        self.dirty = False

    def put_many(self, chunks: Sequence[tuple[int, bytes]]) -> None:
        """Write ``chunks`` back to back at the tail in one positional write, then index them."""
        if not chunks:
            return
        start = self.end
        self.file.pwrite(
            start, chunks[0][1] if len(chunks) == 1 else b"".join(d for _, d in chunks)
        )
        for chunk, data in chunks:
            self.index[chunk] = (start, len(data))
            start += len(data)
        self.end = start
        self.dirty = True

    def drop_from(self, chunk: int) -> None:
        """Forget chunks ``>= chunk`` and cut the file after the last kept chunk."""
        self.index[chunk:] = _EMPTY
        kept = self.index[:chunk]
        live = kept[kept[:, 0] != _EMPTY]
        self.end = int((live[:, 0] + live[:, 1]).max()) if len(live) else self.layout.index_bytes
        self.file.truncate(self.end)
        self.dirty = True

    def write_index(self) -> None:
        raw = self.index.astype("<u8").tobytes()
        self.file.pwrite(0, raw + _crc(raw))
        self.dirty = False

    def close(self) -> None:
        self.file.close()


class ArrayAppender:
    """Append rows to a sharded Zarr array, positionally (a store with positional writes).

    Rows accumulate in memory until :meth:`flush`, which encodes the complete
    inner chunks plus the partial tail chunk, writes them at the tails of their
    shard files, rewrites the touched shard indexes, then replaces the array's
    ``zarr.json`` with the new shape (data first, metadata after). The partial
    tail chunk is kept in memory and re-encoded at the next flush (its old
    bytes become bounded dead bytes, chunking.md §3).

    A ``grow_ahead`` array publishes its shape a shard at a time: an automatic
    commit whose rows fit the shape already published leaves ``zarr.json``
    alone, and one that outgrows it publishes the end of the shard it reaches.
    Readers take every such array to its logical length and tolerate longer
    ones (trajectory.md §3.1), so the store a commit leaves means the same; an
    exact commit (a durable flush) publishes the exact length. Only arrays
    whose logical length is bounded by ``nstep`` or ``offset`` may grow ahead:
    an index read by its leading entries (``step_index``) may not.

    Parameters
    ----------
    path
        The array's location (holding ``zarr.json`` and ``c/``).
    layout
        Extents and codecs.
    attributes
        The array's attributes (``meta_dtype`` …), written with its metadata.
    length
        Rows already committed; the reopen rule trims the array to it.
    grow_ahead
        Publish shapes a shard at a time between exact commits (above).
    """

    def __new__(cls, path: Location, *args: Any, **kwargs: Any) -> ArrayAppender:
        """On a store without positional writes: the object-storage appender instead."""
        if cls is ArrayAppender and not path.store.positional_writes:
            from ._object_live import ObjectArrayAppender

            return super().__new__(ObjectArrayAppender)
        return super().__new__(cls)

    def __init__(
        self,
        path: Location,
        layout: ArrayLayout,
        attributes: dict[str, Any] | None = None,
        *,
        length: int = 0,
        grow_ahead: bool = False,
    ) -> None:
        self.path = path
        self.layout = layout
        self.attributes = dict(attributes or {})
        self.grow_ahead = grow_ahead
        self._published: int | None = None  # the shape in zarr.json once queued commits land
        self.codec = ChunkCodec(layout.dtype, layout.chunk_shape(), list(layout.codecs))
        self._shards: dict[int, _ShardFile] = {}
        self._flushed = 0  # rows whose bytes and metadata are on disk
        self._tail: npt.NDArray[Any] | None = None  # rows of the partial last chunk, on disk
        self._pending: list[npt.NDArray[Any]] = []
        self._pending_rows = 0
        self._touched: set[_ShardFile] = set()
        self._metadata_dirty = False
        # A new array stays invisible (no zarr.json) until its first commit writes
        # its data: a crash before then leaves nothing a reader could take as content.
        self._created = (path / "zarr.json").is_file()
        if self._created:
            self._reopen(length)
        elif path.store.positional_writes:
            # shards a commit cut short left before this array's first zarr.json are no
            # one's content (one writer holds the lease): one killed between a shard's
            # data and its index would otherwise be opened with a zeroed index
            path.store.delete_prefix((path / "c").key)

    @property
    def length(self) -> int:
        """Rows appended so far (on disk or pending)."""
        return self._flushed + self._pending_rows

    def append(self, rows: npt.NDArray[Any]) -> None:
        """Queue rows (shape ``[n, *trailing]``); they land at the next :meth:`flush`."""
        if rows.shape[1:] != self.layout.trailing:
            raise InvalidRecord(
                f"rows of shape {list(rows.shape)} do not fit trailing"
                f" {list(self.layout.trailing)}",
                path=self.path.key,
            )
        if len(rows):
            self._pending.append(rows)
            self._pending_rows += len(rows)

    # -- flush -------------------------------------------------------------------------------

    def prepare(self, *, exact: bool = True) -> ArrayCommit | None:
        """Take the pending rows as the chunks of the next commit (``None``: nothing to write).

        Bookkeeping advances now, on the caller's thread; the returned commit is
        encoded and written later (possibly on another thread) by
        :meth:`ArrayCommit.write`. Commits of one appender must be written in
        the order they were prepared. ``exact=False`` lets a ``grow_ahead``
        array keep or grow its published shape instead of stating its length;
        an exact commit with nothing pending still trims a shape grown ahead.
        """
        if not self._pending_rows:
            if self._created and self._published == self._flushed:
                return None
            self._created = True  # an empty new array still publishes its metadata
            return ArrayCommit(self, [], self._metadata_for(self._flushed, exact=True))
        self._created = True
        c = self.layout.chunk_rows
        first_chunk = self._flushed // c
        total = self._flushed + self._pending_rows
        tail_rows = total % c
        if self._tail is None and all(len(p) == c for p in self._pending):
            # frame-aligned chunks (the common case): each queued piece is a chunk
            rows = None
            pieces: list[npt.NDArray[Any]] = list(self._pending)
        else:
            parts = ([self._tail] if self._tail is not None else []) + self._pending
            rows = np.concatenate(parts) if len(parts) > 1 else parts[0]
            pieces = [rows[k : k + c] for k in range(0, len(rows), c)]
        jobs = []
        for k, piece in enumerate(pieces):
            if len(piece) < c or piece.shape[1:] != self.codec.shape[1:]:
                full = self.codec.fill()
                full[tuple(slice(0, n) for n in piece.shape)] = piece
                piece = full
            jobs.append((first_chunk + k, piece))
        self._tail = (
            rows[len(rows) - tail_rows :].copy() if rows is not None and tail_rows else None
        )
        self._flushed = total
        self._pending = []
        self._pending_rows = 0
        return ArrayCommit(self, jobs, self._metadata_for(total, exact=exact))

    def _metadata_for(self, length: int, *, exact: bool) -> dict[str, Any] | None:
        """The ``zarr.json`` a commit to ``length`` rows publishes (``None``: keep the one
        published), and the shape it states becomes the published one."""
        shape = length
        if self.grow_ahead and not exact:
            if self._published is not None and self._published >= length:
                return None
            shape = -(-length // self.layout.shard_rows) * self.layout.shard_rows
        self._published = shape
        return self.layout.metadata(shape, self.attributes)

    def flush(self) -> None:
        """Encode and write everything pending on this thread."""
        commit = self.prepare()
        if commit is not None:
            commit.encode_range(0, len(commit.jobs))
            commit.write()

    def _put(self, encoded: Sequence[tuple[int, bytes]], metadata: dict[str, Any] | None) -> None:
        per_shard = self.layout.chunks_per_shard
        by_shard: dict[int, list[tuple[int, bytes]]] = {}
        for chunk, data in encoded:  # one tail write per shard, chunks in commit order
            by_shard.setdefault(chunk // per_shard, []).append((chunk % per_shard, data))
        for index, chunks in by_shard.items():
            shard = self._shard(index)
            shard.put_many(chunks)
            shard.write_index()
            self._touched.add(shard)
        if metadata is not None:
            write_json_atomic(self.path / "zarr.json", metadata)
            self._metadata_dirty = True

    def sync(self) -> None:
        """Make every write since the last sync durable (shards, then ``zarr.json``)."""
        for shard in self._touched:
            shard.file.sync()
        self._touched.clear()
        if self._metadata_dirty:
            self.path.store.sync([(self.path / "zarr.json").key])
            self._metadata_dirty = False

    def close(self) -> None:
        """Close the shard files (pending rows are dropped: flush first)."""
        for shard in self._shards.values():
            shard.close()
        self._shards.clear()

    # -- internals ---------------------------------------------------------------------------

    def _shard(self, index: int) -> _ShardFile:
        shard = self._shards.get(index)
        if shard is None:
            shard = _ShardFile(
                self.path / chunk_key(index, 1 + len(self.layout.trailing)), self.layout
            )
            self._shards[index] = shard
        return shard

    def _reopen(self, length: int) -> None:
        """Trim to ``length`` rows (the reopen rule): shape first, then shard bytes."""
        document = read_json(self.path / "zarr.json") or {}
        physical = int(document.get("shape", [0])[0])
        if length > physical:
            raise InvalidRecord(
                f"array holds {physical} rows but the commit needs {length}", path=self.path.key
            )
        c = self.layout.chunk_rows
        per_shard = self.layout.chunks_per_shard
        tail_rows = length % c
        if tail_rows:  # keep the committed rows of the partial chunk in memory
            reader = ArrayReader(Tree(self.path.as_store()), "", document)
            self._tail = reader.read(length - tail_rows, length).copy()
            reader.close()
        write_json_atomic(self.path / "zarr.json", self.layout.metadata(length, self.attributes))
        # Chunks holding committed rows stay as they are on disk, the partial tail
        # chunk included (its bytes stay valid for the committed rows until the
        # next flush rewrites it); only chunks wholly past the commit go.
        keep_chunks = -(-length // c)
        store, grid = self.path.store, self.path / "c"
        dirs, files = store.list_dir(grid.key)
        for name in sorted(dirs + files):
            try:
                index = int(name)
            except ValueError:
                continue
            first = index * per_shard
            if first >= keep_chunks:
                store.delete((grid / name).key)
                store.delete_prefix((grid / name).key)
                continue
            if first + per_shard > keep_chunks:
                shard = self._shard(index)
                shard.drop_from(keep_chunks - first)
                shard.write_index()
        self._flushed = self._published = length


# -- reading -------------------------------------------------------------------------------------


class ArrayReader:
    """Read rows ``[start, stop)`` of a Zarr V3 array in a record :class:`Tree` (directory or zip).

    Touches only the shard indexes and inner chunks holding those rows. Shard
    indexes and the last few decoded chunks are cached, shard entries kept
    open; call :meth:`forget` after the array may have changed (a new
    ``nstep``). Pipelines outside :class:`ChunkCodec` go to zarr-python.
    """

    def __init__(
        self,
        tree: Tree,
        key: str,
        metadata: dict[str, Any],
        *,
        cache_chunks: int | None = None,
    ) -> None:
        self.tree = tree
        self.key = key
        self.metadata = metadata
        #: Decoded chunks kept (``None``: as many as :data:`_CHUNK_CACHE_BYTES` hold).
        self.cache_chunks = _CHUNK_CACHE if cache_chunks is None else cache_chunks
        #: open shard entries, least recently used first
        self._ranges: OrderedDict[int, RangeReader | None] = OrderedDict()
        shape = metadata.get("shape")
        if not isinstance(shape, list) or not shape:
            raise InvalidRecord("array shape must be a non-empty list", path=key)
        self.shape = tuple(int(n) for n in shape)
        zarr_type = metadata.get("data_type")
        if zarr_type not in DTYPE_OF_ZARR:
            raise InvalidRecord(f"data_type {zarr_type!r} is not a column dtype", path=key)
        self.dtype = DTYPE_OF_ZARR[zarr_type]
        self._index_cache: dict[int, npt.NDArray[np.uint64] | None] = {}
        #: the last few decoded chunks, oldest first (an OrderedDict drops its oldest in
        #: O(1); a dict's first key is found by skipping every slot popped before it)
        self._chunk_cache: OrderedDict[int, npt.NDArray[Any]] = OrderedDict()
        self._zarr: Any = None
        #: Rows known committed (set by the trajectory reader): chunks wholly inside
        #: them never change, so a newer view of the array may keep their caches.
        self.committed_rows = 0
        try:
            self._plan()
        except UnsupportedPipeline:
            self._fast = False
        else:
            if cache_chunks is None and self.codec._nbytes:
                self.cache_chunks = max(_CHUNK_CACHE, _CHUNK_CACHE_BYTES // self.codec._nbytes)

    def adopt(self, old: ArrayReader) -> None:
        """Take over what ``old`` (this array before a commit) cached that cannot have changed.

        Committed chunks are immutable: only the partial tail chunk is ever
        rewritten, and trims after a crash remove uncommitted rows only. So
        decoded chunks wholly inside ``old``'s committed rows, and the index
        and open entry of shards made only of such chunks, stay valid.
        """
        same = (
            self._fast
            and old._fast
            and old.metadata.get("codecs") == self.metadata.get("codecs")
            and old.metadata.get("chunk_grid") == self.metadata.get("chunk_grid")
            and self.shape[0] >= old.shape[0]
        )
        complete = min(old.committed_rows, old.shape[0]) // self.inner_rows if same else 0
        full_shards = complete // self.per_shard
        self._chunk_cache.update((c, a) for c, a in old._chunk_cache.items() if c < complete)
        self._index_cache.update((s, i) for s, i in old._index_cache.items() if s < full_shards)
        ranges, old._ranges = old._ranges, OrderedDict()
        for shard, source in ranges.items():
            if shard < full_shards and shard not in self._ranges:
                self._ranges[shard] = source
            elif source is not None:
                source.close()

    def _plan(self) -> None:
        grid = self.metadata.get("chunk_grid", {})
        outer = list(grid.get("configuration", {}).get("chunk_shape", []))
        codecs = self.metadata.get("codecs", [])
        encoding = self.metadata.get("chunk_key_encoding", {})
        sep = (encoding.get("configuration") or {}).get("separator", "/")
        if grid.get("name") != "regular" or encoding.get("name") != "default" or sep != "/":
            raise UnsupportedPipeline("chunk grid or key encoding")
        if not _zero_fill(self.metadata.get("fill_value"), self.dtype):
            # a missing chunk reads as the fill value (storage.md §1); the fast path
            # knows only the zero one mrecd writes, zarr-python knows every spelling
            raise UnsupportedPipeline("fill value")
        if len(outer) != len(self.shape) or any(
            o < s for o, s in zip(outer[1:], self.shape[1:], strict=True)
        ):
            raise UnsupportedPipeline("trailing axes split across chunks")
        self.outer_rows = int(outer[0])
        # a chunk's trailing axes hold at least one entry; a 0-length axis reads as none
        self._trailing = tuple(slice(0, n) for n in self.shape[1:])
        if len(codecs) == 1 and codecs[0].get("name") == "sharding_indexed":
            conf = codecs[0].get("configuration", {})
            inner = list(conf.get("chunk_shape", []))
            if len(inner) != len(self.shape) or inner[1:] != outer[1:]:
                raise UnsupportedPipeline("inner chunks split trailing axes")
            if not _standard_index(conf.get("index_codecs")):
                raise UnsupportedPipeline("shard index codecs")
            self.inner_rows = int(inner[0])
            self.sharded = True
            self.index_at_start = conf.get("index_location", "end") == "start"
            self.per_shard = self.outer_rows // self.inner_rows
            self.codec = ChunkCodec(
                self.dtype, tuple(int(n) for n in inner), list(conf.get("codecs", []))
            )
        else:
            self.inner_rows = self.outer_rows
            self.sharded = False
            self.per_shard = 1
            self.codec = ChunkCodec(self.dtype, tuple(int(n) for n in outer), list(codecs))
        self._fast = True

    def forget(self) -> None:
        """Drop cached shard indexes and chunks (the writer may have moved a tail chunk)."""
        self._index_cache.clear()
        self._chunk_cache.clear()
        self._zarr = None
        self.close()

    def close(self) -> None:
        """Release the shard entries this reader keeps open."""
        ranges, self._ranges = self._ranges, OrderedDict()
        for r in ranges.values():
            if r is not None:
                r.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown os may be gone
            self.close()

    def chunk_of(self, chunk: int) -> npt.NDArray[Any]:
        """Inner chunk ``chunk`` decoded (cached), for readers that search inside chunks."""
        return self._chunk(chunk)

    def _range(self, shard: int) -> RangeReader | None:
        """The open entry of shard ``shard``; at most :data:`_OPEN_SHARDS` stay open per array."""
        ranges = self._ranges
        source: RangeReader | None = ranges.get(shard, _MISSING)
        if source is not _MISSING:
            ranges.move_to_end(shard)  # most recently used last
            return source
        if len(ranges) >= _OPEN_SHARDS:  # close the least recently used
            oldest = ranges.popitem(last=False)[1]
            if oldest is not None:
                oldest.close()
        source = self.tree.open_range(_join(self.key, chunk_key(shard, len(self.shape))))
        ranges[shard] = source
        return source

    def read(self, start: int, stop: int) -> npt.NDArray[Any]:
        """Rows ``[start, stop)``; refuses a range past the array's shape."""
        if not 0 <= start <= stop <= self.shape[0]:
            raise InvalidRecord(
                f"rows [{start}, {stop}) are outside the array's {self.shape[0]} rows",
                path=self.key,
            )
        if not self._fast:
            return self._read_zarr(start, stop)
        if start == stop:
            return np.empty((0, *self.shape[1:]), dtype=numpy_dtype(self.dtype))
        c = self.inner_rows
        trailing = self._trailing
        first = start // c
        if first == (stop - 1) // c:  # one chunk (a frame read): a view of it
            lo = start - first * c
            return self._chunk(first)[lo : lo + stop - start, *trailing]
        pieces = []
        for chunk in range(first, (stop - 1) // c + 1):
            lo = max(start, chunk * c) - chunk * c
            hi = min(stop, (chunk + 1) * c) - chunk * c
            pieces.append(self._chunk(chunk)[lo:hi, *trailing])
        return np.concatenate(pieces)

    def _chunk(self, chunk: int) -> npt.NDArray[Any]:
        cache = self._chunk_cache
        cached = cache.get(chunk)
        if cached is None:
            cached = self._decode_chunk(chunk)
            # shared by every read of the chunk: read-only, so the views handed out
            # are too (a Column then wraps them without a view of its own)
            cached.flags.writeable = False
            if len(cache) >= self.cache_chunks:
                cache.popitem(last=False)
            cache[chunk] = cached
        return cached

    def _decode_chunk(self, chunk: int) -> npt.NDArray[Any]:
        where = f"{self.key}[chunk {chunk}]"
        if not self.sharded:
            data = self.tree.read(_join(self.key, chunk_key(chunk, len(self.shape))))
            return self.codec.fill() if data is None else self.codec.decode(data, where=where)
        shard, inner = divmod(chunk, self.per_shard)
        index = self._shard_index(shard)
        if index is None or index[inner, 0] == _EMPTY:
            return self.codec.fill()
        offset, size = int(index[inner, 0]), int(index[inner, 1])
        source = self._range(shard)
        data = None if source is None else _pread_counted(source, offset, size)
        if data is None or len(data) != size:
            raise InvalidRecord("shard is shorter than its index says", path=where)
        return self.codec.decode(data, where=where)

    def _shard_index(self, shard: int) -> npt.NDArray[np.uint64] | None:
        if shard in self._index_cache:
            return self._index_cache[shard]
        source = self._range(shard)
        nbytes = 16 * self.per_shard + 4
        raw = None
        if source is not None and source.size >= nbytes:
            start = 0 if self.index_at_start else source.size - nbytes
            raw = _pread_counted(source, start, nbytes)
        if raw is None:
            index = None
        else:
            if len(raw) != nbytes or _crc(raw[:-4]) != raw[-4:]:
                raise InvalidRecord(
                    "shard index checksum does not match", path=f"{self.key}/c/{shard}"
                )
            index = np.frombuffer(raw[:-4], dtype="<u8").reshape(self.per_shard, 2)
        self._index_cache[shard] = index
        return index

    def _read_zarr(self, start: int, stop: int) -> npt.NDArray[Any]:
        if self._zarr is None:
            import zarr

            self._zarr = zarr.open_array(store=self.tree.zarr_store, path=self.key, mode="r")
        out = np.asarray(self._zarr[start:stop])
        if self.dtype == "string":
            return out.astype(STRING_DTYPE)
        return out.astype(numpy_dtype(self.dtype), copy=False)


def _join(key: str, sub: str) -> str:
    return f"{key}/{sub}" if key else sub


def _zero_fill(value: Any, dtype: str) -> bool:
    """Whether ``fill_value`` is the zero of ``dtype`` that :meth:`ChunkCodec.fill` makes."""
    if dtype == "string":
        return isinstance(value, str) and not value
    if dtype in ("c64", "c128"):
        return isinstance(value, list) and all(_zero_fill(v, "f64") for v in value)
    if dtype == "bool" or isinstance(value, bool):
        return dtype == "bool" and value is False
    return isinstance(value, (int, float)) and value == 0 and math.copysign(1.0, value) > 0


def _standard_index(codecs: Any) -> bool:
    """Whether a shard index is ``bytes`` (little-endian) then ``crc32c``, what we decode."""
    if not isinstance(codecs, list) or len(codecs) != 2:
        return False
    first, second = codecs
    endian = (first.get("configuration") or {}).get("endian", "little")
    return bool(
        first.get("name") == "bytes" and endian == "little" and second.get("name") == "crc32c"
    )


def _pread_counted(source: RangeReader, offset: int, size: int) -> bytes:
    """Every positional read of the fast path goes through here (benchmarks count bytes)."""
    return source.pread(offset, size)
