"""The collection's logical JSON form (the published schema fixtures), both ways.

Shape (``schema/core/collection``)::

    {"meta": {...units...}, "sequence_schema": {...}, "index": <block: own columns>,
     "records": [{"meta", "system", "trajectory", "frame": null, "method": null, ...}]}

A trajectory is ``{"blocks", "meta"}`` (its declaration), ``"frames"`` (each
``{"blocks", "box", "meta"}``), ``"step"``, ``"time"`` and ``"box"``:
``{"cell_defined", "updates": [{"box", "step_index"}]}`` with the cell at the
ordinals where it changes. Written frames are resolved frames (restating an
unchanged block is no update, so this is the same trajectory).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ...errors import InvalidRecord
from ...model import Block, Box, Column, Declaration, Frame, Record, encode_meta

__all__ = [
    "collection_from_dict",
    "collection_to_dict",
    "frame_to_dict",
    "record_to_dict",
    "trajectory_from_dict",
]

_RECORD_SECTIONS: Final = (
    "frame",
    "meta",
    "method",
    "metrics",
    "observables",
    "status",
    "system",
    "trajectory",
)


def trajectory_from_dict(data: Mapping[str, Any], *, path: str) -> dict[str, Any]:
    """``{"declaration", "frames"}`` from a trajectory's JSON form."""
    if not isinstance(data, Mapping):
        raise InvalidRecord("a trajectory is a JSON object", path=path)
    declaration = Declaration.from_dict(
        {"blocks": data.get("blocks") or {}, "meta": data.get("meta") or {}}, path=path
    )
    tags = {k: spec.dtype for k, spec in declaration.meta.items()}
    raw_frames = data.get("frames") or []
    steps = data.get("step") or []
    times = data.get("time")
    if len(steps) != len(raw_frames) or (times is not None and len(times) != len(raw_frames)):
        raise InvalidRecord("step (and time) hold one value per frame", path=path)
    cells = _cells(data.get("box"), path)
    frames = []
    for k, raw in enumerate(raw_frames):
        where = f"{path}.frames[{k}]"
        if not isinstance(raw, Mapping):
            raise InvalidRecord("a frame is a JSON object", path=where)
        frame = Frame.from_dict(
            {
                "blocks": raw.get("blocks") or {},
                "meta": raw.get("meta") or {},
                "box": cells.get(k, raw.get("box")),
                "step": steps[k],
                "time": None if times is None else times[k],
            },
            meta_types=tags,
            path=where,
        )
        frames.append(frame)
    return {"declaration": declaration, "frames": frames}


def _cells(section: Any, path: str) -> dict[int, dict[str, Any]]:
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise InvalidRecord("box is {cell_defined, updates}", path=f"{path}.box")
    defined = section.get("cell_defined", True)
    out = {}
    for update in section.get("updates") or []:
        out[int(update["step_index"])] = {**update["box"], "cell_defined": defined}
    return out


