"""``export``: a record's trajectory written by MDAnalysis (XTC, DCD, PDB, GRO, TRR ...)."""

from __future__ import annotations

from os import PathLike, fspath
from pathlib import Path
from typing import Any

from ..api import StoredRecord
from ..errors import AlreadyExists, InvalidRecord
from ._mda import mdanalysis
from ._universe import universe

__all__ = ["export"]


def _writer_options(path: Path, frames: int, u: Any) -> dict[str, Any]:
    """MDAnalysis writer keywords for ``frames`` frames to ``path``; refuse a format it lacks."""
    from MDAnalysis.coordinates.core import get_writer_for

    try:
        get_writer_for(str(path), multiframe=False)
    except (TypeError, ValueError):
        raise InvalidRecord(
            f"MDAnalysis has no writer for {path.suffix or 'files without an extension'!r}",
            path=str(path),
        ) from None
    try:
        if frames > 1:
            get_writer_for(str(path), multiframe=True)
    except (TypeError, ValueError):
        raise InvalidRecord(
            f"MDAnalysis writes one frame to {path.suffix!r} files and {frames} are selected:"
            " choose one (frame=/--frame)",
            path=str(path),
        ) from None
    options: dict[str, Any] = {"n_atoms": u.atoms.n_atoms}
    if path.suffix.lower() == ".pdb":
        options["multiframe"] = frames > 1
    elif path.suffix.lower() == ".dcd" and u.trajectory.n_frames > 1:
        options["dt"] = u.trajectory.dt  # DCD keeps one time step for the file
    return options


def _selection(
    n_frames: int, frame: int | None, start: int | None, stop: int | None, step: int | None
) -> range:
    ordinals = range(n_frames)
    if frame is None:
        return ordinals[start:stop:step]
    if not -n_frames <= frame < n_frames:
        raise InvalidRecord(f"frame {frame} is outside the {n_frames} frames", path="frame")
    return ordinals[frame : frame + 1 or None]


def export(
    source: StoredRecord | str | PathLike[str],
    path: str | PathLike[str],
    *,
    frame: int | None = None,
    start: int | None = None,
    stop: int | None = None,
    step: int | None = None,
    overwrite: bool = False,
) -> int:
    """Write a record's trajectory to ``path`` through MDAnalysis; the format follows the suffix.

    The topology written (PDB/GRO names, residues, elements ...) is the
    record's ``system`` section, as :func:`mrecd.md.universe` builds it.
    XTC is written at MDAnalysis's default grid (1e-3 nm); multi-frame PDB
    as MODEL records; GRO holds one frame.

    Parameters
    ----------
    source
        An open record, a record root (``*.mrec``/``*.mrec.zip``) or ``STORE/NAME``.
    path
        The file to write: ``.xtc``, ``.dcd``, ``.pdb``, ``.gro``, ``.trr`` ...
    frame
        Write only this frame (negative counts from the end).
    start, stop, step
        Otherwise frames ``[start:stop:step]`` (default: all).
    overwrite
        Replace an existing ``path``.

    Returns
    -------
    int
        Frames written.

    Raises
    ------
    AlreadyExists
        ``path`` exists and ``overwrite`` is false.
    InvalidRecord
        No MDAnalysis writer for the suffix, several frames for a one-frame
        format, or no frames selected.
    """
    out = Path(fspath(path))
    if out.exists() and not overwrite:
        raise AlreadyExists("the output file exists (overwrite it with --force)", path=str(out))
    u = universe(source)
    try:
        ordinals = _selection(u.trajectory.n_frames, frame, start, stop, step)
        if not ordinals:
            raise InvalidRecord("the selection holds no frames", path="frames")
        options = _writer_options(out, len(ordinals), u)
        with mdanalysis().Writer(str(out), **options) as writer:
            for i in ordinals:
                u.trajectory[i]
                writer.write(u.atoms)
    finally:
        u.trajectory.close()
    return len(ordinals)
