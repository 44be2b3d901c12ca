"""``ingest``: what MDAnalysis reads, into a record (system, trajectory at a declared precision)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from os import PathLike, fspath
from pathlib import Path
from typing import Any, Final

import numpy as np

from ..errors import AlreadyExists, InvalidRecord, NotFound, StepOrderError
from ..model import Box, Declaration, Frame, check_precision
from ._mda import mdanalysis
from ._system import system_of
from ._target import RecordSink, SinkRecord, is_service_url, sink_of

__all__ = ["Ingested", "ingest", "source_precision"]

#: Frames per ``extend`` call, capped so that one batch holds at most this many coordinates.
BATCH_FRAMES: Final = 64
BATCH_VALUES: Final = 1 << 23  # 64 MiB of f64

Paths = str | PathLike[str] | Sequence[str | PathLike[str]]
Formats = dict[str, str | None]


@dataclass(frozen=True)
class Ingested:
    """What :func:`ingest` wrote.

    Attributes
    ----------
    name
        The record's name in the store.
    frames, atoms
        Frames written and atoms per frame.
    precision
        The declared precision of x/y/z in Å, or ``None`` (stored as read).
    seconds
        Wall time of reading and writing the frames.
    """

    name: str
    frames: int
    atoms: int
    precision: float | None
    seconds: float

    @property
    def frames_per_second(self) -> float:
        """Ingest speed over the frames written."""
        return self.frames / self.seconds if self.seconds > 0 else float("inf")


# -- the source ------------------------------------------------------------------------------------


def _check_formats(topology: Path, trajectories: list[Path], formats: Formats) -> None:
    mda = mdanalysis()
    from MDAnalysis.coordinates.core import get_reader_for
    from MDAnalysis.topology.core import get_parser_for

    for path in [topology, *trajectories]:
        if not path.is_file():
            raise NotFound("no such file", path=str(path))
    checks = [(topology, get_parser_for, "topology", formats["topology_format"])]
    checks += [(p, get_reader_for, "trajectory", formats["format"]) for p in trajectories]
    for path, check, kind, named in checks:
        try:
            check(str(path), format=named)
        except (ValueError, KeyError):
            how = f"format {named!r}" if named else f"extension {path.suffix or '(none)'!r}"
            raise InvalidRecord(
                f"MDAnalysis {mda.__version__} reads no {kind} of this format (by its {how});"
                " see its list of supported formats",
                path=str(path),
            ) from None


def _formats(format: str | None, topology_format: str | None, alone: bool) -> Formats:
    """MDAnalysis's format options; a lone file takes either for both, as MDAnalysis does."""
    if alone:
        format, topology_format = format or topology_format, topology_format or format
    return {"format": format, "topology_format": topology_format}


def _open_universe(paths: Paths, formats: Formats) -> tuple[Any, list[str]]:
    """A Universe over ``[topology, trajectory...]`` and the paths as the record's ``source``."""
    items = [paths] if isinstance(paths, (str, PathLike)) else list(paths)
    if not items:
        raise InvalidRecord("give a topology file (and trajectory files)", path="paths")
    topology, *trajectories = (Path(fspath(p)) for p in items)
    formats = _formats(formats["format"], formats["topology_format"], not trajectories)
    _check_formats(topology, trajectories, formats)
    options = {k: v for k, v in formats.items() if v is not None}
    try:
        u = mdanalysis().Universe(str(topology), *map(str, trajectories), **options)
    except (ValueError, TypeError, OSError) as exc:
        raise InvalidRecord(f"MDAnalysis could not read it: {exc}", path=str(topology)) from None
    return _with_coordinates(u), [str(p) for p in (topology, *trajectories)]


def _with_coordinates(u: Any) -> Any:
    if not hasattr(u, "trajectory"):
        raise InvalidRecord(
            "the topology holds no coordinates: give a trajectory file too",
            path=str(getattr(u, "filename", None) or "universe"),
        )
    return u


def _files_of(u: Any) -> list[str]:
    """The files a Universe was read from (topology first), each once."""
    trajectory = u.trajectory
    names = [u.filename, *getattr(trajectory, "filenames", [trajectory.filename])]
    return list(dict.fromkeys(str(n) for n in names if n))


def _universe_of(source: Any, formats: Formats) -> tuple[Any, list[str]]:
    if isinstance(source, mdanalysis().Universe):
        u = _with_coordinates(source)
        return u, _files_of(u)
    return _open_universe(source, formats)


def _xtc_precision(path: str) -> float | None:
    """The grid of an XTC file in Å (``10 / prec``), or ``None`` when it stores full floats."""
    from MDAnalysis.lib.formats.libmdaxdr import XTCFile

    with XTCFile(path) as xtc:
        if xtc.n_atoms <= 9:  # XTC keeps <= 9 atoms uncompressed: no grid
            return None
        prec = float(xtc.read().prec)
    return 10.0 / prec if np.isfinite(prec) and prec > 0 else None


