"""Record: root sections, the JSON form with a trajectory, preservation (record.md §2, §6.1, §9)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd import Record
from mrecd.forcefield import ForceField
from mrecd.model import Block, Box, Declaration, Frame, box_updates_from_dict

CUBE = [[10.0, 0.0, 0.0], [0.0, 10.0, 0.0], [0.0, 0.0, 10.0]]


def xcol(values: list[float]) -> dict[str, Any]:
    return {"dtype": "f64", "shape": [len(values)], "values": values}


def traj_frame(xs: list[float], pe: Any = -1.0, **more: Any) -> dict[str, Any]:
    return {
        "blocks": {"atoms": {"count": len(xs), "columns": {"x": xcol(xs)}}},
        "box": None,
        "meta": {"pe": pe},
        **more,
    }


def trajectory(**change: Any) -> dict[str, Any]:
    data = {
        "blocks": {"atoms": {"columns": {"x": {"dtype": "f64", "trailing": []}}}},
        "box": {"cell_defined": True, "updates": [{"box": {"vectors": CUBE}, "step_index": 0}]},
        "frames": [traj_frame([0.0, 1.5]), traj_frame([0.5, 1.5], pe="NaN")],
        "meta": {"pe": {"dtype": "f64"}},
        "step": [0, 10],
        "time": [0.0, 0.5],
    }
    data.update(change)
    return data


def record(**sections: Any) -> dict[str, Any]:
    return {"meta": {"molrec_version": 2}, **sections}


def roundtrip(data: dict[str, Any]) -> Record:
    rec = Record.from_dict(data)
    again = Record.from_dict(json.loads(json.dumps(rec.to_dict(), allow_nan=False)))
    assert again == rec
    return rec


# -- root sections ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sections", "valid"),
    [
        ({}, False),
        ({"method": {"type": "ml", "description": "d", "engine": {"name": "e"}}}, False),
        ({"observables": {"x": 1}, "metrics": {"y": 2}}, False),
        ({"trajectory": trajectory()}, True),
        ({"forcefield": {"name": "ff", "units": {"preset": "real"}, "styles": []}}, True),
        ({"status": {"state": "running"}}, True),
        ({"frame": {"blocks": {}}}, True),
        ({"system": {"blocks": {}}}, True),
        ({"frame": None, "system": None, "status": None}, False),
    ],
)
def test_meta_needs_at_least_one_substantive_companion(
    sections: dict[str, Any], valid: bool
) -> None:
    if valid:
        roundtrip(record(**sections))
    else:
        with pytest.raises(mrecd.InvalidRecord, match="at least one"):
            Record.from_dict(record(**sections))


def test_meta_is_required_and_checked() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="always has meta"):
        Record.from_dict({"frame": {"blocks": {}}})
    with pytest.raises(mrecd.UnsupportedVersion):
        Record.from_dict({"meta": {"molrec_version": 3}, "frame": {"blocks": {}}})


def test_status_and_method_are_checked() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="state"):
        Record.from_dict(record(status={"stage": "x"}))
    with pytest.raises(mrecd.InvalidRecord, match="engine"):
        Record.from_dict(record(frame={"blocks": {}}, method={"type": "ml", "description": "x"}))


def test_unknown_sections_and_keys_are_preserved_verbatim() -> None:
    extra = {"x_vendor": {"attrs": {"k": None}, "arrays": [[1, 2]], "child": {"g": {}}}}
    data = record(frame={"blocks": {}}, observables={"ir": {"data": [0.1]}}, **extra)
    data["meta"]["x_unknown"] = None
    rec = roundtrip(data)
    out = rec.to_dict()
    assert out["x_vendor"] == extra["x_vendor"] and out["observables"] == {"ir": {"data": [0.1]}}
    assert out["meta"] == {"molrec_version": 2, "x_unknown": None}


def test_the_constructor_keeps_working_and_refuses_bad_documents() -> None:
    frame = Frame({"atoms": {"x": np.zeros(2)}})
    rec = Record({"k": 1}, frame=frame, trajectory=[Frame(step=0)], system=None)
    assert rec.frame is frame and rec.trajectory is not None and len(rec.trajectory) == 1
    with pytest.raises(mrecd.InvalidRecord):
        Record({}, status={"no": "state"})
    with pytest.raises(mrecd.InvalidRecord, match="sections of the model"):
        Record({}, sections={"frame": {}})
    with pytest.raises(mrecd.InvalidRecord):
        Record({}, frame="frame")  # type: ignore[arg-type]
    with pytest.raises(mrecd.InvalidRecord, match="at least one"):
        Record({}).check_sections()


def test_a_record_holds_a_force_field() -> None:
    data = record(
        forcefield={
            "name": "pkg",
            "units": {"preset": "real"},
            "styles": [{"category": "atom", "style": "full"}],
            "tables": {
                "atom.full": {
                    "count": 1,
                    "columns": {"name": {"dtype": "string", "shape": [1], "values": ["A"]}},
                }
            },
        }
    )
    rec = roundtrip(data)
    assert isinstance(rec.forcefield, ForceField) and rec.forcefield.name == "pkg"


# -- row references across sections ----------------------------------------------------------


def members(values: list[int], target: str) -> dict[str, Any]:
    return {
        "count": len(values),
        "columns": {"atom": {"dtype": "u64", "shape": [len(values)], "values": values}},
        "targets": {"atom": target},
    }


def test_absolute_targets_into_a_present_section_are_range_checked() -> None:
    system = {"blocks": {"atoms": {"count": 2, "columns": {"x": xcol([0.0, 1.0])}}}}
    ok = record(system=system, frame={"blocks": {"members": members([0, 1], "/system/atoms")}})
    roundtrip(ok)
    bad = record(system=system, frame={"blocks": {"members": members([0, 2], "/system/atoms")}})
    with pytest.raises(mrecd.InvalidRecord, match="not below"):
        Record.from_dict(bad)
    absent = record(frame={"blocks": {"members": members([0, 9], "/system/atoms")}})
    roundtrip(absent)  # the section is absent: no check


def test_same_container_targets_are_checked_on_frame_and_system() -> None:
    frame = {"blocks": {"bonds": members([0], "sites")}}
    with pytest.raises(mrecd.InvalidRecord, match="does not exist"):
        Record.from_dict(record(frame=frame))


# -- trajectory JSON form ---------------------------------------------------------------------


def test_a_trajectory_round_trips_with_steps_times_and_cell_updates() -> None:
    rec = roundtrip(record(trajectory=trajectory()))
    assert rec.trajectory is not None and [f.step for f in rec.trajectory] == [0, 10]
    assert [f.time for f in rec.trajectory] == [0.0, 0.5]
    assert rec.trajectory[0].box == Box(CUBE) and rec.trajectory[1].box is None
    assert math.isnan(rec.trajectory[1].meta["pe"])
    assert rec.declaration == Declaration.from_dict(
        {"blocks": trajectory()["blocks"], "meta": trajectory()["meta"]}
    )
    out = rec.to_dict()["trajectory"]
    assert out["frames"][1]["meta"] == {"pe": "NaN"}
    assert out["box"] == {
        "cell_defined": True,
        "updates": [
            {
                "box": {"vectors": CUBE, "origin": [0.0, 0.0, 0.0], "boundary": [True, True, True]},
                "step_index": 0,
            }
        ],
    }


def test_an_undefined_cell_section_applies_to_every_update() -> None:
    box = {
        "cell_defined": False,
        "updates": [{"box": {"vectors": [[0.0] * 3] * 3}, "step_index": 1}],
    }
    rec = roundtrip(record(trajectory=trajectory(box=box)))
    assert rec.trajectory is not None
    cell = rec.trajectory[1].box
    assert (
        cell is not None and not cell.cell_defined and cell.vectors.tolist() == np.eye(3).tolist()
    )


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        ({"step": [0, 0]}, "strictly increasing"),
        ({"step": [10, 5]}, "strictly increasing"),
        ({"step": [0]}, "one per frame"),
        ({"step": [0, 1.5]}, "not rounded"),
        ({"time": [0.0]}, "null or a list"),
        ({"time": [0.0, None]}, "null is not NaN"),
        (
            {
                "frames": [
                    traj_frame([0.0]),
                    {"blocks": {"bonds": {"count": 0, "columns": {}}}, "meta": {"pe": 1.0}},
                ]
            },
            "not declared",
        ),
        ({"frames": [traj_frame([0.0]), traj_frame([0.0], pe=None)]}, "null is not NaN"),
        ({"frames": [traj_frame([0.0]), {"blocks": {}, "meta": {}}]}, "omits declared meta key"),
        ({"frames": "x"}, "JSON array"),
        ({"blocks": {"box": {"columns": {}}}}, "reserved"),
        ({"meta": {"pe": {"dtype": "i64"}}}, "canonical"),
        (
            {
                "box": {
                    "cell_defined": True,
                    "updates": [{"box": {"vectors": CUBE}, "step_index": -1}],
                }
            },
            "ordinal",
        ),
        (
            {
                "box": {
                    "cell_defined": True,
                    "updates": [{"box": {"vectors": CUBE}, "step_index": 2}],
                }
            },
            "past the 2 frames",
        ),
        (
            {
                "box": {
                    "cell_defined": True,
                    "updates": [
                        {"box": {"vectors": CUBE}, "step_index": 1},
                        {"box": {"vectors": CUBE}, "step_index": 1},
                    ],
                }
            },
            "strictly ascending",
        ),
        ({"box": {"cell_defined": "yes", "updates": []}}, "boolean"),
        (
            {
                "box": {
                    "cell_defined": False,
                    "updates": [
                        {
                            "box": {"vectors": CUBE, "boundary": [True, False, False]},
                            "step_index": 0,
                        }
                    ],
                }
            },
            "periodic on no axis",
        ),
        (
            {
                "box": {
                    "updates": [{"box": {"vectors": CUBE, "cell_defined": True}, "step_index": 0}]
                }
            },
            "cell_defined is the section's",
        ),
        ({"x_vendor": 1}, "unknown trajectory keys"),
    ],
)
def test_a_trajectory_breaking_a_rule_is_refused(change: dict[str, Any], rule: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=rule):
        Record.from_dict(record(trajectory=trajectory(**change)))


def test_a_trajectory_update_must_match_the_system_rows() -> None:
    system = {
        "blocks": {
            "atoms": {
                "count": 3,
                "columns": {"id": {"dtype": "u64", "shape": [3], "values": [0, 1, 2]}},
            }
        }
    }
    with pytest.raises(mrecd.InvalidRecord, match="holds 2 rows but system/atoms has 3"):
        Record.from_dict(record(system=system, trajectory=trajectory()))


def test_a_frame_box_inside_a_trajectory_agrees_with_the_cell_section() -> None:
    frames = [traj_frame([0.0, 1.5], box={"vectors": CUBE}), traj_frame([0.5, 1.5])]
    rec = Record.from_dict(record(trajectory=trajectory(frames=frames)))
    assert rec.trajectory is not None and rec.trajectory[0].box == Box(CUBE)
    other = [traj_frame([0.0, 1.5], box={"vectors": np.eye(3).tolist()}), traj_frame([0.5, 1.5])]
    with pytest.raises(mrecd.InvalidRecord, match="differs from the cell update"):
        Record.from_dict(record(trajectory=trajectory(frames=other)))


def test_to_dict_derives_a_declaration_for_frames_built_in_memory() -> None:
    frames = [
        Frame({"atoms": {"x": np.zeros(2)}}, meta={"pe": 1.0}, step=s, box=Box(CUBE))
        for s in (0, 5)
    ]
    out = Record({}, trajectory=frames).to_dict()["trajectory"]
    assert out["blocks"] == {"atoms": {"columns": {"x": {"dtype": "f64", "trailing": []}}}}
    assert out["meta"] == {"pe": {"dtype": "f64"}}
    assert out["step"] == [0, 5] and out["time"] is None
    assert [u["step_index"] for u in out["box"]["updates"]] == [0]
    back = Record.from_dict({"meta": {}, "trajectory": out})
    assert back.trajectory is not None and len(back.trajectory) == 2


@pytest.mark.parametrize(
    "frames",
    [[Frame(step=None)], [Frame(step=0, time=0.0), Frame(step=1)]],
    ids=["no-step", "time-not-all-or-nothing"],
)
def test_to_dict_refuses_frames_that_are_not_a_trajectory(frames: list[Frame]) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        Record({}, trajectory=frames).to_dict()


def test_a_zero_frame_trajectory_is_a_trajectory() -> None:
    rec = roundtrip(record(trajectory=trajectory(frames=[], step=[], time=None, box=None)))
    assert rec.trajectory == []


def test_box_updates_need_box_and_step_index_only() -> None:
    for bad in (
        {"box": {"vectors": CUBE}},
        {"step_index": 0},
        {"box": {"vectors": CUBE}, "step_index": 0, "x": 1},
        {"box": [], "step_index": 0},
        {"box": {"vectors": CUBE}, "step_index": True},
    ):
        with pytest.raises(mrecd.InvalidRecord):
            box_updates_from_dict({"updates": [bad]})
    with pytest.raises(mrecd.InvalidRecord):
        box_updates_from_dict({"updates": {}})
    with pytest.raises(mrecd.InvalidRecord):
        box_updates_from_dict([])


def test_record_equality() -> None:
    a = Record.from_dict(record(trajectory=trajectory()))
    b = Record.from_dict(record(trajectory=trajectory()))
    assert a == b
    changed = copy.deepcopy(trajectory())
    changed["frames"][1]["meta"]["pe"] = 2.0
    assert a != Record.from_dict(record(trajectory=changed))
    assert a != Record.from_dict({"meta": {"molrec_version": 1}, "trajectory": trajectory()})
    assert Block(count=1) != a  # type: ignore[comparison-overlap]
