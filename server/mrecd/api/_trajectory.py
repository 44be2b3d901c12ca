"""``Trajectory``: the local API of a record's trajectory section (read and append).

One writer at a time per trajectory: the first write takes the store's
writer lease on ``trajectory/`` (an ``flock`` on a directory, so a second
writer in this process or another gets :class:`~mrecd.errors.WriterBusy`),
and every commit replaces the marker conditionally on the ETag it last saw.
Any number of readers.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from ..bindings.zarr import (
    Appended,
    Garbage,
    Producer,
    ProducerTable,
    TrajectoryReader,
    TrajectoryWriter,
    Tree,
    collect_garbage,
    create_trajectory_group,
    writer_is_stale,
)
from ..errors import (
    InvalidRecord,
    MrecdError,
    NotFound,
    PreconditionFailed,
    ReadOnlyError,
    WriterBusy,
)
from ..model import Block, Declaration, Frame
from ..storage import Location, WriterLease, location_of, open_store
from ._protocols import FrameSlice
from ._violations import Violation

__all__ = [
    "Appended",
    "FrameSlice",
    "Garbage",
    "Producer",
    "Trajectory",
    "collect_trajectory_garbage",
    "create_trajectory",
    "open_trajectory",
    "validate_trajectory",
]


def _root_of(record: Any) -> Location:
    root = getattr(record, "_location", None)
    if isinstance(root, Location):
        return root
    return location_of(getattr(record, "path", record))  # a duck-typed record, or a bare root


def _tree_of(record: Any) -> Tree:
    """The record's node tree (a directory or a packed zip); a bare location is a live root."""
    tree = getattr(record, "_tree", None)
    return tree if isinstance(tree, Tree) else Tree(_root_of(record).as_store())


def _sections_of(record: Any) -> tuple[dict[str, Block] | None, dict[str, Mapping[str, Block]]]:
    system = getattr(record, "system", None)
    frame = getattr(record, "frame", None)
    sections: dict[str, Mapping[str, Block]] = {}
    if system is not None:
        sections["system"] = system.blocks
    if frame is not None:
        sections["frame"] = frame.blocks
    return (None if system is None else system.blocks), sections


