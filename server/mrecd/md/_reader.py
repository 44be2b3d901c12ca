"""An MDAnalysis trajectory reader over a record's trajectory, reading frame ``i`` on demand.

This module imports MDAnalysis at load (it subclasses ``ReaderBase``), so
:mod:`mrecd.md` loads it only when a Universe is asked for.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from MDAnalysis.coordinates.base import ReaderBase
from MDAnalysis.lib.mdamath import triclinic_box

from ..api import StoredRecord, open_record
from ..errors import InvalidRecord
from ..model import Box, Frame

__all__ = ["MrecReader", "dimensions_of"]

_XYZ = ["x", "y", "z"]


def dimensions_of(box: Box | None) -> npt.NDArray[np.float64] | None:
    """MDAnalysis ``[a, b, c, alpha, beta, gamma]`` of ``box``; ``None`` without a cell."""
    if box is None or not box.cell_defined:
        return None
    a, b, c = box.vectors.T  # the columns of `vectors` are the lattice vectors
    return np.asarray(triclinic_box(a, b, c), dtype=np.float64)


class MrecReader(ReaderBase):  # type: ignore[misc]  # MDAnalysis ships no type information
    """Frames of a molrec record's trajectory as MDAnalysis timesteps, read one at a time.

    Frame ``i`` is read through ``record.trajectory.read(i)`` (only the
    ``atoms`` x/y/z and the cell) when MDAnalysis asks for it, so a long
    record is never loaded whole. Positions are in Å, times in ps; the
    record's step numbers are ``ts.data["step"]``.

    Parameters
    ----------
    filename
        The record root (``*.mrec`` or ``*.mrec.zip``); opened read-only
        unless ``record`` is given.
    record
        An open record to read instead (the caller keeps it open and closes it).
    **kwargs
        MDAnalysis reader options (``n_atoms``, ``dt`` ...).
    """

    format = "MREC"
    units = {"time": "ps", "length": "Angstrom"}  # noqa: RUF012 - MDAnalysis's own class contract

    def __init__(self, filename: Any, record: StoredRecord | None = None, **kwargs: Any) -> None:
        super().__init__(filename, **kwargs)
        self._attach(record)
        self.ts = self._Timestep(self.n_atoms, reader=self, **self._ts_kwargs)
        self._read_frame(0)

    def _attach(self, record: StoredRecord | None) -> None:
        self._owned = record is None
        self._record: StoredRecord | None = open_record(self.filename) if record is None else record
        trajectory = self._record.trajectory
        if trajectory is None or len(trajectory) == 0:
            raise InvalidRecord("the record has no trajectory frames to read", path=self.filename)
        self._trajectory = trajectory
        self._times: npt.NDArray[np.float64] | None = None
        self._frame = -1
        self.n_atoms = self._atoms(self._read(0)).count

    # -- the reader contract ----------------------------------------------------------------------

    @property
    def n_frames(self) -> int:
        """Frames in the record's trajectory."""
        return len(self._trajectory)

    def _read(self, i: int) -> Frame:
        return self._trajectory.read(i, blocks=["atoms"], columns=_XYZ)

    @staticmethod
    def _atoms(frame: Frame) -> Any:
        atoms = frame.get("atoms")
        if atoms is None or not all(c in atoms for c in _XYZ):
            raise InvalidRecord(
                "frame has no atoms x/y/z to read as positions", path="trajectory/atoms"
            )
        return atoms

    def _fill(self, i: int, ts: Any) -> Any:
        frame = self._read(i)
        atoms = self._atoms(frame)
        if atoms.count != self.n_atoms:
            raise InvalidRecord(
                f"frame {i} holds {atoms.count} atoms, frame 0 {self.n_atoms}: MDAnalysis needs"
                " a fixed atom count",
                path="trajectory/atoms",
            )
        ts.frame = i
        ts.positions = np.column_stack([atoms[c].values for c in _XYZ])
        ts.dimensions = dimensions_of(frame.box)
        ts.data["step"] = frame.step
        if frame.time is not None:
            ts.time = frame.time
        return ts

    def _read_frame(self, frame: int) -> Any:
        self._frame = frame
        return self._fill(frame, self.ts)

    def _read_next_timestep(self, ts: Any = None) -> Any:
        if self._frame + 1 >= self.n_frames:
            raise OSError("trying to go over trajectory limit")  # MDAnalysis's end-of-file signal
        self._frame += 1
        return self._fill(self._frame, self.ts if ts is None else ts)

    def _reopen(self) -> None:
        self._frame = -1

    def _get_dt(self) -> float:
        if self._times is None:
            times = self._trajectory.times()
            self._times = np.empty(0) if times is None else times
        if len(self._times) < 2:
            raise AttributeError("the record has fewer than two times")  # MDAnalysis: dt unknown
        return float(self._times[1] - self._times[0])

    def close(self) -> None:
        """Close the record if this reader opened it."""
        record = self.__dict__.get("_record")
        if record is not None and self._owned:
            record.close()
            self._record = None

    # -- pickling (parallel analysis sends readers to other processes) ------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for handle in ("_record", "_trajectory", "_times"):
            state.pop(handle, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        frame = state["_frame"]
        self.__dict__.update(state)
        self._attach(None)  # a pickled reader reopens the record by path
        self._frame = frame
