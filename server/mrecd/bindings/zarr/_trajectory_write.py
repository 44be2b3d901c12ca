"""Writing the ragged trajectory layout by the commit protocol of chunking.md §2.

Frames are admitted by :class:`~mrecd.model.SequenceState` (the rules shared
with the LMDB writer), their updates queued into positional shard appenders,
and every ``K`` frames (or on :meth:`TrajectoryWriter.flush`) committed:

1. every touched array: chunk bytes at the shard tails, shard indexes, then
   the array's ``zarr.json`` replaced atomically;
2. block and cell group metadata (markers set or removed, attribute cell
   written or migrated) in the same commit as the update that caused it;
3. durable flushes only: fsync of the data files, their ``zarr.json`` and
   directories;
4. ``trajectory/zarr.json`` replaced last, carrying ``nstep``, the
   progressions and the producer state (``mrecd_producers``, mrecd's
   extension); durable: fsync it and ``trajectory/``.
"""

from __future__ import annotations

import math
import struct
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import InvalidRecord, PreconditionFailed, ReadOnlyError, WriterBusy
from ...model import (
    STRING_DTYPE,
    TAG_LAYOUT,
    Block,
    BlockSpec,
    Box,
    Declaration,
    Frame,
    SequenceState,
    Update,
    dumps_strict,
    numpy_dtype,
)
from ...storage import IfMatch, Location, dumps_json
from ._codecs import inner_codecs
from ._extents import (
    DENSE_CHUNK_ROWS,
    DENSE_CHUNKS_PER_SHARD,
    chunks_per_shard,
    flush_every,
    row_bytes,
)
from ._json import write_json_atomic
from ._object_live import live_root, rows_per_chunk, trust_committed
from ._producers import ATTRIBUTE as PRODUCERS
from ._producers import Producer, ProducerTable
from ._shard import ArrayAppender, ArrayCommit, ArrayLayout
from ._trajectory_read import TrajectoryReader
from ._tree import Tree

__all__ = ["TrajectoryWriter", "create_trajectory_group"]

_GROUP = {"zarr_format": 3, "node_type": "group"}
_MAX_INFLIGHT = 6  # commits queued behind the committer before an append waits
#: Commits waiting for the committer (its next one included) from which on the ready
#: ones are written as one: a committer that keeps up publishes every commit alone.
_COALESCE_AT = 3
_SYNC_THREADS = 8  # fsyncs (and array writes) of one commit issued at once


def _group_doc(attributes: dict[str, Any]) -> dict[str, Any]:
    return {**_GROUP, "attributes": attributes}


def _dense_layout(dtype: str, trailing: tuple[int, ...] = ()) -> ArrayLayout:
    return ArrayLayout(
        dtype,
        trailing,
        DENSE_CHUNK_ROWS,
        DENSE_CHUNK_ROWS * DENSE_CHUNKS_PER_SHARD,
        tuple(inner_codecs(dtype, dense=True)),
    )


def create_trajectory_group(root: Location, declaration: Declaration) -> None:
    """Create ``trajectory/`` holding the pinned declaration and ``nstep: 0``.

    Block groups appear with their first update; declared per-step meta
    arrays are created empty with their ``meta_dtype``.
    """
    path = root / "trajectory"
    if (path / "zarr.json").is_file():
        raise InvalidRecord("the record already has a trajectory", path=path.key)
    path.mkdir(parents=True, exist_ok=True)
    if declaration.meta:
        (path / "meta").mkdir(exist_ok=True)
        write_json_atomic(path / "meta" / "zarr.json", _group_doc({}))
        for key, spec in declaration.meta.items():
            element, width = TAG_LAYOUT[spec.dtype]
            stored = "string" if element == "json" else element
            ArrayAppender(
                path / "meta" / key,
                _dense_layout(stored, () if width is None else (width,)),
                {"meta_dtype": spec.dtype},
            ).flush()
    marker = path / "zarr.json"
    document = _group_doc({"sequence_schema": declaration.to_dict(), "nstep": 0})
    try:  # create-only: of two racing creators one wins, the other is told
        marker.store.put(marker.key, dumps_json(document), mode="create", durable=True)
    except PreconditionFailed:
        raise InvalidRecord("the record already has a trajectory", path=path.key) from None


# -- blocks ------------------------------------------------------------------------------------