class Trajectory(Sequence[Frame]):
    """A record's trajectory: ``len``, ``traj[i]``, ``traj[i:j:k]``, ``read``, ``append`` ...

    Use :func:`open_trajectory`; a record's ``.trajectory`` does it for you.

    Reading resolves carry-forward: ``traj[i]`` holds every block present (or
    empty) at ``i``, every declared meta key, the step, the time and the cell.
    Writing (``append``/``extend``) queues frames and commits every ``K``
    frames; ``flush()`` and ``close()`` commit durably. Reads see queued
    frames (they commit first). Safe to call from several threads.
    """

    def __init__(
        self,
        root: Location,
        *,
        tree: Tree | None = None,
        read_only: bool,
        system: Mapping[str, Block] | None = None,
        sections: Mapping[str, Mapping[str, Block]] | None = None,
        flush_every: int | None = None,
        molrec_version: int | None = None,
    ) -> None:
        self._root = root
        self._tree = tree if tree is not None else Tree(root.as_store())
        self._path = root / "trajectory"
        self._read_only = read_only
        self._system = dict(system) if system is not None else None
        self._sections = dict(sections or {})
        self._flush_every = flush_every
        self._version = molrec_version
        self._reader: TrajectoryReader | None = None
        self._writer: TrajectoryWriter | None = None
        self._lease: WriterLease | None = None
        #: Set on the trajectory of an unborn record: creates the record on the first append.
        self._birth: Callable[[Declaration], None] | None = None
        #: What the last acquire_writer would wait, kept for a first append it could not lock ahead
        self._lease_wait = 0.0
        self._closed_nstep: int | None = None
        self._mutex = threading.RLock()
        if self._tree.node("trajectory") is not None:
            self._reader = TrajectoryReader(self._tree, system=system)

    # -- state ---------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Where the trajectory lives: ``<record url>/trajectory``."""
        return str(self._path)

    @property
    def declaration(self) -> Declaration | None:
        """The pinned ``sequence_schema`` (``None`` before the first frame)."""
        with self._mutex:
            if self._writer is not None:
                return self._writer.declaration
            return None if self._reader is None else self._reader.declaration

    @property
    def nstep(self) -> int:
        """Frames committed on disk (what another process reading now sees)."""
        with self._mutex:
            if self._writer is not None:
                self._writer.wait()
                return self._writer.nstep
            return 0 if self._reader is None else self._reader.nstep

    def __len__(self) -> int:
        with self._mutex:
            if self._writer is not None:
                held = self._writer.nstep + self._writer.pending
                # on object storage (no lease) a refreshed reader may know of commits a
                # held writer has not seen; under a lease the writer is never behind
                return held if self._reader is None else max(held, self._reader.nstep)
            if self._closed_nstep is not None:
                return self._closed_nstep
            return 0 if self._reader is None else self._reader.nstep

    def refresh(self) -> int:
        """Re-read the commit marker to follow a store another process appends to; ``len``."""
        with self._mutex:
            if self._reader is None and self._tree.node("trajectory") is not None:
                self._reader = TrajectoryReader(self._tree, system=self._system)
            elif self._reader is not None:
                self._reader.refresh()
            return len(self)

    # -- reading -------------------------------------------------------------------------------

    def _committed_reader(self) -> TrajectoryReader:
        """The reader, after committing queued frames so that reads see them."""
        if self._writer is not None:
            if self._writer.pending:
                self._writer.flush(durable=False)
            self._writer.wait()
        if (
            self._writer is not None
            and self._reader is not None
            and self._reader.nstep != self._writer.nstep
        ):
            self._reader.refresh()
        if self._reader is None:
            raise IndexError("the trajectory has no frames")
        return self._reader

    def _ordinal(self, i: int) -> int:
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"frame indices are integers, not {type(i).__name__}")
        j = int(i) + n if i < 0 else int(i)
        if not 0 <= j < n:
            raise IndexError(f"frame {i} is outside the {n} frames")
        return j

    @overload
    def __getitem__(self, i: int) -> Frame: ...
    @overload
    def __getitem__(self, i: slice) -> FrameSlice: ...
    def __getitem__(self, i: int | slice) -> Frame | FrameSlice:
        if isinstance(i, slice):
            return FrameSlice(self, range(*i.indices(len(self))))
        return self.read(i)

    def read(
        self, i: int, *, blocks: Iterable[str] | None = None, columns: Iterable[str] | None = None
    ) -> Frame:
        """Frame ``i`` (negative counts from the end), projected to ``blocks``/``columns``.

        Only the arrays of the selected blocks and columns are read.
        """
        with self._mutex:
            j = self._ordinal(i)
            return self._committed_reader().frame(
                j,
                blocks=None if blocks is None else list(blocks),
                columns=None if columns is None else list(columns),
            )

    def __iter__(self) -> Iterator[Frame]:
        for i in range(len(self)):
            yield self.read(i)

    def steps(self) -> npt.NDArray[np.int64]:
        """Step numbers of every frame, ``i64[nstep]``."""
        with self._mutex:
            if not len(self):
                return np.empty(0, dtype=np.int64)
            return self._committed_reader().steps()

    def times(self) -> npt.NDArray[np.float64] | None:
        """Times of every frame, ``f64[nstep]``, or ``None`` in a run without times."""
        with self._mutex:
            if not len(self):
                return None
            return self._committed_reader().times()

    def series(self, key: str, start: int = 0, stop: int | None = None) -> npt.NDArray[Any]:
        """Per-step values of ``key`` over frames ``[start, stop)``; vector tags give ``[n, w]``."""
        with self._mutex:
            if self._reader is None:
                raise InvalidRecord(f"meta key {key!r} is not declared (no trajectory yet)")
            return self._committed_reader().series(key, start, stop)

    # -- writing -------------------------------------------------------------------------------

    def _held_writer(self, first: Frame, expected: int | None) -> TrajectoryWriter:
        """The writer for appending after ``first``, once ``expected`` holds under its lease.

        ``expected`` is checked before (a refusal creates nothing) and again
        once the lease is held: taking it re-reads the store, where another
        process may have committed or created the trajectory since this
        handle last looked. Only the second check can see that.
        """
        self._check_expected(expected)
        writer = self._writer_for(first)
        self._check_expected(expected)
        return writer

    def _writer_for(
        self, first: Frame | None, *, wait: float = 0.0, lease_wait: float | None = None
    ) -> TrajectoryWriter:
        if self._writer is not None:
            return self._writer
        if self._read_only:
            raise ReadOnlyError("the record is open read-only", path=self._path.key)
        if self._version == 1:
            raise ReadOnlyError(
                "a version-1 trajectory is read, never appended to (record.md §4.1)",
                path=self._path.key,
            )
        if self._reader is None:
            if first is None:
                raise InvalidRecord(
                    "no trajectory yet: append a frame or create it with a declaration"
                )
            declaration = Declaration.from_frames([first])
            if self._birth is not None:  # an unborn record: created whole, with this trajectory
                self._birth(declaration)
                self._birth = None
            else:
                create_trajectory_group(self._root, declaration)
            self._reader = TrajectoryReader(self._tree, system=self._system)
        self._lock(max(wait, self._lease_wait) if lease_wait is None else lease_wait)
        self._closed_nstep = None
        try:
            self._writer = TrajectoryWriter(
                self._root,
                system=self._system,
                sections=self._sections,
                flush_every=self._flush_every,
                reader=self._reader,
            )
        except BaseException:
            self._unlock()
            raise
        self._reader.refresh()
        return self._writer

    def append(self, frame: Frame, *, expected_nstep: int | None = None) -> int:
        """Append one frame (with its ``step``; ``time`` when the run has times). Returns ``len``.

        The first frame of a record without a trajectory creates it, declaring
        what that frame presents. Refused frames change nothing.

        Raises
        ------
        PreconditionFailed
            ``expected_nstep`` is given and the trajectory is not at that
            length (``.nstep`` on the error says where it is); nothing lands.
        """
        with self._mutex:
            return self._held_writer(frame, expected_nstep).append(frame)

    def extend(self, frames: Iterable[Frame], *, expected_nstep: int | None = None) -> int:
        """Append many frames, all or nothing. Returns ``len``.

        ``expected_nstep`` makes it conditional, as for :meth:`append`.
        """
        frames = list(frames)
        with self._mutex:
            if not frames:
                self._check_expected(expected_nstep)
                return len(self)
            return self._held_writer(frames[0], expected_nstep).extend(frames)

    def extend_once(
        self, frames: Iterable[Frame], producer: Producer, *, expected_nstep: int | None = None
    ) -> Appended:
        """:meth:`extend` as batch ``producer.seq`` of an idempotent producer: exactly once.

        The producer state commits with the frames (in the same marker write
        as ``nstep``). A batch already committed lands nothing and answers as
        the first time, ``duplicate=True``; the producer check runs before
        ``expected_nstep``'s. A refused batch (bad frames, ``expected_nstep``)
        leaves the producer's sequence where it was.

        Raises
        ------
        ProducerFenced
            ``producer.epoch`` is older than the producer's stored epoch.
        SequenceGap
            ``producer.seq`` is not the next sequence of that producer.
        """
        frames = list(frames)
        with self._mutex:
            if self._reader is None:  # none seen here yet: refuse what no trajectory accepts
                ProducerTable().check(producer, 0)
                self._check_expected(expected_nstep)
                writer = self._writer_for(frames[0] if frames else None)
            else:
                writer = self._writer_for(None)
            # again under the lease: another process may have created the trajectory or
            # committed this very batch since (a retry racing its first attempt)
            duplicate = writer.producers.check(producer, len(self))
            if duplicate is not None:
                return duplicate
            self._check_expected(expected_nstep)
            first = len(self)
            writer.extend(frames, producer=producer)
            return Appended(first + len(frames), first, len(frames))

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the trajectory for a group of calls made by this thread.

        Other threads' reads and writes wait until the block ends, so a group
        of appends that ends in :meth:`flush` is seen whole and durable or not
        at all: nobody reads its frames while they are only queued. The
        service commits each group of POSTs inside one such block.
        """
        with self._mutex:
            yield

    def acquire_writer(self, wait: float = 0.0) -> int:
        """Hold the writer lease, waiting up to ``wait`` s for another process to give it up.

        Taking the lease re-reads the committed state (frames and producer
        state another writer committed meanwhile); a held lease is kept. On
        object storage (no lease) a held writer is reopened when another
        writer committed since (one HEAD of the marker). A trajectory not
        created yet is left to its first append. Returns ``len``.

        Raises
        ------
        WriterBusy
            Another writer still holds the lease after ``wait`` seconds.
        """
        deadline = time.monotonic() + wait
        pause = 0.001
        while True:
            # one try per turn, waiting between tries without the mutex: this
            # process's reads of the trajectory go on while another process's lease lasts
            with self._mutex:
                self._lease_wait = wait  # the first append of a new trajectory waits as long
                if self._writer is not None and writer_is_stale(self._writer.root):
                    # object storage: another process committed; this writer would lose
                    with contextlib.suppress(MrecdError):
                        self.release_writer()
                if self._writer is not None or self._reader is None:
                    return len(self)
                try:
                    self._writer_for(None, wait=0.0, lease_wait=0.0)
                    return len(self)
                except WriterBusy:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise
            time.sleep(min(pause, left))
            pause = min(2 * pause, 0.01)

    def release_writer(self) -> int:
        """Commit queued frames durably and give the writer lease up; returns ``nstep``.

        The trajectory stays usable: reads see what other writers commit after
        :meth:`refresh`, and the next write takes the lease again.
        """
        with self._mutex:
            if self._writer is not None:
                try:
                    self._writer.close()
                finally:
                    self._writer = None
                    self._unlock()
            if self._reader is not None:
                self._reader.refresh()
            return len(self)

    def _check_expected(self, expected: int | None) -> None:
        if expected is None:
            return
        if isinstance(expected, bool) or not isinstance(expected, int) or expected < 0:
            raise InvalidRecord(
                f"expected_nstep must be a non-negative integer, not {expected!r}",
                path="expected_nstep",
            )
        current = len(self)
        if current != expected:
            raise PreconditionFailed(
                f"the trajectory holds {current} frames, not the expected {expected}",
                path=self._path.key,
                nstep=current,
            )

    def flush(self) -> int:
        """Commit queued frames durably (fsync); returns the committed ``nstep``."""
        with self._mutex:
            if self._writer is None:
                return self.nstep
            nstep = self._writer.flush(durable=True)
            if self._reader is not None:
                self._reader.refresh()
            return nstep

    def close(self) -> None:
        """Commit durably, release the files and the writer lock."""
        with self._mutex:
            if self._writer is not None:
                try:
                    self._writer.close()
                finally:
                    self._closed_nstep = self._writer.nstep
                    self._writer = None
                    self._unlock()
            if self._reader is not None:
                self._reader.close()

    def __enter__(self) -> Trajectory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Trajectory({str(self._root)!r}, frames={len(self)})"

    # -- the one-writer lock -------------------------------------------------------------------

    def _lock(self, wait: float = 0.0) -> None:
        self._lease = self._path.store.writer_lease(self._path.key, wait=wait)

    def _unlock(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None


def open_trajectory(record: Any, *, flush_every: int | None = None) -> Trajectory:
    """The trajectory of ``record`` (a ``StoredRecord``, or a record root path opened writable).

    The record provides ``path``, ``read_only``, ``system``, ``frame`` and
    ``molrec_version``; a plain path is taken as a writable root without system.
    """
    system, sections = _sections_of(record)
    return Trajectory(
        _root_of(record),
        tree=_tree_of(record),
        read_only=bool(getattr(record, "read_only", False)),
        system=system,
        sections=sections,
        flush_every=flush_every,
        molrec_version=getattr(record, "molrec_version", None),
    )


def create_trajectory(record: Any, declaration: Declaration | Mapping[str, Any]) -> Trajectory:
    """Create ``record``'s trajectory pinned to ``declaration``; return it (no frames yet)."""
    declaration = Declaration.from_dict(declaration)
    if getattr(record, "read_only", False):
        raise ReadOnlyError("the record is open read-only")
    system, _ = _sections_of(record)
    from ..model import check_system_alignment

    check_system_alignment(declaration, system)
    create_trajectory_group(_root_of(record), declaration)
    return open_trajectory(record)