def _record_from_dict(data: Any, path: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise InvalidRecord("a record is a JSON object", path=path)
    out: dict[str, Any] = {k: v for k, v in data.items() if k not in _RECORD_SECTIONS}
    if out:
        raise InvalidRecord(f"unknown record keys {sorted(out)}", path=path)
    for name in ("frame", "method", "metrics", "observables", "status"):
        if data.get(name) is not None:
            out[name] = data[name]  # refused by the writer, naming the section
    out["meta"] = data.get("meta") or {}
    if data.get("system") is not None:
        out["system"] = Frame.from_dict(data["system"], path=f"{path}.system")
    if data.get("trajectory") is not None:
        out["trajectory"] = trajectory_from_dict(data["trajectory"], path=f"{path}.trajectory")
    return out


def collection_from_dict(data: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments for ``create_collection`` plus ``records`` and per-record ``index`` rows."""
    if not isinstance(data, Mapping):
        raise InvalidRecord("a collection is a JSON object", path="collection")
    index = Block.from_dict(data.get("index") or {"columns": {}, "count": 0}, path="index")
    records = data.get("records") or []
    if index.count != len(records):
        raise InvalidRecord(
            f"the index has {index.count} rows for {len(records)} records", path="index"
        )
    columns = {
        name: {"dtype": c.dtype, "trailing": list(c.trailing), "nullable": c.validity is not None}
        | ({} if c.precision is None else {"precision": c.precision})
        for name, c in index.items()
    }
    rows = [{name: _cell(c, r) for name, c in index.items()} for r in range(index.count)]
    return {
        "meta": data.get("meta"),
        "declaration": data.get("sequence_schema"),
        "index_columns": columns,
        "records": [_record_from_dict(rec, f"records[{r}]") for r, rec in enumerate(records)],
        "index": rows,
    }


def _cell(column: Column, r: int) -> Any:
    if column.validity is not None and not column.validity[r]:
        return None
    return column.values[r]


# -- to the JSON form -----------------------------------------------------------------------


def _column_to_dict(column: Column) -> dict[str, Any]:
    out = column.to_dict()
    out["validity"] = None if column.validity is None else column.validity.tolist()
    return out


def _block_to_dict(block: Block) -> dict[str, Any]:
    out = block.to_dict()
    out["columns"] = {n: _column_to_dict(c) for n, c in block.items()}
    out["structural_shape"] = (
        None if block.structural_shape is None else list(block.structural_shape)
    )
    return out


def frame_to_dict(frame: Frame, *, typed: bool = True) -> dict[str, Any]:
    """``{"blocks", "box", "meta"}`` (+ ``meta_types`` when ``typed``)."""
    out: dict[str, Any] = {
        "blocks": {n: _block_to_dict(b) for n, b in frame.items()},
        "box": None if frame.box is None else frame.box.to_dict(),
        "meta": {k: encode_meta(frame.meta_types[k], v) for k, v in frame.meta.items()},
    }
    if typed:
        out["meta_types"] = frame.meta_types
    return out


def _trajectory_to_dict(declaration: Declaration, frames: Sequence[Frame]) -> dict[str, Any]:
    schema = declaration.to_dict()
    updates: list[dict[str, Any]] = []
    current: Box | None = None
    for k, frame in enumerate(frames):
        if frame.box is not None and frame.box != current:
            current = frame.box
            cell = frame.box.to_dict()
            cell.pop("cell_defined")
            updates.append({"box": cell, "step_index": k})
    box = None
    if updates:
        box = {"cell_defined": current.cell_defined if current else True, "updates": updates}
    has_time = bool(frames) and frames[0].time is not None
    return {
        "blocks": schema["blocks"],
        "box": box,
        "frames": [{**frame_to_dict(f, typed=False), "box": None} for f in frames],
        "meta": schema["meta"],
        "step": [f.step for f in frames],
        "time": [f.time for f in frames] if has_time else None,
    }


def record_to_dict(record: Record, declaration: Declaration | None) -> dict[str, Any]:
    """A collection record in the JSON form (sections it cannot carry are ``null``)."""
    trajectory = record.trajectory
    return {
        "frame": None,
        "meta": dict(record.meta),
        "method": None,
        "metrics": None,
        "observables": None,
        "status": None,
        "system": None if record.system is None else frame_to_dict(record.system),
        "trajectory": None
        if trajectory is None
        else _trajectory_to_dict(declaration or Declaration(), list(trajectory)),
    }


def collection_to_dict(
    meta: Mapping[str, Any],
    declaration: Declaration | None,
    index: Block,
    own: Iterable[str],
    records: Iterable[Record],
) -> dict[str, Any]:
    """The whole collection in its JSON form; ``index`` keeps only the ``own`` columns."""
    own_index = index.select(list(own))
    return {
        "index": _block_to_dict(own_index),
        "meta": dict(meta),
        "records": [record_to_dict(rec, declaration) for rec in records],
        "sequence_schema": (declaration or Declaration()).to_dict(),
    }