class _BlockWriter:
    """One block group: its columns, masks, and either the regular markers or the CSR index."""

    def __init__(self, path: Location, name: str, spec: BlockSpec) -> None:
        self.path = path
        self.name = name
        self.spec = spec
        self.columns: dict[str, ArrayAppender] = {}
        self.masks: dict[str, ArrayAppender] = {}
        self.step_index: ArrayAppender | None = None
        self.offset: ArrayAppender | None = None
        self.created = False
        self.regular = False
        self.uniform_rows = 0
        self.n_updates = 0
        self.total_rows = 0
        self.attributes_dirty = False
        self.frame_rows = 0

    # -- creation and reopening --------------------------------------------------------------

    def _layouts(self, frame_rows: int) -> dict[str, ArrayLayout]:
        widths = {n: row_bytes(c.dtype, tuple(c.trailing)) for n, c in self.spec.columns.items()}
        narrowest = min(widths.values(), default=8)
        rows = rows_per_chunk(self.path.store, frame_rows, narrowest)
        layouts = {}
        for column, cspec in self.spec.columns.items():
            per_shard = chunks_per_shard(rows, widths[column])
            codecs = tuple(inner_codecs(cspec.dtype, precision=cspec.precision))
            layouts[column] = ArrayLayout(
                cspec.dtype, tuple(cspec.trailing), rows, rows * per_shard, codecs
            )
            if cspec.nullable:
                layouts[f"_validity/{column}"] = ArrayLayout(
                    "bool",
                    (),
                    rows,
                    rows * chunks_per_shard(rows, 1),
                    tuple(inner_codecs("bool", dense=True)),
                )
        return layouts

    def create(self, frame_rows: int) -> None:
        """Create the group and its column arrays, extents frozen from ``frame_rows``."""
        self.path.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path / "zarr.json", _group_doc(self._attributes(markers=False)))
        layouts = self._layouts(frame_rows)
        if any(c.nullable for c in self.spec.columns.values()):
            (self.path / "_validity").mkdir(exist_ok=True)
            write_json_atomic(self.path / "_validity" / "zarr.json", _group_doc({}))
        for column in self.spec.columns:
            self.columns[column] = ArrayAppender(
                self.path / column, layouts[column], grow_ahead=True
            )
            key = f"_validity/{column}"
            if key in layouts:
                self.masks[column] = ArrayAppender(self.path / key, layouts[key], grow_ahead=True)
        self.created = True
        self.frame_rows = frame_rows

    def reopen(self, reader: TrajectoryReader) -> None:
        """Pick up a committed block, trimming every array to its logical length."""
        block = reader.block(self.name)
        if block is None:
            return
        if block.n_updates == 0:  # only uncommitted content: the group starts over
            _remove_tree(self.path)
            return
        self.created = True
        self.n_updates = block.n_updates
        self.total_rows = block.total_rows
        self.regular = not block.indexed and block.n_updates > 0
        self.uniform_rows = block.uniform_rows
        for column, array in block.columns.items():
            self.columns[column] = ArrayAppender(
                self.path / column,
                _layout_of(array.metadata),
                length=self.total_rows,
                grow_ahead=True,
            )
        for column, array in block.masks.items():
            self.masks[column] = ArrayAppender(
                self.path / "_validity" / column,
                _layout_of(array.metadata),
                length=self.total_rows,
                grow_ahead=True,
            )
        if block.indexed:
            self.step_index = ArrayAppender(
                self.path / "step_index",
                _layout_of(block.step_index.reader.metadata),
                length=self.n_updates,
            )
            self.offset = ArrayAppender(
                self.path / "offset",
                _layout_of(block.offset.reader.metadata),
                length=self.n_updates + 1,
            )
        if block.indexed and block.markers:
            self.attributes_dirty = True  # a crash left markers beside the index: drop them now

    # -- updates -----------------------------------------------------------------------------

    def add(self, ordinal: int, block: Block) -> None:
        """Queue one update of this block at frame ``ordinal``."""
        if not self.created:
            self.create(block.count)
            self.regular = ordinal == 0 and block.count > 0 and bool(self.spec.columns)
            self.uniform_rows = block.count if self.regular else 0
            self.attributes_dirty = True
            if not self.regular:
                self._materialize_index()
        elif self.regular and (block.count != self.uniform_rows or ordinal != self.n_updates):
            self._materialize_index()
            self.regular = False
            self.attributes_dirty = True
        for column, appender in self.columns.items():
            appender.append(np.asarray(block[column].values))
            mask = self.masks.get(column)
            if mask is not None:
                validity = block[column].validity
                mask.append(
                    np.ones(block.count, dtype=bool) if validity is None else np.asarray(validity)
                )
        self.n_updates += 1
        self.total_rows += block.count
        if not self.regular:
            assert self.step_index is not None and self.offset is not None
            self.step_index.append(np.array([ordinal], dtype=np.uint64))
            self.offset.append(np.array([self.total_rows], dtype=np.uint64))

    def _materialize_index(self) -> None:
        """Create step_index/offset, backfilled from the regular history (trajectory.md §5.4)."""
        self.step_index = ArrayAppender(self.path / "step_index", _dense_layout("u64"))
        self.offset = ArrayAppender(self.path / "offset", _dense_layout("u64"))
        n, rows = self.n_updates, self.uniform_rows
        self.step_index.append(np.arange(n, dtype=np.uint64))
        self.offset.append(np.arange(n + 1, dtype=np.uint64) * np.uint64(rows))

    def _attributes(self, *, markers: bool) -> dict[str, Any]:
        attributes: dict[str, Any] = {}
        if self.spec.structural_shape is not None:
            attributes["structural_shape"] = list(self.spec.structural_shape)
        if markers:
            attributes["uniform_rows"] = self.uniform_rows
            attributes["dense_updates"] = True
        return attributes

    def appenders(self) -> list[ArrayAppender]:
        """Arrays in commit order: ``offset`` before ``step_index``, so a commit cut short
        leaves at worst an ``offset`` without its ``step_index``, which readers ignore."""
        out = [*self.columns.values(), *self.masks.values()]
        if self.step_index is not None and self.offset is not None:
            out += [self.offset, self.step_index]
        return out

    def group_document(self) -> tuple[Location, dict[str, Any]] | None:
        """The group's new metadata when it changed: markers while regular, none once indexed."""
        if not self.attributes_dirty:
            return None
        self.attributes_dirty = False
        return self.path / "zarr.json", _group_doc(
            self._attributes(markers=self.regular and self.n_updates > 0)
        )

    def frame_bytes(self) -> int:
        return self.frame_rows * sum(
            row_bytes(c.dtype, tuple(c.trailing)) for c in self.spec.columns.values()
        )

    def frames_per_chunk(self) -> int:
        if not self.columns or not self.frame_rows:
            return 1
        return next(iter(self.columns.values())).layout.chunk_rows // self.frame_rows


