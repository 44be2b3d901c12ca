"""``universe(record)``: a record as an MDAnalysis Universe (``system`` topology, lazy frames)."""

from __future__ import annotations

from os import PathLike
from typing import Any

from ..api import StoredRecord
from ..errors import InvalidRecord
from ._system import empty_topology
from ._target import open_source

__all__ = ["universe"]


def _atom_count(record: StoredRecord) -> int:
    system = record.system
    if system is not None and "atoms" in system:
        return system["atoms"].count
    trajectory = record.trajectory
    if trajectory is None or len(trajectory) == 0:
        raise InvalidRecord("the record has no trajectory frames to read", path=record.url)
    atoms = trajectory.read(0, blocks=["atoms"]).get("atoms")
    if atoms is None:
        raise InvalidRecord("the trajectory has no atoms block", path="trajectory/atoms")
    return atoms.count


def universe(source: StoredRecord | str | PathLike[str]) -> Any:
    """Open a record as an :class:`MDAnalysis.Universe`, for analysis code written for MDAnalysis.

    The topology comes from the ``system`` section (names, types, elements,
    residues, segments, charges, masses, bonds ... whatever it holds; bare
    atoms without one). The trajectory is an :class:`~mrecd.md.MrecReader`
    that reads frame ``i`` from the record when MDAnalysis moves to it, so a
    10,000-frame record is not loaded whole. Positions are the stored Å
    values (as MDAnalysis's float32), the cell comes from each frame's box,
    ``ts.time`` is the record's time in ps and ``ts.data["step"]`` its step.
    Once this has run (or :class:`~mrecd.md.MrecReader` was imported),
    MDAnalysis also opens a ``*.mrec`` root as a trajectory of its own:
    ``MDAnalysis.Universe("topol.psf", "data/run-1.mrec")``.

    Parameters
    ----------
    source
        An open :class:`~mrecd.StoredRecord` (kept open by the caller), a
        record root (``*.mrec`` or ``*.mrec.zip``), or ``STORE/NAME``.

    Returns
    -------
    MDAnalysis.Universe
        Close it with ``u.trajectory.close()`` when opened from a path.

    Raises
    ------
    NotFound
        No such record.
    InvalidRecord
        The record has no trajectory frames with ``atoms`` x/y/z, or its
        ``system/atoms`` row count differs from the frames'.

    Examples
    --------
    >>> u = mrecd.md.universe("data/adk")          # doctest: +SKIP
    >>> [ts.time for ts in u.trajectory[:2]]        # doctest: +SKIP
    [0.0, 100.00000762939453]
    """
    from ._reader import MrecReader

    record, owned = open_source(source)
    try:
        u = empty_topology(record.system, _atom_count(record))
        u.load_new(
            record.local_path or record.url, format=MrecReader, record=None if owned else record
        )
    finally:
        if owned:
            record.close()  # the reader opened its own handle by path
    return u
