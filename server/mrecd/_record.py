"""``Record``: one record's content in memory (record.md §2).

What a collection appends and hands back (``meta``, ``system``, a list of
trajectory frames), what a Zarr record can be created from, and the logical
JSON form of the published schema (``schema/core/record``), in which a
trajectory is ``{blocks, meta, frames, step, time, box: {cell_defined,
updates}}``.

A record holds a force field, so this module sits above both
:mod:`mrecd.model` and :mod:`mrecd.forcefield` (which builds on the model).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .errors import InvalidRecord
from .forcefield import ForceField
from .model import (
    Block,
    Box,
    Declaration,
    Frame,
    SequenceState,
    box_updates_from_dict,
    box_updates_to_dict,
    check_method,
    check_record_meta,
    check_status,
    decode_element,
    encode_element,
    finite_json,
)

__all__ = ["SECTIONS", "SUBSTANTIVE_SECTIONS", "Record"]

#: Root sections this model reads; any other root key is preserved as plain JSON.
SECTIONS: Final = ("meta", "system", "frame", "trajectory", "forcefield", "status", "method")
#: A record carries at least one of these besides ``meta`` (record.md §2 rule 2).
SUBSTANTIVE_SECTIONS: Final = ("frame", "system", "trajectory", "forcefield", "status")
_TRAJECTORY_KEYS: Final = frozenset({"blocks", "meta", "frames", "step", "time", "box"})


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
    """A record's sections: ``meta`` (a document), ``system``, ``frame``, ``trajectory``, ...

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
        A :class:`~mrecd.forcefield.ForceField`, or ``None``.
    declaration
        The trajectory's pinned ``sequence_schema`` (a :class:`Declaration`),
        when the record states it; derived from the frames by :meth:`to_dict`
        when absent.
    status, method
        The run documents (checked with :func:`check_status` / :func:`check_method`).
    sections
        Other root sections (``observables``, ``metrics``, a producer's own),
        preserved verbatim as plain JSON.
    """

    __slots__ = (
        "declaration",
        "forcefield",
        "frame",
        "meta",
        "method",
        "sections",
        "status",
        "system",
        "trajectory",
    )

    def __init__(
        self,
        meta: Mapping[str, Any] | None = None,
        *,
        system: Frame | None = None,
        frame: Frame | None = None,
        trajectory: Iterable[Frame] | None = None,
        forcefield: ForceField | None = None,
        declaration: Declaration | None = None,
        status: Mapping[str, Any] | None = None,
        method: Mapping[str, Any] | None = None,
        sections: Mapping[str, Any] | None = None,
    ) -> None:
        if meta is not None and not isinstance(meta, Mapping):
            raise InvalidRecord("the meta document is a mapping", path="meta")
        self.meta: dict[str, Any] = dict(meta or {})
        self.system = _frame(system, "system")
        self.frame = _frame(frame, "frame")
        self.trajectory: list[Frame] | None = None if trajectory is None else list(trajectory)
        self.forcefield = forcefield
        self.declaration = declaration
        self.status = None if status is None else check_status(status)
        self.method = None if method is None else check_method(method)
        self.sections: dict[str, Any] = _other_sections(sections or {})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [f"meta={sorted(self.meta)}"]
        for name in ("system", "frame", "forcefield", "status", "method"):
            if getattr(self, name) is not None:
                parts.append(name)
        if self.trajectory is not None:
            parts.append(f"trajectory[{len(self.trajectory)}]")
        parts.extend(sorted(self.sections))
        return f"Record({', '.join(parts)})"

    # -- rules ----------------------------------------------------------------------------

    def check_sections(self) -> None:
        """Refuse a record with nothing but ``meta`` (and ``observables``/``method``/``metrics``).

        record.md §2 rule 2: at least one of ``frame``, ``system``,
        ``trajectory``, ``forcefield``, ``status`` besides ``meta``. Writers call it.
        """
        if all(getattr(self, name) is None for name in SUBSTANTIVE_SECTIONS):
            raise InvalidRecord(
                "a record carries at least one of frame, system, trajectory, forcefield, status"
                " besides meta (record.md §2)",
                path="record",
            )

    def frame_sections(self) -> dict[str, Mapping[str, Block]]:
        """``{"frame": blocks, "system": blocks}`` for the sections present (absolute targets)."""
        out: dict[str, Mapping[str, Block]] = {}
        for name in ("frame", "system"):
            section = getattr(self, name)
            if section is not None:
                out[name] = section.blocks
        return out

    # -- JSON interchange form ------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any) -> Record:
        """Read the logical JSON form of a record, refusing what a reader refuses.

        ``null`` sections are absent. The trajectory's frames are held to its
        declaration and to the trajectory rules (steps, alignment, row
        references, the ``system`` row counts); unknown root sections are kept.
        """
        if not isinstance(data, Mapping):
            raise InvalidRecord("a record is a JSON object", path="record")
        if "meta" not in data or data["meta"] is None:
            raise InvalidRecord("a record always has meta (record.md §2)", path="meta")
        present = {k: v for k, v in data.items() if v is not None}
        frames = {
            n: Frame.from_dict(present[n], path=n) for n in ("system", "frame") if n in present
        }
        record = cls(
            check_record_meta(present["meta"]),
            system=frames.get("system"),
            frame=frames.get("frame"),
            forcefield=_forcefield(present.get("forcefield")),
            status=present.get("status"),
            method=present.get("method"),
            sections={k: v for k, v in present.items() if k not in SECTIONS},
        )
        record._check_frame_targets()
        if "trajectory" in present:
            record.declaration, record.trajectory = _read_trajectory(
                present["trajectory"], record.system, record.frame_sections()
            )
        record.check_sections()
        return record

    def to_dict(self) -> dict[str, Any]:
        """The logical JSON form; absent sections are omitted."""
        out: dict[str, Any] = {"meta": finite_json(self.meta, path="meta")}
        for name in ("system", "frame"):
            section = getattr(self, name)
            if section is not None:
                out[name] = section.to_dict()
        if self.trajectory is not None:
            out["trajectory"] = _write_trajectory(self.trajectory, self.declaration)
        if self.forcefield is not None:
            out["forcefield"] = self.forcefield.to_dict()
        for name in ("status", "method"):
            if getattr(self, name) is not None:
                out[name] = dict(getattr(self, name))
        out.update(self.sections)
        return out

    def _check_frame_targets(self) -> None:
        sections = self.frame_sections()
        for name in ("frame", "system"):
            section = getattr(self, name)
            if section is not None:
                try:
                    section.check_targets(sections)
                except InvalidRecord as exc:
                    raise InvalidRecord(exc.message, path=f"{name}/{exc.path}") from None


def _other_sections(sections: Mapping[str, Any]) -> dict[str, Any]:
    clash = set(sections) & set(SECTIONS)
    if clash:
        raise InvalidRecord(f"{sorted(clash)} are sections of the model, not other sections")
    out: dict[str, Any] = finite_json(dict(sections), path="record")
    return out


def _forcefield(data: Any) -> ForceField | None:
    return None if data is None else ForceField.from_dict(data)


# -- trajectory -------------------------------------------------------------------------------


def _read_trajectory(
    data: Any, system: Frame | None, sections: Mapping[str, Mapping[str, Block]]
) -> tuple[Declaration, list[Frame]]:
    """The declaration and the frames (each with its step, time and changed cell)."""
    if not isinstance(data, Mapping):
        raise InvalidRecord("a trajectory is a JSON object", path="trajectory")
    unknown = set(data) - _TRAJECTORY_KEYS
    if unknown:
        raise InvalidRecord(f"unknown trajectory keys {sorted(unknown)}", path="trajectory")
    declaration = Declaration.from_dict(
        {"blocks": data.get("blocks") or {}, "meta": data.get("meta") or {}}, path="trajectory"
    )
    raw_frames = data.get("frames", [])
    if not isinstance(raw_frames, list):
        raise InvalidRecord("trajectory frames is a JSON array", path="trajectory.frames")
    steps, times = _steps_and_times(data, len(raw_frames))
    cells = _cells(data.get("box"), len(raw_frames))
    tags = {k: s.dtype for k, s in declaration.meta.items()}
    state = SequenceState(
        declaration, system=None if system is None else system.blocks, sections=sections
    )
    frames = []
    for i, raw in enumerate(raw_frames):
        where = f"trajectory.frames.{i}"
        frame = Frame.from_dict(raw, meta_types=tags, path=where)
        box = _one_cell(frame.box, cells.get(i), where)
        frame = frame.replace(step=steps[i], time=None if times is None else times[i], box=box)
        frames.append(state.admit(frame, path=where).frame)
    return declaration, frames


def _steps_and_times(data: Mapping[str, Any], count: int) -> tuple[list[int], list[float] | None]:
    steps = data.get("step", [])
    if not isinstance(steps, list) or len(steps) != count:
        raise InvalidRecord(
            f"step is a list of {count} integers, one per frame", path="trajectory.step"
        )
    held = [decode_element("i64", s, path=f"trajectory.step.{i}") for i, s in enumerate(steps)]
    times = data.get("time")
    if times is None:
        return held, None
    if not isinstance(times, list) or len(times) != count:
        raise InvalidRecord(f"time is null or a list of {count} reals", path="trajectory.time")
    return held, [
        decode_element("f64", t, path=f"trajectory.time.{i}") for i, t in enumerate(times)
    ]


def _one_cell(own: Box | None, update: Box | None, where: str) -> Box | None:
    if own is not None and update is not None and own != update:
        raise InvalidRecord(
            "the frame's box differs from the cell update at its ordinal", path=where
        )
    return update if update is not None else own


def _cells(data: Any, count: int) -> dict[int, Box]:
    if data is None:
        return {}
    cells = dict(box_updates_from_dict(data))
    late = [i for i in cells if i >= count]
    if late:
        raise InvalidRecord(
            f"cell updates at ordinals {late} past the {count} frames", path="trajectory.box"
        )
    return cells


def _write_trajectory(frames: list[Frame], declaration: Declaration | None) -> dict[str, Any]:
    if any(f.step is None for f in frames):
        raise InvalidRecord("every trajectory frame carries its step", path="trajectory.step")
    times = [f.time for f in frames]
    if len({t is None for t in times}) > 1:
        raise InvalidRecord("time is all-or-nothing (trajectory.md §1.2)", path="trajectory.time")
    if declaration is None:
        declaration = Declaration.from_frames(frames)
    pinned = declaration.to_dict()
    cells: list[tuple[int, Box]] = []
    for i, frame in enumerate(frames):
        if frame.box is not None and (not cells or cells[-1][1] != frame.box):
            cells.append((i, frame.box))
    return {
        "blocks": pinned["blocks"],
        "box": box_updates_to_dict(cells),
        "frames": [_trajectory_frame(f) for f in frames],
        "meta": pinned["meta"],
        "step": [encode_element("i64", f.step) for f in frames],
        "time": None
        if not frames or times[0] is None
        else [encode_element("f64", t) for t in times],
    }


def _trajectory_frame(frame: Frame) -> dict[str, Any]:
    data = frame.to_dict()
    return {"blocks": data["blocks"], "box": None, "meta": data["meta"]}