def _layout_of(metadata: Mapping[str, Any]) -> ArrayLayout:
    """The appender layout of an existing array we wrote (index at the start)."""
    from ...model import DTYPE_OF_ZARR

    codecs = metadata.get("codecs", [])
    if codecs and codecs[0].get("name") != "sharding_indexed":
        # mrecd's live layout on object storage (_object_live): unsharded chunks
        rows = int(metadata["chunk_grid"]["configuration"]["chunk_shape"][0])
        trailing = tuple(int(n) for n in metadata["shape"][1:])
        dtype = DTYPE_OF_ZARR[metadata["data_type"]]
        return ArrayLayout(dtype, trailing, rows, rows, tuple(codecs))
    if len(codecs) != 1 or codecs[0].get("name") != "sharding_indexed":
        raise ReadOnlyError(
            "the array is not sharded the way mrecd appends; it cannot be appended to"
        )
    conf = codecs[0]["configuration"]
    if conf.get("index_location") != "start":
        raise ReadOnlyError("shard index at the end: the array cannot be appended positionally")
    shape = metadata["shape"]
    outer = metadata["chunk_grid"]["configuration"]["chunk_shape"]
    return ArrayLayout(
        DTYPE_OF_ZARR[metadata["data_type"]],
        tuple(int(n) for n in shape[1:]),
        int(conf["chunk_shape"][0]),
        int(outer[0]),
        tuple(conf["codecs"]),
    )


# -- the cell ------------------------------------------------------------------------------------


