"""Repacking a closed record for archive: denser trajectory arrays, same record.

A live record cuts its trajectory arrays for appending: one frame (or 16 KiB)
per inner chunk, zstd level 3, chunks landing one commit at a time. Once the
record is closed nothing is appended again, so the archive re-cuts every
sharded array under ``trajectory/`` into inner chunks of many frames and
encodes them with ``numcodecs.shuffle`` (element size = item size) then zstd at
a high level, ``crc32c`` last — all inside the must-decode set (chunking.md §1).

Sharding stays, with the index at the start of each shard: frame ``i`` is
still read by range reads of one shard index and the one inner chunk per
column that holds it. Every other entry (the root, ``system/``, ``frame/``,
documents, group metadata) is copied byte for byte, and array shapes, fill
values and attributes are kept, so the archive is the same record; it
decodes to the same values bit for bit.

``transpose`` is not used: trajectory columns are cut along the row axis and
every reference column is one-dimensional, where it is the identity; on the
adk protein, byte-shuffles of other element sizes (16, 24, 8·atoms) and
zstd's own parameters (min match 3-6, level 22) measured no better than
shuffle(8) + zstd 19 on multi-frame chunks (``bench/archive.py``).
"""

from __future__ import annotations

import math
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Final

import google_crc32c
import numpy as np

from ...errors import AlreadyExists, InvalidRecord, NotFound, WriterBusy
from ...model import DTYPE_OF_ZARR, numpy_dtype
from ...storage import Location, dumps_json
from ._codecs import CRC32C
from ._layout import BRAND
from ._pack import pack_directory, packed_name
from ._record import record_kind
from ._shard import ArrayReader, ChunkCodec, chunk_key
from ._tree import Tree, open_tree

__all__ = ["ARCHIVE_CHUNK_BYTES", "ArchiveOptions", "archival_codecs", "archive_record"]

#: Raw bytes aimed at per inner chunk when the frames per chunk are not given:
#: large enough that zstd sees many frames, small enough that reading one
#: frame decodes a few MiB per column.
ARCHIVE_CHUNK_BYTES: Final = 4 << 20
#: Raw bytes aimed at per shard (chunking.md §4.1's 256 MiB), at most 4096 inner chunks.
_SHARD_BYTES: Final = 256 << 20
_MAX_CHUNKS_PER_SHARD: Final = 4096
_ZSTD_LEVELS: Final = range(1, 23)
_EMPTY: Final = np.uint64(2**64 - 1)
_SPOOL_IN_RAM: Final = 64 << 20


@dataclass(frozen=True)
class ArchiveOptions:
    """How :func:`archive_record` re-cuts and encodes the trajectory arrays.

    Parameters
    ----------
    frames_per_chunk
        Multiplier of each array's live inner chunk (a chunk of one frame
        becomes one of this many frames); ``None`` picks it so the largest
        inner chunk holds about :data:`ARCHIVE_CHUNK_BYTES` raw bytes.
    level
        zstd level, 1-22 (19 by default: 22 measured no denser on the adk
        protein and is slower).
    """

    frames_per_chunk: int | None = None
    level: int = 19

    def __post_init__(self) -> None:
        k = self.frames_per_chunk
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise InvalidRecord(
                f"frames_per_chunk must be a positive integer, not {k!r}", path="frames_per_chunk"
            )
        if isinstance(self.level, bool) or self.level not in _ZSTD_LEVELS:
            raise InvalidRecord(
                f"the zstd level must be an integer from 1 to 22, not {self.level!r}",
                path="level",
            )


