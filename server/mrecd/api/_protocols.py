"""What every trajectory offers: :class:`TrajectoryLike`, and the lazy :class:`FrameSlice`.

A record's :class:`~mrecd.api.Trajectory`, a collection record's
:class:`~mrecd.api.CollectionTrajectory` and the client's trajectories all
conform, so code written against one reads the others. The same faults raise
the same classes everywhere:

- an index out of range raises ``IndexError`` (or a subclass, such as
  :class:`~mrecd.errors.RecordOutOfRange`);
- an index that is not an integer (``bool`` included) raises ``TypeError``;
- an undeclared block or meta key raises :class:`~mrecd.errors.InvalidRecord`,
  naming it.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, overload, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..model import Declaration, Frame

__all__ = ["FrameSlice", "Readable", "TrajectoryLike"]


class Readable(Protocol):
    """What a :class:`FrameSlice` reads from: ``len`` and ``read(i)``."""

    def __len__(self) -> int:
        """The number of frames."""
        ...

    def read(self, i: int) -> Frame:
        """Frame ``i``, ``0 <= i < len``."""
        ...


@runtime_checkable
class TrajectoryLike(Protocol):
    """A trajectory read frame by frame: ``len``, ``[i]``, ``[i:j:k]``, iteration, series.

    Frames are resolved (carry-forward applied, trajectory.md §6): each holds
    every block present at its ordinal, every declared meta key, its step,
    time and cell. Negative indices count from the end.
    """

    @property
    def declaration(self) -> Declaration | None:
        """The pinned ``sequence_schema``; ``None`` before a record's first frame."""
        ...

    def __len__(self) -> int:
        """The number of frames."""
        ...

    @overload
    def __getitem__(self, i: int) -> Frame: ...
    @overload
    def __getitem__(self, i: slice) -> FrameSlice: ...
    def __getitem__(self, i: int | slice) -> Frame | FrameSlice:
        """Frame ``i`` (as :meth:`read`), or a lazy :class:`FrameSlice` of a slice."""
        ...

    def __iter__(self) -> Iterator[Frame]:
        """Every frame in order."""
        ...

    def read(
        self, i: int, *, blocks: Iterable[str] | None = None, columns: Iterable[str] | None = None
    ) -> Frame:
        """Frame ``i``, projected.

        Parameters
        ----------
        i
            Frame ordinal; negative counts from the end.
        blocks
            Block names to return (all when ``None``); only their arrays are read.
        columns
            Column names kept in every returned block (all when ``None``).

        Returns
        -------
        Frame
            The resolved frame.

        Raises
        ------
        IndexError
            ``i`` is out of range.
        TypeError
            ``i`` is not an integer.
        InvalidRecord
            A block in ``blocks`` is not declared.
        """
        ...

    def steps(self) -> npt.NDArray[np.int64]:
        """The step number of every frame, ``i64[n]``."""
        ...

    def times(self) -> npt.NDArray[np.float64] | None:
        """The time of every frame, ``f64[n]``, or ``None`` for a run without times."""
        ...

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
            (``json`` values as compact JSON text).

        Raises
        ------
        InvalidRecord
            ``key`` is not declared.
        """
        ...


class FrameSlice(Sequence[Frame]):
    """A lazy view of frames ``traj[i:j:k]``: frames are read when indexed or iterated.

    Parameters
    ----------
    source
        Anything with ``len`` and ``read(i)`` (a trajectory).
    ordinals
        The source's frame ordinals in view, in order (non-negative).

    Notes
    -----
    Compares equal to any list, tuple or :class:`FrameSlice` of equal frames
    (reading every frame of both).
    """

    __slots__ = ("_ordinals", "_source")

    def __init__(self, source: Readable, ordinals: range) -> None:
        self._source = source
        self._ordinals = ordinals

    def __len__(self) -> int:
        return len(self._ordinals)

    @overload
    def __getitem__(self, i: int) -> Frame: ...
    @overload
    def __getitem__(self, i: slice) -> FrameSlice: ...
    def __getitem__(self, i: int | slice) -> Frame | FrameSlice:
        if isinstance(i, slice):
            return FrameSlice(self._source, self._ordinals[i])
        if isinstance(i, bool):
            raise TypeError("frame indices are integers, not bool")
        try:
            j = self._ordinals[operator.index(i)]
        except IndexError:
            raise IndexError(f"frame {i} is outside the {len(self)} frames of the slice") from None
        return self._source.read(j)

    def __iter__(self) -> Iterator[Frame]:
        for j in self._ordinals:
            yield self._source.read(j)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (FrameSlice, list, tuple)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FrameSlice({self._ordinals})"


# mypy checks that both trajectories conform to the one protocol.
if TYPE_CHECKING:
    from ._collection import CollectionTrajectory
    from ._trajectory import Trajectory

    def _conforms(trajectory: CollectionTrajectory) -> TrajectoryLike:
        return trajectory

    def _record_conforms(trajectory: Trajectory) -> TrajectoryLike:
        return trajectory