class _BoxWriter:
    """``trajectory/box``: attributes for a fixed cell from ordinal 0, arrays once it changes."""

    def __init__(self, path: Location) -> None:
        self.path = path
        self.mode: str | None = None  # None, "attributes" or "arrays"
        self.first: Box | None = None
        self.cell_defined = True
        self.n_updates = 0
        self.arrays: dict[str, ArrayAppender] = {}
        self.dirty = False

    def reopen(self, reader: TrajectoryReader) -> None:
        box = reader._box_reader()
        if box is None:
            return
        self.cell_defined = box.cell_defined
        if box.vectors is None:
            if box.fixed is not None:
                self.mode, self.first, self.n_updates = "attributes", box.fixed, 1
            return
        self.mode = "arrays"
        self.n_updates = box.n_updates
        for name in ("step_index", "vectors", "origin", "boundary"):
            array = getattr(box, name, None)
            if name == "step_index" and array is not None:
                array = array.reader
            if array is not None:
                self.arrays[name] = ArrayAppender(
                    self.path / name, _layout_of(array.metadata), length=self.n_updates
                )
        if "step_index" not in self.arrays:  # a trivial [0] may be omitted; appends need it
            index = ArrayAppender(self.path / "step_index", _dense_layout("u64"))
            index.append(np.arange(self.n_updates, dtype=np.uint64))
            self.arrays["step_index"] = index

    def add(self, ordinal: int, box: Box) -> None:
        if self.mode is None:
            self.cell_defined = box.cell_defined
            self.path.mkdir(parents=True, exist_ok=True)
            if ordinal == 0:
                self.mode, self.first, self.n_updates, self.dirty = "attributes", box, 1, True
                return
            self.mode = "arrays"
            self.dirty = True
        elif self.mode == "attributes":
            assert self.first is not None
            self.mode = "arrays"
            self.dirty = True
            self.n_updates = 0
            self._append(0, self.first)
        self._append(ordinal, box)

    def _append(self, ordinal: int, box: Box) -> None:
        arrays = self.arrays
        if "vectors" not in arrays:
            arrays["step_index"] = ArrayAppender(self.path / "step_index", _dense_layout("u64"))
            arrays["vectors"] = ArrayAppender(self.path / "vectors", _dense_layout("f64", (3, 3)))
        arrays["step_index"].append(np.array([ordinal], dtype=np.uint64))
        arrays["vectors"].append(box.vectors[None])
        self._optional("origin", box.origin, not box.origin_is_default, np.zeros(3), "f64")
        default_flags = np.full(3, self.cell_defined)
        explicit = not box.boundary_is_default or not self.cell_defined  # frame.md §9.1
        self._optional("boundary", box.boundary, explicit, default_flags, "bool")
        self.n_updates += 1

    def _optional(
        self,
        name: str,
        value: npt.NDArray[Any],
        off_default: bool,
        default: npt.NDArray[Any],
        dtype: str,
    ) -> None:
        appender = self.arrays.get(name)
        if appender is None and off_default:  # materialize, backfilled with the default
            appender = ArrayAppender(self.path / name, _dense_layout(dtype, (3,)))
            appender.append(
                np.repeat(default[None], self.n_updates, axis=0).astype(numpy_dtype(dtype))
            )
            self.arrays[name] = appender
        if appender is not None:
            appender.append(np.asarray(value)[None])

    def appenders(self) -> list[ArrayAppender]:
        return list(self.arrays.values())

    def group_document(self) -> tuple[Location, dict[str, Any]] | None:
        """The cell group's new metadata when it changed (attribute cell, or its migration)."""
        if not self.dirty:
            return None
        attributes: dict[str, Any] = {}
        if not self.cell_defined:
            attributes["cell_defined"] = False
        if self.mode == "attributes":
            assert self.first is not None
            attributes["vectors"] = self.first.vectors.tolist()
            if not self.first.origin_is_default:
                attributes["origin"] = self.first.origin.tolist()
            if not self.first.boundary_is_default or not self.cell_defined:
                # an undefined cell writes its all-false boundary explicitly (frame.md §9.1)
                attributes["boundary"] = self.first.boundary.tolist()
        self.dirty = False
        return self.path / "zarr.json", _group_doc(attributes)


# -- step and time -------------------------------------------------------------------------------


class _Series:
    """Steps (exact integers) or times (binary64): a progression attribute until broken."""

    def __init__(self, path: Location, dtype: str) -> None:
        self.path = path
        self.dtype = dtype
        self.start: Any = None
        self.stride: Any = None
        self.count = 0
        self.array: ArrayAppender | None = None

    def _expected(self, i: int) -> Any:
        if self.dtype == "i64":
            return self.start + i * self.stride
        return self.start + float(i) * self.stride  # one rounded multiply, one rounded add

    def _same(self, a: Any, b: Any) -> bool:
        if self.dtype == "i64":
            return bool(a == b)
        return struct.pack("<d", a) == struct.pack("<d", b)

    def add(self, value: Any) -> None:
        if self.array is not None:
            self.array.append(np.array([value], dtype=numpy_dtype(self.dtype)))
        elif self.dtype == "f64" and not math.isfinite(value):
            self._materialize(value)  # a non-finite time cannot be spelled in JSON
        elif self.count == 0:
            self.start = value
        elif self.count == 1:
            self.stride = value - self.start
            if self.dtype == "f64" and not math.isfinite(self.stride):
                self._materialize(value)
                self.count += 1
                return
            if not self._same(self._expected(1), value):
                self._materialize(value)
        elif not self._same(self._expected(self.count), value):
            self._materialize(value)
        self.count += 1

    def _materialize(self, value: Any) -> None:
        history = [self._expected(i) if i else self.start for i in range(self.count)]
        self.array = ArrayAppender(self.path, _dense_layout(self.dtype), grow_ahead=True)
        self.array.append(np.array([*history, value], dtype=numpy_dtype(self.dtype)))

    def progression(self) -> dict[str, Any] | None:
        if self.array is not None or self.count == 0:
            return None
        if self.count == 1:
            return {"start": self.start}
        return {"start": self.start, "stride": self.stride}