def archive_record(
    source: Location,
    dest: Location | None = None,
    options: ArchiveOptions | None = None,
    *,
    overwrite: bool = False,
) -> Location:
    """Write an archival copy of the closed record directory ``source`` to ``dest``.

    Parameters
    ----------
    source
        A ``*.mrec`` record directory that no writer holds.
    dest
        A ``*.mrec.zip`` (the default, ``<source>.zip`` beside it) or a
        ``*.mrec`` directory.
    options
        Chunking and zstd level (:class:`ArchiveOptions`).
    overwrite
        Replace an existing ``dest``.

    Returns
    -------
    Location
        ``dest``.

    Raises
    ------
    InvalidRecord
        ``source`` is not a record directory, ``dest`` is not named
        ``<stem>.mrec`` or ``<stem>.mrec.zip``, or it is ``source`` itself.
    AlreadyExists
        ``dest`` exists and ``overwrite`` is false.
    NotFound
        Nothing exists at ``source``.
    WriterBusy
        A writer holds the source trajectory (the record is live, not closed).
    """
    options = options or ArchiveOptions()
    if record_kind(source) == "dir" and not source.exists():
        raise NotFound("no record at this path", path=str(source))
    if record_kind(source) != "dir" or not (source / "zarr.json").is_file():
        raise InvalidRecord(
            "only a *.mrec record directory can be archived (a *.mrec.zip is already packed)",
            path=str(source),
        )
    dest = packed_name(source) if dest is None else dest
    kind = record_kind(dest)
    if dest.store.url == source.store.url and dest.key == source.key:
        raise InvalidRecord("the archive cannot replace its own source", path=str(dest))
    if dest.exists() and not overwrite:
        raise AlreadyExists("the archive already exists", path=str(dest))
    with _closed(source), _staging(dest) as staged:
        _copy_repacked(source, staged, options)
        if kind == "zip":
            pack_directory(staged, dest, overwrite=overwrite)
        else:
            if dest.exists():
                dest.store.delete_prefix(dest.key)
            dest.store.rename(staged.key, dest.key)
    return dest


@contextmanager
def _closed(source: Location) -> Iterator[None]:
    """Hold the source trajectory's writer lease, so no writer appends while we copy."""
    trajectory = source / "trajectory"
    if not trajectory.is_dir():  # nothing to hold (and taking the lease would create it)
        yield
        return
    try:
        lease = trajectory.store.writer_lease(trajectory.key, wait=0.0)
    except WriterBusy as exc:
        raise WriterBusy(
            "a writer holds this record's trajectory: close it before archiving",
            path=str(source),
        ) from exc
    try:
        yield
    finally:
        lease.release()


@contextmanager
def _staging(dest: Location) -> Iterator[Location]:
    """A hidden ``*.mrec`` sibling of ``dest`` to build the copy in (stores list no dot-names)."""
    staged = dest.with_name(f".{dest.name}.{uuid.uuid4().hex[:12]}.archive{BRAND}")
    try:
        yield staged
    finally:
        staged.store.delete_prefix(staged.key)


def _copy_repacked(source: Location, staged: Location, options: ArchiveOptions) -> None:
    tree = open_tree(source)
    try:
        arrays = _trajectory_arrays(tree)
        factor = options.frames_per_chunk or _default_factor(arrays.values())
        cut = len(source.key) + 1
        for key in source.store.keys(source.key):
            rel = key[cut:]
            owner = _owning_array(rel, arrays)
            if owner is None:
                data = source.store.get(key)
                if data is None:
                    raise InvalidRecord("an entry vanished while archiving", path=key)
                staged.store.put(f"{staged.key}/{rel}", data)
            elif rel == f"{owner}/zarr.json":
                _repack_array(tree, owner, arrays[owner], staged, factor, options.level)
    finally:
        tree.close()


def _trajectory_arrays(tree: Tree) -> dict[str, dict[str, Any]]:
    """Metadata of every sharded array under ``trajectory/``, by path."""
    found: dict[str, dict[str, Any]] = {}

    def walk(path: str) -> None:
        for name, node in tree.children(path).items():
            child = f"{path}/{name}"
            if node.kind == "group":
                walk(child)
            elif _sharding(node.metadata) is not None and (
                node.metadata.get("data_type") in DTYPE_OF_ZARR
            ):
                found[child] = node.metadata

    if tree.node("trajectory") is not None:
        walk("trajectory")
    return found


def _owning_array(rel: str, arrays: dict[str, dict[str, Any]]) -> str | None:
    """The repacked array whose ``zarr.json`` or chunk ``rel`` is, if any."""
    head = rel
    while "/" in head:
        head = head.rpartition("/")[0]
        if head in arrays:
            return head
    return None


def _sharding(metadata: dict[str, Any]) -> dict[str, Any] | None:
    codecs = metadata.get("codecs") or []
    if len(codecs) == 1 and codecs[0].get("name") == "sharding_indexed":
        conf = codecs[0].get("configuration")
        return conf if isinstance(conf, dict) else None
    return None


def _row_bytes(metadata: dict[str, Any]) -> int:
    dtype = DTYPE_OF_ZARR[metadata["data_type"]]
    item = 16 if dtype == "string" else numpy_dtype(dtype).itemsize  # a string row ~16 B
    return item * math.prod(max(1, int(n)) for n in metadata["shape"][1:])


def _inner_rows(metadata: dict[str, Any]) -> int:
    conf = _sharding(metadata)
    assert conf is not None
    return int(conf["chunk_shape"][0])


