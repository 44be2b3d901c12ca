"""``Record``: one record's content in memory (record.md §2).

What a collection appends and hands back (``meta``, ``system``, a list of
trajectory frames), and what a Zarr record can be created from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InvalidRecord
from ._frame import Frame

__all__ = ["Record"]


def _frame(value: Any, name: str) -> Frame | None:
    if value is None or isinstance(value, Frame):
        return value
    if isinstance(value, Mapping):
        return Frame(
            value.get("blocks"),
            meta=value.get("meta"),
            meta_types=value.get("meta_types"),
            box=value.get("box"),
        )
    raise InvalidRecord(f"{name} must be a Frame", path=name)


class Record:
    """A record's sections: ``meta`` (a document), ``system``, ``frame``, ``trajectory``, ``forcefield``.

    Parameters
    ----------
    meta
        The record's ``meta`` document (untyped JSON).
    system, frame
        Frames (frame-shaped sections), or ``None`` when absent.
    trajectory
        The trajectory's frames in order (each with its ``step``), ``[]`` for a
        trajectory with zero frames, ``None`` for no trajectory.
    forcefield
        A force field, or ``None``.
    """

    __slots__ = ("forcefield", "frame", "meta", "system", "trajectory")

    def __init__(
        self,
        meta: Mapping[str, Any] | None = None,
        *,
        system: Frame | None = None,
        frame: Frame | None = None,
        trajectory: Iterable[Frame] | None = None,
        forcefield: Any = None,
    ) -> None:
        self.meta: dict[str, Any] = dict(meta or {})
        self.system = _frame(system, "system")
        self.frame = _frame(frame, "frame")
        self.trajectory: list[Frame] | None = None if trajectory is None else list(trajectory)
        self.forcefield = forcefield

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (
            self.meta == other.meta
            and self.system == other.system
            and self.frame == other.frame
            and self.trajectory == other.trajectory
            and self.forcefield == other.forcefield
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [f"meta={sorted(self.meta)}"]
        for name in ("system", "frame", "forcefield"):
            if getattr(self, name) is not None:
                parts.append(name)
        if self.trajectory is not None:
            parts.append(f"trajectory[{len(self.trajectory)}]")
        return f"Record({', '.join(parts)})"