# -- the writer ----------------------------------------------------------------------------------


class TrajectoryWriter:
    """Append frames to ``<root>/trajectory`` and commit them by the protocol of chunking.md §2.

    Parameters
    ----------
    root
        The record root directory (must hold ``trajectory/`` already, see
        :func:`create_trajectory_group`).
    system, sections
        The record's ``system`` blocks and frame-shaped sections, for the
        alignment and row-reference rules.
    flush_every
        Override ``K`` (frames between automatic, non-durable commits).
    reader
        A reader of the same trajectory to take the committed state from
        (the local API passes its own, so opening a writer reads the store once).
    """

    def __init__(
        self,
        root: Location,
        *,
        system: Mapping[str, Block] | None = None,
        sections: Mapping[str, Mapping[str, Block]] | None = None,
        flush_every: int | None = None,
        reader: TrajectoryReader | None = None,
    ) -> None:
        root = live_root(root)  # object storage: every put conditional (_object_live)
        self.root = root
        self.path = root / "trajectory"
        marker = self.path / "zarr.json"
        # The ETag is taken before the state is read: a commit landing in between
        # makes our first conditional marker write fail, never succeed wrongly.
        info = marker.store.head(marker.key)
        self._marker_etag = None if info is None else info.etag
        if reader is None:
            reader = TrajectoryReader(Tree(root.as_store()), system=system)
        else:
            reader.refresh()  # the caller's reader: one read of the store, not a second reader
        if reader.foreign:
            raise ReadOnlyError(
                "a trajectory without sequence_schema (foreign writer) is read, not appended to"
            )
        self.declaration = reader.declaration
        self.producers = ProducerTable.from_attribute(reader.attribute(PRODUCERS))
        self.state = SequenceState(self.declaration, system=system, sections=sections)
        self.blocks = {
            n: _BlockWriter(self.path / n, n, s) for n, s in self.declaration.blocks.items()
        }
        self.box = _BoxWriter(self.path / "box")
        self.steps = _Series(self.path / "step", "i64")
        self.times = _Series(self.path / "time", "f64")
        self.meta: dict[str, ArrayAppender] = {}
        self.nstep = 0  # committed
        self.pending = 0  # admitted, not committed
        self._k_override = flush_every
        self.k = flush_every or 0
        self._committer: ThreadPoolExecutor | None = None
        self._encoder: ThreadPoolExecutor | None = None
        self._syncer: ThreadPoolExecutor | None = None
        self._inflight: list[Future[None]] = []
        #: prepared commits the committer has not taken yet, in order, with their encodings
        self._waiting: deque[tuple[_Commit, Future[None]]] = deque()
        self._waiting_lock = threading.Lock()
        #: object storage rolls a lost commit back PUT by PUT: its commits go one by one
        self._coalesce = self.path.store.positional_writes
        self._failure: BaseException | None = None
        #: the first failure of a queued commit, seen by the pipeline's threads: every
        #: commit queued behind it writes nothing
        self._broken: BaseException | None = None
        #: whether close() must commit: until a durable flush (reopen may have repairs to commit)
        self._unsynced = True
        try:
            self._reopen(reader)
            trust_committed(root, reader)
        finally:
            reader.close()

    # -- reopening ---------------------------------------------------------------------------

    def _reopen(self, reader: TrajectoryReader) -> None:
        n = reader.nstep
        self.nstep = n
        last = reader.frame(n - 1) if n else None  # read before any array is trimmed
        for block in self.blocks.values():
            block.reopen(reader)
        self.box.reopen(reader)
        for key, spec in self.declaration.meta.items():
            array = reader.meta_array(key)
            self.meta[key] = ArrayAppender(
                self.path / "meta" / key,
                _layout_of(array.metadata),
                {"meta_dtype": spec.dtype},
                length=n,
                grow_ahead=True,
            )
        self._reopen_series(reader, n)
        if last is not None:
            current = {name: last[name] for name in last}
            has_time = last.time is not None
            self.state.restore(
                nstep=n, last_step=last.step, has_time=has_time, current=current, box=last.box
            )
            for name, block in self.blocks.items():
                if name in last:
                    block.frame_rows = last[name].count
            self._plan_flush(last)

    def _reopen_series(self, reader: TrajectoryReader, n: int) -> None:
        for series, progression, name in (
            (self.steps, reader.step_progression, "step"),
            (self.times, reader.time_progression, "time"),
        ):
            if not n:
                continue
            if progression is not None:
                series.count = n
                series.start = progression["start"]
                series.stride = progression.get("stride")
            elif (array := reader.dense_array(name)) is not None:
                series.count = n
                series.array = ArrayAppender(
                    self.path / name, _layout_of(array.metadata), length=n, grow_ahead=True
                )
            # else: a run without times keeps none

    # -- appending ---------------------------------------------------------------------------

    def append(self, frame: Frame) -> int:
        """Admit and queue one frame; commit (not durably) every ``K``. Returns the frame count."""
        self._raise_failure()
        update = self.state.admit(frame, path=f"frame {self.nstep + self.pending}")
        self._queue(update)
        if self.k and self.pending >= self.k:
            self.flush(durable=False, wait=False)
        return self.nstep + self.pending

    def extend(self, frames: Iterable[Frame], *, producer: Producer | None = None) -> int:
        """Admit every frame first (all or nothing), then queue them. Returns the frame count.

        ``producer`` (checked by the caller against :attr:`producers`) is
        recorded with the frames, so the commit carrying them carries it too.
        """
        self._raise_failure()
        trial = self.state.copy()
        first = self.nstep + self.pending
        updates = trial.admit_many(frames, first=first)
        self.state = trial
        if producer is not None:
            self.producers.record(producer, first, len(updates))
            self._unsynced = True
        for update in updates:
            self._queue(update)
        if self.k and self.pending >= self.k:
            self.flush(durable=False, wait=False)
        return self.nstep + self.pending

    def _queue(self, update: Update) -> None:
        ordinal = update.ordinal
        for name, block in update.blocks.items():
            self.blocks[name].add(ordinal, block)
        if update.box is not None:
            self.box.add(ordinal, update.box)
        self.steps.add(update.step)
        if update.time is not None:
            self.times.add(update.time)
        for key, spec in self.declaration.meta.items():
            self.meta[key].append(_meta_row(spec.dtype, update.meta[key]))
        if not self.k:
            self._plan_flush(update.frame)
        self.pending += 1

    def _plan_flush(self, frame: Frame) -> None:
        """K of chunking.md §6, from the first frame's size (unless overridden)."""
        if self._k_override:
            self.k = self._k_override
            return
        total = sum(
            b.count * row_bytes(c.dtype, c.trailing) for b in frame.values() for c in b.values()
        )
        per_chunk = max(
            (w.frames_per_chunk() for w in self.blocks.values() if w.created), default=1
        )
        self.k = flush_every(total, per_chunk)

    # -- committing --------------------------------------------------------------------------

    def flush(self, *, durable: bool = True, wait: bool = True) -> int:
        """Commit every queued frame (``durable``: with fsyncs); returns the frames committed.

        The commit is prepared here (chunks cut, bookkeeping advanced) and
        written by the committer thread: data, array metadata, group metadata,
        fsyncs, then ``trajectory/zarr.json``, in that order, commits in FIFO
        order. ``wait=False`` returns once the commit is queued (automatic
        flushes overlap encoding with the next frames); an error in a queued
        commit is raised by the next call.
        """
        self._raise_failure()
        commit = self._prepare(durable)
        self.nstep += self.pending
        self.pending = 0
        if self._committer is None:
            self._committer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mrecd-commit")
            self._encoder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mrecd-encode")
        assert self._encoder is not None
        # two FIFO stages: a commit encodes while the one before it is still being written
        encoded = self._encoder.submit(self._encode, commit)
        with self._waiting_lock:
            self._waiting.append((commit, encoded))
        self._inflight.append(self._committer.submit(self._run, commit))
        while len(self._inflight) > (0 if wait else _MAX_INFLIGHT):
            self._settle(self._inflight.pop(0))
        self._unsynced = not (durable and wait)
        return self.nstep

    def wait(self) -> None:
        """Block until every queued commit is on disk (raises a commit's error)."""
        while self._inflight:
            self._settle(self._inflight.pop(0))

    def _settle(self, future: Future[None]) -> None:
        try:
            future.result()
        except BaseException as exc:
            self._failure = exc
            raise

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise InvalidRecord(
                f"an earlier commit failed ({self._failure!r}); the store holds the frames"
                " committed"
                " before it: reopen the trajectory to append again"
            ) from self._failure

    def _prepare(self, durable: bool) -> _Commit:
        # an automatic commit lets arrays grow their published shape a shard at a time; a
        # durable one leaves every zarr.json at its exact length
        arrays = [c for a in self._appenders() if (c := a.prepare(exact=durable)) is not None]
        groups = [
            doc for block in self.blocks.values() if (doc := block.group_document()) is not None
        ]
        box = self.box.group_document()
        if box is not None:
            groups.append(box)
        attributes: dict[str, Any] = {
            "sequence_schema": self.declaration.to_dict(),
            "nstep": self.nstep + self.pending,
        }
        for name, series in (("step_progression", self.steps), ("time_progression", self.times)):
            progression = series.progression()
            if progression is not None:
                attributes[name] = progression
        producers = self.producers.to_attribute()
        if producers is not None:
            attributes[PRODUCERS] = producers
        return _Commit(
            arrays,
            groups,
            (self.path / "zarr.json", _group_doc(attributes)),
            durable,
            self._appenders(),
        )

    def _encode(self, commit: _Commit) -> None:
        """On the encoder thread: every chunk of the commit, in one batch.

        The batch compresses in native threads of its own (``encode_batches``),
        so one encoder thread keeps the cores busy and seldom takes the GIL.
        """
        with self._breaking():
            ArrayCommit.encode_all(commit.arrays)

    def _run(self, commit: _Commit) -> None:
        """On the committer thread, once ``commit`` is encoded: write, publish.

        Commits are written in the order they were prepared (one committer
        thread); only their encoding runs ahead. A commit an earlier run took
        into its group is done already (or failed with it).
        """
        group = self._take(commit)
        if not group:
            with self._breaking():
                return
        group[0][1].result()  # the encoding's error fails this commit, as before
        with self._breaking():
            self._write_group([c for c, _ in group])

    def _take(self, commit: _Commit) -> list[tuple[_Commit, Future[None]]]:
        """``commit`` and, when the committer has fallen behind, the encoded commits after it.

        Only non-durable commits join a group: a durable one is fsynced and
        published on its own, as its caller asked.
        """
        with self._waiting_lock:
            waiting = self._waiting
            if not waiting or waiting[0][0] is not commit:
                return []
            group = [waiting.popleft()]
            if not self._coalesce or commit.durable or len(waiting) + 1 < _COALESCE_AT:
                return group
            while waiting and _joins(*waiting[0]):
                group.append(waiting.popleft())
            return group

    def _write_group(self, group: list[_Commit]) -> None:
        """Write commits as one: each array's data and ``zarr.json`` once, the group
        documents in order, then the last commit's marker, which claims them all.

        The order within is that of one commit (chunking.md §2), so a crash in
        between leaves the marker of the commit before the group.
        """
        last = group[-1]
        arrays = group[0].arrays if len(group) == 1 else _merged(c.arrays for c in group)
        self._write_arrays(arrays)
        for commit in group:
            for path, document in commit.groups:
                write_json_atomic(path, document, durable=last.durable)
        if last.durable:
            self._sync_all(last.appenders)
        self._publish(*last.trajectory, durable=last.durable)

    @contextmanager
    def _breaking(self) -> Iterator[None]:
        """Run a pipeline step of a commit: none after a queued commit failed, and a failure
        here stops every commit queued behind this one."""
        if self._broken is not None:
            raise InvalidRecord(
                f"a commit queued before this one failed ({self._broken!r}); this one"
                " writes nothing"
            ) from self._broken
        try:
            yield
        except BaseException as exc:
            if self._broken is None:
                self._broken = exc
            raise

    def _write_arrays(self, arrays: list[ArrayCommit]) -> None:
        """Every array's chunks, shard index, then its ``zarr.json``: the ``offset`` arrays,
        then the ``step_index`` arrays, then the rest at once.

        Each array keeps its own order (data before its metadata); arrays are
        independent files, so the writes of one phase overlap. Replacing a
        ``zarr.json`` waits on the filesystem (ext4 starts writing the new file
        out when it is renamed over the old one), and one commit replaces one
        per array. On object storage a lost commit's rollback undoes only PUTs
        that landed (``ConditionalStore``), so PUTs still in flight in other
        arrays are safe.
        """
        for phase in _index_first(arrays):
            if len(phase) < 2:
                for array in phase:
                    array.write()
            else:
                self._all_done([array.write for array in phase])

    def _sync_all(self, appenders: list[ArrayAppender]) -> None:
        """fsync every array's writes, all at once, and return when all are done.

        The filesystem joins concurrent fsyncs into few journal commits, so a
        durable commit waits about as long as one fsync instead of one per
        file. The marker is published only after every one of them returned.
        """
        self._all_done([appender.sync for appender in appenders])

    def _all_done(self, calls: list[Callable[[], None]]) -> None:
        """Run ``calls`` at once on the I/O pool; return when all are done (raise the first error).

        Whatever fails, none is still running when this returns, so nothing
        published after it can overtake a write of this step.
        """
        if self._syncer is None:
            self._syncer = ThreadPoolExecutor(_SYNC_THREADS, thread_name_prefix="mrecd-io")
        futures = [self._syncer.submit(call) for call in calls]
        wait(futures)
        for future in futures:
            future.result()  # the first failure, once none is still running

    def _publish(self, marker: Location, document: dict[str, Any], *, durable: bool) -> None:
        """Replace ``trajectory/zarr.json`` on the condition that it is the one last seen."""
        mode: Any = "overwrite" if self._marker_etag is None else IfMatch(self._marker_etag)
        try:
            self._marker_etag = marker.store.put(
                marker.key, dumps_json(document), mode=mode, durable=durable
            )
        except PreconditionFailed:
            raise WriterBusy(
                "another writer committed to this trajectory meanwhile; this commit is"
                " not visible (reopen to append again)",
                path=marker.key,
            ) from None

    def _appenders(self) -> list[ArrayAppender]:
        out: list[ArrayAppender] = []
        for block in self.blocks.values():
            out += block.appenders()
        out += self.box.appenders()
        out += list(self.meta.values())
        for series in (self.steps, self.times):
            if series.array is not None:
                out.append(series.array)
        return out

    def close(self) -> None:
        """Commit durably and release the files."""
        try:
            if self._failure is None and (self._unsynced or self.pending):
                self.flush(durable=True)
        finally:
            for pool in (self._committer, self._encoder, self._syncer):
                if pool is not None:
                    pool.shutdown(wait=True)
            self._committer = self._encoder = self._syncer = None
            for appender in self._appenders():
                appender.close()