def validate_trajectory(record: Any) -> list[Violation]:
    """Every rule the trajectory breaks (empty when clean), paths relative to the record root."""
    try:
        system, _ = _sections_of(record)
        reader = TrajectoryReader(_tree_of(record), system=system)
    except MrecdError as exc:
        return [Violation.from_error(exc, path="trajectory", rule="trajectory.md")]
    try:
        return [
            Violation.from_error(InvalidRecord(message, path=path), rule="trajectory.md")
            for path, message in reader.validate()
        ]
    finally:
        reader.close()


def collect_trajectory_garbage(target: str, *, dry_run: bool = False) -> list[tuple[str, Garbage]]:
    """``mrecd gc``: delete objects past the committed ``nstep`` of trajectories at ``target``.

    ``target`` is a record root (``s3://bucket/lab/run.mrec``), a catalog
    with its record's name (``s3://bucket/lab/run``), or a catalog (every
    record in it). Answers ``(record url, garbage)`` per trajectory.

    Raises
    ------
    NotFound
        No trajectory at ``target``.
    """
    roots = _trajectory_roots(target.rstrip("/"))
    return [(str(root), collect_garbage(root, dry_run=dry_run)) for root in roots]


def _trajectory_roots(target: str) -> list[Location]:
    store = open_store(target)
    marker = "trajectory/zarr.json"
    if store.exists(marker):
        return [Location(store, "")]
    records = [d for d in store.list_dir("")[0] if d.endswith(".mrec")]
    found = [Location(store, d) for d in records if store.exists(f"{d}/{marker}")]
    if found:
        return found
    head, _, name = target.rpartition("/")
    if head and "://" not in name:
        parent = open_store(head)
        if parent.exists(f"{name}.mrec/{marker}"):
            return [Location(parent, f"{name}.mrec")]
    raise NotFound("no trajectory (nor records with one) here", path=target)