def _default_factor(arrays: Any) -> int:
    """Frames per chunk so the largest live inner chunk grows to about 4 MiB."""
    largest = max((_inner_rows(m) * _row_bytes(m) for m in arrays), default=0)
    return max(1, ARCHIVE_CHUNK_BYTES // max(1, largest))


def archival_codecs(metadata: dict[str, Any], level: int) -> list[dict[str, Any]]:
    """The inner pipeline of an archived array: its serializer, shuffle, zstd ``level``, crc32c."""
    conf = _sharding(metadata)
    assert conf is not None
    serializer = conf["codecs"][0]
    dtype = DTYPE_OF_ZARR[metadata["data_type"]]
    middle: list[dict[str, Any]] = []
    if dtype != "string" and (size := numpy_dtype(dtype).itemsize) > 1:
        middle.append({"name": "numcodecs.shuffle", "configuration": {"elementsize": size}})
    middle.append({"name": "zstd", "configuration": {"level": level, "checksum": False}})
    return [serializer, *middle, CRC32C]


def _repack_array(
    tree: Tree,
    key: str,
    metadata: dict[str, Any],
    staged: Location,
    factor: int,
    level: int,
) -> None:
    """Write array ``key`` re-cut into inner chunks ``factor`` times taller, shard by shard."""
    source = ArrayReader(tree, key, metadata, cache_chunks=1)
    try:
        length = source.shape[0]
        live_rows = _inner_rows(metadata)
        rows = live_rows * min(factor, max(1, math.ceil(length / live_rows)))
        chunk_bytes = max(1, rows * _row_bytes(metadata))
        n_chunks = math.ceil(length / rows)
        # a closed record never grows: a shard index needs no slots past the last chunk
        per_shard = max(1, min(_MAX_CHUNKS_PER_SHARD, _SHARD_BYTES // chunk_bytes, n_chunks))
        trailing = [max(1, int(n)) for n in metadata["shape"][1:]]
        new = _archived_metadata(metadata, rows, per_shard, archival_codecs(metadata, level))
        inner = new["codecs"][0]["configuration"]["codecs"]
        codec = ChunkCodec(source.dtype, (rows, *trailing), inner)
        for shard in range(math.ceil(n_chunks / per_shard)):
            first = shard * per_shard
            chunks = range(first, min(n_chunks, first + per_shard))
            with tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_RAM) as spool:
                _write_shard(spool, source, codec, chunks, per_shard, rows)
                spool.seek(0)
                shard_key = f"{staged.key}/{key}/{chunk_key(shard, len(source.shape))}"
                staged.store.put_file(shard_key, spool)
        staged.store.put(f"{staged.key}/{key}/zarr.json", dumps_json(new))
    finally:
        source.close()


def _archived_metadata(
    metadata: dict[str, Any], rows: int, per_shard: int, codecs: list[dict[str, Any]]
) -> dict[str, Any]:
    """``metadata`` with the new grid and inner pipeline; shape, fill and attributes kept."""
    conf = _sharding(metadata)
    assert conf is not None
    trailing = [max(1, int(n)) for n in metadata["shape"][1:]]
    out = dict(metadata)
    out["chunk_grid"] = {
        "name": "regular",
        "configuration": {"chunk_shape": [rows * per_shard, *trailing]},
    }
    out["codecs"] = [
        {
            "name": "sharding_indexed",
            "configuration": {
                **conf,
                "chunk_shape": [rows, *trailing],
                "codecs": codecs,
                "index_location": "start",
            },
        }
    ]
    return out


def _write_shard(
    out: IO[bytes],
    source: ArrayReader,
    codec: ChunkCodec,
    chunks: range,
    per_shard: int,
    rows: int,
) -> None:
    """One shard: its index first (``index_location: start``), then its chunks back to back."""
    index = np.full((per_shard, 2), _EMPTY, dtype="<u8")
    index_bytes = 16 * per_shard + 4
    out.write(b"\0" * index_bytes)
    offset = index_bytes
    length = source.shape[0]
    for n, chunk in enumerate(chunks):
        start = chunk * rows
        values = source.read(start, min(length, start + rows))
        if len(values) < rows:  # the edge chunk is stored whole, padded with the fill value
            full = codec.fill()
            full[: len(values)] = values
            values = full
        data = codec.encode(values)
        out.write(data)
        index[n] = (offset, len(data))
        offset += len(data)
    raw = index.tobytes()
    out.seek(0)
    out.write(raw + _crc32c(raw))
    out.seek(0, 2)


def _crc32c(data: bytes) -> bytes:
    return int(google_crc32c.value(data)).to_bytes(4, "little")