class _Commit:
    """Everything one commit writes, prepared on the appending thread."""

    def __init__(
        self,
        arrays: list[ArrayCommit],
        groups: list[tuple[Location, dict[str, Any]]],
        trajectory: tuple[Location, dict[str, Any]],
        durable: bool,
        appenders: list[ArrayAppender],
    ) -> None:
        self.arrays = arrays
        self.groups = groups
        self.trajectory = trajectory
        self.durable = durable
        self.appenders = appenders


def _index_first(arrays: list[ArrayCommit]) -> list[list[ArrayCommit]]:
    """A commit's arrays in write phases: ``offset``s, then ``step_index``es, then the data.

    An index entry counts only below ``nstep`` (chunking.md §3), so an index
    landing ahead of its data changes no committed frame; the data landing
    ahead of its index could. A regular block's markers count its updates by
    column length: were the rows of the update that materializes the index
    (one at an ordinal past the last update) to land without ``step_index``,
    a reader would count them as the next regular update and give the frames
    between the two the new rows. ``offset`` goes before ``step_index``, so a
    cut commit leaves at worst an ``offset`` alone, which readers ignore.
    """
    offsets: list[ArrayCommit] = []
    indexes: list[ArrayCommit] = []
    data: list[ArrayCommit] = []
    for array in arrays:
        key = array.appender.path.key
        phase = (
            offsets if key.endswith("/offset") else indexes if key.endswith("/step_index") else data
        )
        phase.append(array)
    return [phase for phase in (offsets, indexes, data) if phase]


def _joins(commit: _Commit, encoded: Future[None]) -> bool:
    """Whether a waiting commit may join the group ahead of it: encoded, and not durable."""
    return not commit.durable and encoded.done() and encoded.exception() is None


def _merged(arrays: Iterable[list[ArrayCommit]]) -> list[ArrayCommit]:
    """The array commits of consecutive commits, one per array: chunks in order, last metadata."""
    out: dict[int, ArrayCommit] = {}
    for commits in arrays:
        for commit in commits:
            key = id(commit.appender)
            earlier = out.get(key)
            out[key] = commit if earlier is None else earlier.then(commit)
    return list(out.values())


def _meta_row(tag: str, value: Any) -> npt.NDArray[Any]:
    element, width = TAG_LAYOUT[tag]
    if element == "json":
        return np.array([dumps_strict(value)], dtype=STRING_DTYPE)
    if element == "string":
        return np.array([value], dtype=STRING_DTYPE)
    dtype = numpy_dtype(element)
    if width is None:
        return np.array([value], dtype=dtype)
    return np.array([list(value)], dtype=dtype)


def _remove_tree(path: Location) -> None:
    path.store.delete_prefix(path.key)