def source_precision(trajectory: Any) -> float | None:
    """The precision the source was written at, in Å: an XTC's grid, else ``None`` (lossless).

    XTC stores coordinates as integers on a grid of ``1/prec`` nm (``prec =
    1000`` by default: 1e-3 nm = 1e-2 Å). A chain of XTC files takes the
    finest grid among them; a chain mixing XTC with lossless formats is
    lossless, so that no lossless frame is rounded.
    """
    readers = getattr(trajectory, "readers", [trajectory])
    grids: list[float | None] = []
    for reader in readers:
        if type(reader).__name__ != "XTCReader":
            return None
        grids.append(_xtc_precision(reader.filename))
    return None if None in grids else min(g for g in grids if g is not None)


# -- frames ----------------------------------------------------------------------------------------


def box_of(dimensions: Any) -> Box | None:
    """The cell of MDAnalysis ``[a, b, c, alpha, beta, gamma]`` as a :class:`~mrecd.Box`.

    ``None`` (no box) when MDAnalysis reports no cell or a degenerate one.
    """
    if dimensions is None:
        return None
    from MDAnalysis.lib.mdamath import triclinic_vectors

    rows = triclinic_vectors(np.asarray(dimensions, dtype=np.float64), dtype=np.float64)
    if not np.any(rows):
        return None
    return Box(rows.T)  # MDAnalysis gives the lattice vectors as rows; a Box holds them as columns


def _frame_of(ts: Any, step: int) -> Frame:
    xyz = np.asarray(ts.positions, dtype=np.float64).T.copy()  # three contiguous rows
    return Frame(
        {"atoms": {"x": xyz[0], "y": xyz[1], "z": xyz[2]}},
        step=step,
        time=float(ts.time),
        box=box_of(ts.dimensions),
    )


def _frames(trajectory: Any, selection: slice) -> Iterator[Frame]:
    """Frames of ``trajectory[selection]``, stepped by the reader's step if any, else the frame."""
    use_steps: bool | None = None
    last: tuple[int, int] | None = None  # (frame, step) of the previous frame
    for ts in trajectory[selection]:
        if use_steps is None:
            use_steps = "step" in ts.data
        step = int(ts.data["step"]) if use_steps else int(ts.frame)
        if last is not None and step <= last[1]:
            raise StepOrderError(
                f"frame {ts.frame} has step {step}, not above frame {last[0]}'s {last[1]}: steps"
                " strictly increase (trajectory.md §1.1); the inputs overlap or restart their"
                " step count, so ingest them as separate records",
                path="trajectory/step",
            )
        last = (int(ts.frame), step)
        yield _frame_of(ts, step)


def _batches(frames: Iterator[Frame], size: int) -> Iterator[list[Frame]]:
    batch: list[Frame] = []
    for frame in frames:
        batch.append(frame)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _progress(total: int, name: str, enabled: bool) -> Any:
    """A tqdm bar (frames/s and ETA on stderr), or a stand-in that shows nothing."""
    if enabled:
        with contextlib.suppress(ImportError):
            from tqdm import tqdm

            return tqdm(total=total, unit="frame", desc=name, dynamic_ncols=True, smoothing=0.1)
    return _NoProgress()


class _NoProgress:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


# -- the record ------------------------------------------------------------------------------------


def _selection(
    n_frames: int, start: int | None, stop: int | None, step: int | None
) -> tuple[slice, int]:
    """``slice(start, stop, step)`` and the frames it selects; refuse a selection of none."""
    selection = slice(start, stop, step)
    try:
        total = len(range(n_frames)[selection])
    except ValueError as exc:  # a zero step
        raise InvalidRecord(f"frames [{start}:{stop}:{step}]: {exc}", path="frames") from None
    if total == 0:
        raise InvalidRecord(
            f"frames [{start}:{stop}:{step}] of {n_frames} select none", path="frames"
        )
    return selection, total


def _declaration(precision: float | None) -> Declaration:
    column: dict[str, Any] = {"dtype": "f64", "trailing": []}
    if precision is not None:
        column["precision"] = precision
    return Declaration.from_dict(
        {"blocks": {"atoms": {"columns": {c: dict(column) for c in "xyz"}}}, "meta": {}}
    )


