"""``Collection``: many small records in one ``*.mrec.lmdb`` file (collection.md, lmdb.md).

The local, synchronous API. :func:`create_collection` and
:func:`open_collection` take an exact file path; a catalog names them later.
Reads return :class:`~mrecd.Record` objects whose ``trajectory`` is a lazy,
read-only :class:`CollectionTrajectory`.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

from ..bindings.lmdb import (
    LmdbCollection,
    RecordParts,
    RecordView,
    collection_from_dict,
    collection_to_dict,
    incoming,
    index_values,
    join,
    quick_frame,
    replay,
)
from ..errors import InvalidRecord, NotFound, RecordOutOfRange
from ..forcefield import ForceField
from ..model import Block, Declaration, Frame, Record, decode_meta, index_rows, series_array
from ._protocols import FrameSlice

__all__ = [
    "Collection",
    "CollectionTrajectory",
    "RecordOutOfRange",
    "create_collection",
    "load_collection",
    "open_collection",
]

PathLike = str | os.PathLike[str]


def _ordinal(i: int, n: int, what: str) -> int:
    if type(i) is int and 0 <= i < n:  # the common case, before the general checks
        return i
    if isinstance(i, bool):
        raise TypeError(f"{what} ordinals are integers, not bool")
    try:
        i = operator.index(i)  # numpy integers too, as a loader's sampler hands them
    except TypeError:
        raise TypeError(f"{what} ordinals are integers, not {type(i).__name__}") from None
    k = i + n if i < 0 else i
    if not 0 <= k < n:
        raise RecordOutOfRange(f"{what} {i} is out of range (there are {n})", path=what)
    return k


class CollectionTrajectory(Sequence[Frame]):
    """A record's trajectory, read lazily: ``len``, ``[i]``, ``[i:j:k]``, :meth:`read`, iteration.

    Conforms to :class:`~mrecd.api.TrajectoryLike`, as a record's
    :class:`~mrecd.api.Trajectory` does. Each ``[i]`` is a resolved frame
    (carry-forward, trajectory.md §6) with its ``step``, ``time``, cell and
    per-step ``meta``; its arrays are copies that outlive the read. Frames
    compare equal to the frames appended when those were presented whole.
    Compares equal to any sequence of equal frames.
    """

    __slots__ = ("_binding", "_frames", "_layout_seen", "_view")

    def __init__(
        self, binding: LmdbCollection, view: RecordView, frames: Sequence[Frame] | None = None
    ) -> None:
        self._binding = binding
        self._view = view
        self._frames = frames
        self._layout_seen: Any = None

    @property
    def declaration(self) -> Declaration:
        """The collection's ``sequence_schema``, which every record's trajectory uses."""
        return self._view.declaration

    @property
    def system(self) -> Frame | None:
        """The record's system (what :meth:`read` joins with ``join=True``)."""
        return self._view.system

    def steps(self) -> npt.NDArray[np.int64]:
        """The step number of every frame, ``i64[n]``."""
        return np.array(self._layout().steps[: len(self)], dtype=np.int64)

    def times(self) -> npt.NDArray[np.float64] | None:
        """The time of every frame, ``f64[n]``, or ``None`` when the trajectory has none."""
        times = self._layout().times
        return None if times is None else np.array(times[: len(self)], dtype=np.float64)

    def series(self, key: str, start: int = 0, stop: int | None = None) -> npt.NDArray[Any]:
        """The per-step values of meta key ``key`` over frames ``[start, stop)``.

        Parameters
        ----------
        key
            A declared per-step meta key.
        start, stop
            Frame ordinals, clipped to ``[0, len]``; ``stop=None`` is ``len``.

        Returns
        -------
        numpy.ndarray
            ``[n]`` of the tag's element dtype, ``[n, width]`` for vector tags
            (``json`` values as compact JSON text), as a record's trajectory
            returns them.

        Raises
        ------
        InvalidRecord
            ``key`` is not declared, or a stored value breaks its tag.
        """
        spec = self.declaration.meta.get(key)
        if spec is None:
            raise InvalidRecord(
                f"meta key {key!r} is not declared; known: {sorted(self.declaration.meta)}",
                path=f"{self._view.path}.meta",
            )
        lo = max(0, start)
        hi = max(lo, len(self) if stop is None else min(stop, len(self)))
        metas = self._layout().metas
        values = [
            decode_meta(spec.dtype, metas[k][key], path=f"{self._view.path}[{k}].meta.{key}")
            for k in range(lo, hi)
        ]
        return series_array(spec.dtype, values)

    def _layout(self) -> Any:
        with self._binding.reading() as txn:
            return self._binding.layout(txn, self._view)

    def __len__(self) -> int:
        return self._view.n_frames

    @overload
    def __getitem__(self, i: int) -> Frame: ...
    @overload
    def __getitem__(self, i: slice) -> FrameSlice: ...
    def __getitem__(self, i: int | slice) -> Frame | FrameSlice:
        if type(i) is int and self._frames is None and 0 <= i < self._view.n_frames:
            frame = self._quick(i)
            if frame is not None:
                return frame
        if isinstance(i, slice):
            return FrameSlice(self, range(*i.indices(len(self))))
        return self.read(i)

    def _quick(self, k: int) -> Frame | None:
        """Frame ``k`` when it was read and checked before from one value (see
        ``quick_frame``): one ``txn.get`` and the arrays; ``None`` otherwise."""
        layout = self._layout_seen or self._view.caches.layout(self._view.r)
        if layout is None:
            return None
        self._layout_seen = layout
        quick = layout.quick.get(k)
        if quick is None:
            return None
        value = self._binding.get(quick[0])
        if value is None or len(value) != quick[1]:
            return None  # the long way says what is wrong
        return quick_frame(value, quick)

    def __iter__(self) -> Iterator[Frame]:
        if self._frames is None:
            with self._binding.reading() as txn:
                self._frames = self._binding.frames(txn, self._view)
        return iter(self._frames)

    def read(
        self,
        i: int,
        *,
        blocks: Iterable[str] | None = None,
        columns: Iterable[str] | Mapping[str, Iterable[str]] | None = None,
        join: bool = False,
    ) -> Frame:
        """Frame ``i``, projected.

        Parameters
        ----------
        i
            Frame ordinal (negative counts from the end).
        blocks
            Block names to return (all when ``None``); only the values holding
            them are decoded. A name neither declared nor (with ``join``) in
            the system raises :class:`~mrecd.InvalidRecord`.
        columns
            Column names kept in every returned block, or ``{block: names}``
            for some blocks; an unknown name raises :class:`~mrecd.NotFound`.
        join
            Present each trajectory block joined with the same-named system
            block (one block, union of columns; collection.md §3), plus the
            system's other blocks, meta and cell.

        Raises
        ------
        RecordOutOfRange
            ``i`` is out of range (also an ``IndexError``).
        TypeError
            ``i`` is not an integer.
        InvalidRecord
            A block in ``blocks`` is unknown, or the stored record breaks a
            reader rule (lmdb.md §5).
        """
        k = _ordinal(i, self._view.n_frames, "frame")
        if blocks is None and columns is None and not join and self._frames is None:
            frame = self._quick(k)
            if frame is not None:
                return frame
            view = self._view
            layout = self._layout_seen
            if layout is not None and k in layout.recipes:  # read and checked before
                with self._binding.reading() as txn:
                    return replay(txn, view, layout, k)
        names = None if blocks is None else self._names(blocks, join)
        if self._frames is not None:
            frame = self._frames[k]
            if names is not None:
                frame = _only(frame, names)
        else:
            trajectory_names = (
                None if names is None else [n for n in names if n in self.declaration.blocks]
            )
            with self._binding.reading() as txn:
                frame, self._layout_seen = self._binding.frame(
                    txn, self._view, k, trajectory_names, self._layout_seen
                )
        if join:
            frame = join_frame(self.system, frame, names)
        return frame if columns is None else _columns(frame, columns)

    def joined(self, i: int) -> Frame:
        """Frame ``i`` joined with the system: ``read(i, join=True)``."""
        return self.read(i, join=True)

    def _names(self, blocks: Iterable[str], join: bool) -> list[str]:
        names = [blocks] if isinstance(blocks, str) else list(blocks)
        known = set(self.declaration.blocks)
        if join and self.system is not None:
            known |= set(self.system)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise InvalidRecord(
                f"blocks {unknown} are not declared; known: {sorted(known)}", path="blocks"
            )
        return names

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (CollectionTrajectory, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CollectionTrajectory(record={self._view.r}, frames={len(self)})"


def join_frame(system: Frame | None, frame: Frame, names: list[str] | None = None) -> Frame:
    """``frame`` joined with ``system`` (collection.md §3), keeping blocks ``names`` if given."""
    joined = join(system, frame)
    return joined if names is None else _only(joined, names)


def _only(frame: Frame, names: list[str]) -> Frame:
    blocks = {n: b for n, b in frame.items() if n in names}
    return Frame._trusted(blocks, frame.meta, frame.meta_types, frame.box, frame.step, frame.time)


def _columns(frame: Frame, columns: Iterable[str] | Mapping[str, Iterable[str]]) -> Frame:
    if isinstance(columns, Mapping):
        wanted = {b: [c] if isinstance(c, str) else list(c) for b, c in columns.items()}
    else:
        names = [columns] if isinstance(columns, str) else list(columns)
        wanted = {b: names for b in frame}
        missing = [c for c in names if not any(c in block for block in frame.values())]
        if missing:
            raise NotFound(f"no returned block has columns {missing}", path="columns")
    blocks = dict(frame.blocks)
    for name, keep in wanted.items():
        if name not in blocks:
            continue
        if isinstance(columns, Mapping):
            unknown = [c for c in keep if c not in blocks[name]]
            if unknown:
                raise NotFound(f"block {name!r} has no columns {unknown}", path=f"columns.{name}")
        blocks[name] = blocks[name].select([c for c in keep if c in blocks[name]])
    return Frame._trusted(blocks, frame.meta, frame.meta_types, frame.box, frame.step, frame.time)


def _record(
    binding: LmdbCollection, parts: RecordParts, frames: Sequence[Frame] | None = None
) -> Record:
    # The parts were checked as they were read: skip Record's own checks of them.
    record = object.__new__(Record)
    record.meta, record.system, record.trajectory = parts.meta, parts.system, None
    record.frame = record.forcefield = record.declaration = None
    record.status = record.method = None
    record.sections = {}
    if parts.view is not None:
        # Record keeps a list; a collection's record reads its frames lazily.
        record.trajectory = CollectionTrajectory(binding, parts.view, frames)  # type: ignore[assignment]
    return record


class Collection:
    """An open collection file: append records, read them at random.

    Get one from :func:`create_collection` or :func:`open_collection`; close it
    with :meth:`close` or a ``with`` block. Any thread may call any method;
    each call runs its LMDB transactions from start to end on the calling
    thread. Other processes may read while one process appends: a reader
    sees committed records only.
    """

    __slots__ = ("_binding",)

    def __init__(self, binding: LmdbCollection) -> None:
        self._binding = binding

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Release the file (the environment closes with its last user in this process)."""
        self._binding.close()

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def path(self) -> str:
        """The ``*.mrec.lmdb`` file."""
        return self._binding.path

    @property
    def mode(self) -> Literal["r", "r+"]:
        """``"r"`` (read-only) or ``"r+"`` (append)."""
        return "r+" if self._binding.writable else "r"

    # -- collection-level content ---------------------------------------------------------

    @property
    def meta(self) -> dict[str, Any]:
        """The collection document: ``units``, ``molrec_version`` and every other key."""
        return dict(self._binding.state().meta.collection)

    @property
    def declaration(self) -> Declaration | None:
        """The ``sequence_schema`` every record's trajectory uses, or ``None``."""
        return self._binding.state().meta.declaration

    @property
    def index(self) -> Block:
        """The index block ``records``: ``R`` rows of ``first_frame``, ``n_frames``,
        ``n_atoms``, ``has_trajectory``, then the collection's own columns (read-only)."""
        return self._binding.state().table.block()

    @property
    def index_columns(self) -> dict[str, dict[str, Any]]:
        """The collection's own index columns as declared ``{name: {dtype, trailing, ...}}``."""
        return {n: s.to_dict() for n, s in self._binding.own_index_columns.items()}

    @property
    def forcefield(self) -> ForceField | None:
        """The collection-wide force field, or ``None``."""
        return self._binding.state().forcefield

    @property
    def n_frames(self) -> int:
        """Frames over all records."""
        return self._binding.state().meta.n_frames

    def __len__(self) -> int:
        return self._binding.state().meta.n_records

    # -- reading --------------------------------------------------------------------------

    @overload
    def __getitem__(self, r: int) -> Record: ...
    @overload
    def __getitem__(self, r: slice) -> list[Record]: ...
    def __getitem__(self, r: int | slice) -> Record:  # type: ignore[misc]
        if isinstance(r, slice):
            return self.read_many(range(*r.indices(len(self))), frames=False)  # type: ignore[return-value]
        binding = self._binding
        with binding.reading() as txn:
            state = binding.cached()
            if not 0 <= r < state.meta.n_records:
                state = binding.state(txn)
            k = _ordinal(r, state.meta.n_records, "record")
            return _record(binding, binding.record(txn, state, k))

    def __iter__(self) -> Iterator[Record]:
        for r in range(len(self)):
            yield self[r]

    def read_many(self, rs: Iterable[int], *, frames: bool = True) -> list[Record]:
        """Records ``rs`` (in that order) read in one read transaction.

        Parameters
        ----------
        rs
            Record ordinals (negative counts from the end; numpy integers too).
        frames
            Resolve every trajectory in the same transaction (one pass per
            record) and hold its frames, so iterating or indexing it does no
            further I/O; ``False`` leaves trajectories lazy.

        Returns
        -------
        list of Record
            One per ordinal, all from one committed state of the file.

        Raises
        ------
        RecordOutOfRange
            An ordinal is out of range (also an ``IndexError``).
        InvalidRecord
            A stored record breaks a reader rule.
        """
        binding = self._binding
        out = []
        with binding.reading(buffers=False) as txn:  # values as bytes: each is copied anyway
            state = binding.state(txn)
            for r in rs:
                parts = binding.record(txn, state, _ordinal(r, state.meta.n_records, "record"))
                loaded = (
                    binding.frames(txn, parts.view) if frames and parts.view is not None else None
                )
                out.append(_record(binding, parts, loaded))
        return out

    def batches(
        self,
        size: int,
        *,
        shuffle: bool = True,
        seed: int | None = None,
        frames: bool = True,
        drop_last: bool = False,
    ) -> Iterator[list[Record]]:
        """One epoch of the collection in batches of ``size`` records, as a data loader reads.

        Parameters
        ----------
        size
            Records per batch (a positive integer); the last batch may be shorter.
        shuffle
            Visit the records in a random order (a permutation: each exactly once);
            ``False`` keeps record order.
        seed
            Seed of the order (the same seed gives the same batches); ``None``
            draws a fresh one.
        frames
            As :meth:`read_many`: resolve and hold every trajectory's frames.
        drop_last
            Leave out a last batch shorter than ``size``.

        Yields
        ------
        list of Record
            Each batch read in one read transaction (:meth:`read_many`).

        Notes
        -----
        The epoch covers the records committed when iteration starts; records
        appended meanwhile wait for the next epoch.
        """
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size is a positive integer, not {size!r}")
        n = len(self)
        order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
        stop = n - n % size if drop_last else n
        for start in range(0, stop, size):
            yield self.read_many(order[start : start + size].tolist(), frames=frames)

    # -- writing --------------------------------------------------------------------------

    def append(
        self, record: Record | Mapping[str, Any], *, index: Mapping[str, Any] | None = None
    ) -> int:
        """Append one record; return its ordinal.

        Parameters
        ----------
        record
            A :class:`~mrecd.Record` (``meta``, ``system``, ``trajectory``) or
            the mapping ``{"meta", "system", "trajectory"}``; a trajectory is a
            list of frames, each with its ``step``.
        index
            Values of the collection's own index columns for this record;
            columns left out are derived by their ``derive`` callable.

        Returns
        -------
        int
            The record's ordinal ``r``.

        Raises
        ------
        InvalidRecord
            The record breaks a rule; nothing is written.
        ReadOnlyError
            The collection was opened with ``mode="r"``.
        """
        return self.extend([record], index=[index]).start

    def extend(
        self,
        records: Iterable[Record | Mapping[str, Any]],
        *,
        index: Sequence[Mapping[str, Any] | None] | Mapping[str, Sequence[Any]] | None = None,
    ) -> range:
        """Append ``records`` in one transaction (all or nothing).

        Parameters
        ----------
        records
            Records as :meth:`append` takes them.
        index
            Own index values: one mapping per record, or ``{column: values}``
            with one value per record.

        Returns
        -------
        range
            The ordinals of the appended records.

        Raises
        ------
        InvalidRecord
            A record breaks a rule; nothing of the batch is written.
        ReadOnlyError
            The collection was opened with ``mode="r"``.
        """
        items = [incoming(rec, f"batch[{k}]") for k, rec in enumerate(records)]
        rows = index_rows(index, len(items))
        specs = self._binding.own_index_columns
        own = [index_values(item, rows[k], specs, f"batch[{k}]") for k, item in enumerate(items)]
        if not items:
            n = len(self)
            return range(n, n)
        return self._binding.append(items, own)

    def compact(self, path: PathLike | None = None, *, overwrite: bool = False) -> None:
        """Pack the collection: into the new file ``path``, or in place.

        A collection grown by appends keeps its LMDB leaf pages about half
        full; the copy packs them (typically close to half the size) and holds
        the same records. A paged index (collections past 512 records,
        mrecd's extension) becomes the one ``index`` value of lmdb.md §4, so
        the result is in the layout every reader of the format reads.

        Parameters
        ----------
        path
            A new ``<name>.mrec.lmdb`` file for the copy. Readers and writers of
            this collection may go on meanwhile: the copy is of one committed
            state. ``None`` compacts in place (needs mode ``"r+"``): the copy is
            written beside the file, then renamed over it while every writer is
            held off. This process uses the new file at once. Other processes
            keep reading the old file (a consistent snapshot that no longer
            grows) until they reopen it; an append from one that has not
            reopened raises :class:`~mrecd.errors.RetryableError`.
        overwrite
            Replace an existing file at ``path``.

        Raises
        ------
        AlreadyExists
            ``path`` exists and ``overwrite`` is false.
        ReadOnlyError
            In place on a collection opened with ``mode="r"``.
        """
        self._binding.compact(None if path is None else os.fspath(path), overwrite=overwrite)

    def to_dict(self) -> dict[str, Any]:
        """The whole collection in its logical JSON form (the schema fixtures' shape).

        ``index`` holds only the collection's own columns (the binding's four
        are not part of the model, collection.md §2.3). Reads every record.
        """
        with self._binding.reading() as txn:
            state = self._binding.state(txn)
        records = self.read_many(range(state.meta.n_records))
        return collection_to_dict(
            state.meta.collection,
            state.meta.declaration,
            state.table.block(),
            list(state.table.own),
            records,
        )

    def __repr__(self) -> str:
        if self._binding.closed:
            return "Collection(closed)"
        return f"Collection({self.path!r}, records={len(self)}, mode={self.mode!r})"


def create_collection(
    path: PathLike,
    *,
    meta: Mapping[str, Any],
    declaration: Declaration | Mapping[str, Any] | None = None,
    index_columns: Mapping[str, Mapping[str, Any]] | None = None,
    forcefield: ForceField | Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> Collection:
    """Create an empty collection file at ``path`` (``<name>.mrec.lmdb``) and open it ``"r+"``.

    Parameters
    ----------
    path
        The exact file path; one LMDB file, no directory (lmdb.md §1).
    meta
        The collection document; ``units`` is required (``{quantity: unit}``,
        pint-parseable). ``molrec_version`` is stamped 2.
    declaration
        The ``sequence_schema`` (a :class:`~mrecd.Declaration` or its JSON
        form). ``None``: pinned from the first frames appended.
    index_columns
        The collection's own index columns, ``{name: {"dtype": d, "trailing":
        [...], "precision": p, "nullable": bool, "derive": callable}}``; the
        names ``first_frame``, ``n_frames``, ``n_atoms``, ``has_trajectory``
        are the binding's.
    forcefield
        The force field every record links into (key ``ff``), or ``None``.
    overwrite
        Replace an existing file (refused while this process has it open).

    Raises
    ------
    InvalidRecord
        Bad units, declaration or index columns, or a path without the suffix.
    AlreadyExists
        ``path`` exists and ``overwrite`` is false.
    """
    binding = LmdbCollection.create(
        os.fspath(path),
        meta=meta,
        declaration=declaration,
        index_columns=index_columns,
        forcefield=forcefield,
        overwrite=overwrite,
    )
    return Collection(binding)


def open_collection(
    path: PathLike,
    mode: Literal["r", "r+"] = "r",
    *,
    index_columns: Mapping[str, Mapping[str, Any]] | None = None,
) -> Collection:
    """Open the collection file at ``path``.

    Parameters
    ----------
    path
        An existing ``<name>.mrec.lmdb`` file.
    mode
        ``"r"`` to read, ``"r+"`` to read and append.
    index_columns
        ``{name: {"derive": callable, "nullable": bool}}`` for existing index
        columns: the file keeps neither, so an appending process restates them.

    Raises
    ------
    NotFound
        No file at ``path``.
    InvalidRecord
        The file is not a readable collection (lmdb.md §3, §4).
    ReadOnlyError
        ``"r+"`` on a read-only file or a version-1 collection.
    """
    return Collection(LmdbCollection.open(os.fspath(path), mode=mode, index_columns=index_columns))


def load_collection(
    path: PathLike, data: Mapping[str, Any], *, overwrite: bool = False
) -> Collection:
    """Create a collection at ``path`` from its logical JSON form (see :meth:`Collection.to_dict`).

    The index columns are declared from ``data["index"]`` and their values
    given per record; everything is appended in one transaction.
    """
    parts = collection_from_dict(data)
    collection = create_collection(
        path,
        meta=parts["meta"],
        declaration=parts["declaration"],
        index_columns=parts["index_columns"],
        overwrite=overwrite,
    )
    try:
        collection.extend(parts["records"], index=parts["index"])
    except BaseException:
        collection.close()
        raise
    return collection
