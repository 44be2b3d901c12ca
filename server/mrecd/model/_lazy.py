"""A sequence of frames each built on first use, then kept."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from ._frame import Frame

__all__ = ["LazyFrames"]


class LazyFrames(Sequence[Frame]):
    """Frames built by :meth:`_build` when first asked for, then kept.

    Subclasses hold what a frame is built from (checked bytes, decoded
    updates) and fill ``_made`` with one ``None`` per frame. Building on use
    keeps a batch read cheap when the caller looks at few of its frames.
    """

    __slots__ = ("_made",)

    _made: list[Frame | None]

    def _build(self, k: int) -> Frame:
        """Frame ``k`` (``0 <= k < len(self)``), built from what the subclass holds."""
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._made)

    @overload
    def __getitem__(self, i: int) -> Frame: ...
    @overload
    def __getitem__(self, i: slice) -> list[Frame]: ...
    def __getitem__(self, i: int | slice) -> Frame | list[Frame]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        frame = self._made[i]  # IndexError beyond the end, as a list
        if frame is None:
            k = range(len(self._made))[i]
            frame = self._made[k] = self._build(k)
        return frame

    def __iter__(self) -> Iterator[Frame]:
        for k in range(len(self._made)):
            yield self[k]