def _meta(sources: list[str]) -> dict[str, Any]:
    from .. import __version__

    meta: dict[str, Any] = {
        "creator": {"name": "mrecd", "version": __version__},
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if sources:
        meta["source"] = ", ".join(sources)
    return meta


def _write(record: SinkRecord, trajectory: Any, selection: slice, batch: int, bar: Any) -> int:
    written = 0
    for frames in _batches(_frames(trajectory, selection), batch):
        record.trajectory.extend(frames)
        written += len(frames)
        bar.update(len(frames))
    return written


def _discard(sink: RecordSink, record: SinkRecord, name: str) -> None:
    """Leave nothing behind after a failed ingest (a sink that cannot delete keeps the record)."""
    with contextlib.suppress(Exception):
        record.close()
    delete = getattr(sink, "delete_record", None)
    if delete is not None:
        with contextlib.suppress(Exception):
            delete(name)


def ingest(
    source: Any,
    store: str | PathLike[str] | RecordSink,
    name: str,
    *,
    precision: float | None = None,
    start: int | None = None,
    stop: int | None = None,
    step: int | None = None,
    progress: bool = True,
    format: str | None = None,
    topology_format: str | None = None,
    token: str | None = None,
) -> Ingested:
    """Read a trajectory with MDAnalysis into a new record ``name`` of ``store``.

    The record gets a ``system`` section from the topology (see
    :func:`mrecd.md.system_of`: names, types, elements, residues, segments,
    charges, masses, bonds ... as the file provides them) and a trajectory
    of ``atoms`` x/y/z in Å (f64) with each frame's step, time (ps) and cell.

    The step is MDAnalysis's ``ts.data["step"]`` when the reader provides
    one (XTC, TRR, DCD ...), otherwise the frame index ``ts.frame`` (NetCDF,
    PDB, GRO, AMBER mdcrd ...); the time is ``ts.time``, which MDAnalysis
    computes from ``dt`` (1 ps when the file has none) for formats without
    times. A triclinic cell becomes the box's lattice vectors.

    Parameters
    ----------
    source
        An :class:`MDAnalysis.Universe`, or paths ``[topology, trajectory, ...]``
        (one path: a coordinate file that is its own topology, PDB or GRO).
        Formats are MDAnalysis's: XTC, TRR, DCD, NetCDF, PDB, GRO, LAMMPS
        dump ...; topologies PSF, PRMTOP, TPR, GRO, PDB ...
    store
        A catalog root path (made if missing); a server's URL
        ``http://host:port`` (frames stream through :class:`mrecd_client.Client`
        as idempotent producer batches); or any sink with ``create_record``
        (a :class:`~mrecd.Catalog`, a :class:`mrecd_client.Client`).
    name
        The new record's name; a record of that name is refused.
    precision
        Declared precision of x/y/z in Å (frame.md §7). Default: the
        source's own, i.e. an XTC's grid (1e-2 Å for the usual 1e-3 nm; its
        binary quantum 2^-7 Å is finer, so every XTC value stays distinct),
        and ``None`` (lossless) for every other format.
    start, stop, step
        Frames ``trajectory[start:stop:step]`` only.
    progress
        Show a progress bar (frames/s, ETA) on stderr.
    format, topology_format
        MDAnalysis format names (``"LAMMPSDUMP"``, ``"DATA"`` ...) for files
        whose extension does not say (a LAMMPS dump ``*.lammpstrj``); one
        file alone takes either for both.
    token
        Bearer token for a server URL (``append`` scope creates and appends;
        ``admin`` also lets a failed ingest delete its partial record).

    Returns
    -------
    Ingested
        The record name, frame and atom counts, the precision and the time taken.

    Raises
    ------
    NotFound
        A path does not exist.
    InvalidRecord
        A format MDAnalysis does not read, files it cannot read, no frames
        selected, or content the record refuses.
    AlreadyExists
        ``store`` holds a record named ``name``.
    StepOrderError
        The reader's steps do not strictly increase (overlapping inputs).
    PermissionDenied
        The server refused the token (HTTP 401/403).
    RetryableError
        The server could not be reached (after the client's retries).
    """
    if precision is not None:
        precision = check_precision(precision, path="precision")
    formats = {"format": format, "topology_format": topology_format}
    # refuse a taken name (and an unreachable server, a refused token) before parsing a
    # large topology; a server's client is sized by the frame, so it is made afterwards
    probe, release = sink_of(store, token=token)
    try:
        _refuse_existing(probe, name)
        universe, sources = _universe_of(source, formats)
    finally:
        release()
    sink, release = sink_of(store, token=token, frame_bytes=24 * int(universe.atoms.n_atoms))
    try:
        if is_service_url(store):
            _refuse_existing(sink, name)
        return _ingest_into(sink, name, universe, sources, precision, (start, stop, step), progress)
    finally:
        release()


def _refuse_existing(sink: RecordSink, name: str) -> None:
    if isinstance(sink, Container) and name in sink:
        raise AlreadyExists(f"the store holds a record named {name!r}", path=name)


def _ingest_into(
    sink: RecordSink,
    name: str,
    universe: Any,
    sources: list[str],
    precision: float | None,
    frames: tuple[int | None, int | None, int | None],
    progress: bool,
) -> Ingested:
    trajectory = universe.trajectory
    declared = source_precision(trajectory) if precision is None else precision
    selection, total = _selection(trajectory.n_frames, *frames)
    n_atoms = int(universe.atoms.n_atoms)
    batch = max(1, min(BATCH_FRAMES, BATCH_VALUES // max(1, 3 * n_atoms)))
    record = sink.create_record(
        name, meta=_meta(sources), system=system_of(universe), declaration=_declaration(declared)
    )
    bar = _progress(total, name, progress)
    began = time.perf_counter()
    try:
        written = _write(record, trajectory, selection, batch, bar)
        record.close()
    except BaseException:
        _discard(sink, record, name)
        raise
    finally:
        bar.close()
    return Ingested(name, written, n_atoms, declared, time.perf_counter() - began)
