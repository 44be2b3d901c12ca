"""Frames and the cell: reserved names, the logical JSON form, row-reference checks, box rules.

frame.md §5, §8, §9; README "Decisions" (undefined cell, row references).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.model import Block, Box, Column, Frame, check_frame_targets

CUBE = [[10.0, 0.0, 0.0], [0.0, 10.0, 0.0], [0.0, 0.0, 10.0]]


# -- box --------------------------------------------------------------------------------------


def test_a_box_with_only_vectors_reads_back_the_normative_defaults() -> None:
    box = Box.from_dict({"vectors": CUBE})
    assert box.vectors.tolist() == CUBE
    assert box.origin.tolist() == [0.0, 0.0, 0.0]
    assert box.boundary.tolist() == [True, True, True]
    assert box.cell_defined is True
    assert box.origin_is_default and box.boundary_is_default
    assert Box.from_dict({"vectors": CUBE, "origin": None, "boundary": None}) == box


def test_vectors_are_columns_and_kept_as_given() -> None:
    skew = [[10.0, 2.0, 0.0], [0.0, 10.0, 0.0], [0.0, 0.0, 10.0]]
    box = Box(skew)
    assert box.vectors[:, 1].tolist() == [2.0, 10.0, 0.0]  # second lattice vector is column 1
    assert Box.from_dict(box.to_dict()) == box


def test_a_slab_box_round_trips() -> None:
    data = {
        "boundary": [True, True, False],
        "cell_defined": True,
        "origin": [0.0, 0.0, 0.0],
        "vectors": CUBE,
    }
    box = Box.from_dict(data)
    assert box.boundary.tolist() == [True, True, False] and not box.boundary_is_default
    assert box.to_dict() == data


@pytest.mark.parametrize("vectors", [np.zeros((3, 3)), CUBE, None])
def test_an_undefined_cell_reads_identity_vectors_and_no_periodic_axis(vectors: Any) -> None:
    box = Box.from_dict({"vectors": vectors, "cell_defined": False, "origin": [1.0, 2.0, 3.0]})
    assert box.vectors.tolist() == np.eye(3).tolist()
    assert box.boundary.tolist() == [False, False, False]
    assert box.origin.tolist() == [1.0, 2.0, 3.0]
    assert box.cell_defined is False and box.boundary_is_default
    assert Box.from_dict(box.to_dict()) == box


@pytest.mark.parametrize("boundary", [[True, False, False], [False, False, True], [True] * 3])
def test_an_undefined_cell_with_a_true_flag_is_refused(boundary: list[bool]) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="periodic on no axis"):
        Box(np.zeros((3, 3)), boundary=boundary, cell_defined=False)


@pytest.mark.parametrize(
    ("data", "rule"),
    [
        ({"vectors": [[1, 0], [0, 1]]}, "shape \\[3, 3\\]"),
        ({"vectors": [1.0, 2.0, 3.0]}, "shape \\[3, 3\\]"),
        ({"vectors": [[1.0, 0.0, 0.0], [0.0, 1.0]]}, "shape|numeric"),
        ({"vectors": CUBE, "origin": [0.0, 0.0]}, "origin must have shape \\[3\\]"),
        ({"vectors": CUBE, "boundary": [True, "no", True]}, "3 booleans"),
        ({"vectors": CUBE, "boundary": [1, 1, 1]}, "3 booleans"),
        ({"vectors": CUBE, "boundary": [True, True]}, "3 booleans"),
        ({"vectors": CUBE, "boundary": "TTT"}, "3 booleans"),
        ({"vectors": CUBE, "cell_defined": "no"}, "cell_defined must be a boolean"),
        ({"vectors": CUBE, "cell_defined": 0}, "cell_defined must be a boolean"),
        ({"vectors": [[True] * 3] * 3}, "f64"),
        ({"vectors": [["a", 0, 0], [0, 1, 0], [0, 0, 1]]}, "f64"),
        ({"vectors": [[None, 0, 0], [0, 1, 0], [0, 0, 1]]}, "f64"),
        ({}, "needs vectors"),
        ({"vectors": CUBE, "pbc": [True] * 3}, "unknown box keys"),
        ([], "JSON object"),
    ],
)
def test_malformed_boxes_are_refused(data: Any, rule: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=rule):
        Box.from_dict(data)


def test_integer_vectors_convert_exactly_and_other_types_are_refused() -> None:
    assert Box(np.eye(3, dtype=np.int64) * 5).vectors.dtype == np.float64
    with pytest.raises(mrecd.InvalidRecord, match="f64"):
        Box(np.eye(3, dtype=np.float32))
    with pytest.raises(mrecd.InvalidRecord, match="exactly"):
        Box(np.eye(3, dtype=np.int64) * (2**53 + 1))
    with pytest.raises(mrecd.InvalidRecord, match="f64"):
        Box(np.eye(3, dtype=np.complex128))


def test_non_finite_box_values_use_typed_strings_in_json() -> None:
    box = Box(CUBE, origin=[np.nan, np.inf, 0.0])
    assert box.to_dict()["origin"] == ["NaN", "Infinity", 0.0]
    assert Box.from_dict(box.to_dict()) == box


def test_box_equality_is_bitwise_and_the_box_is_immutable() -> None:
    assert Box(CUBE) == Box(np.array(CUBE))
    assert Box(CUBE) != Box(CUBE, origin=[-0.0, 0.0, 0.0])
    assert Box(CUBE) != Box(CUBE, boundary=[True, True, False])
    with pytest.raises(ValueError, match="read-only"):
        Box(CUBE).vectors[0, 0] = 1.0


def test_a_box_copies_the_producer_array() -> None:
    vectors = np.array(CUBE)
    box = Box(vectors)
    vectors[0, 0] = 99.0
    assert box.vectors[0, 0] == 10.0


# -- frames -----------------------------------------------------------------------------------


def atoms(n: int = 3) -> dict[str, np.ndarray]:
    return {"x": np.arange(n, dtype=float), "y": np.zeros(n), "z": np.zeros(n)}


def test_the_plain_data_constructor_wraps_arrays() -> None:
    frame = mrecd.Frame(
        {"atoms": atoms()}, meta={"pe": -1.0}, box=mrecd.Box(vectors=np.eye(3) * 20)
    )
    assert frame["atoms"].count == 3 and frame["atoms"]["x"].dtype == "f64"
    assert frame.meta == {"pe": -1.0} and frame.meta_types == {"pe": "f64"}
    assert frame.box is not None and frame.box.vectors[0, 0] == 20.0
    assert list(frame) == ["atoms"] and len(frame) == 1


def test_a_block_named_box_is_refused() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="'box' names the cell"):
        Frame({"box": atoms()})
    with pytest.raises(mrecd.InvalidRecord, match="box"):
        Frame.from_dict({"blocks": {"box": {"count": 0, "columns": {}}}})


@pytest.mark.parametrize("name", ["meta", "atoms", "values", "step", "time", "_validity"])
def test_other_block_names_are_ordinary_on_a_frame(name: str) -> None:
    assert name in Frame({name: {"v": np.zeros(1)}})


@pytest.mark.parametrize("name", ["", "a/b"])
def test_malformed_block_names_are_refused(name: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="block name"):
        Frame({name: {"v": np.zeros(1)}})


def test_blocks_are_independent_and_may_be_empty() -> None:
    frame = Frame(
        {
            "atoms": atoms(3),
            "bonds": Block(count=0),
            "grid": Block({"rho": np.zeros(8)}, structural_shape=[2, 2, 2]),
        }
    )
    assert [b.count for b in frame.values()] == [3, 0, 8]


def test_the_logical_json_form_allows_no_other_key() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="unknown frame keys"):
        Frame.from_dict({"blocks": {}, "x_vendor": 1})


@pytest.mark.parametrize("data", [[], "frame", None, {"blocks": []}, {"blocks": {"a": 5}}])
def test_malformed_frame_json_is_refused(data: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        Frame.from_dict(data)


def test_a_frame_round_trips_through_its_json_form() -> None:
    frame = Frame(
        {
            "atoms": {**atoms(2), "element": ["O", "H"], "id": np.array([7, 9], dtype=np.uint64)},
            "bonds": Block(
                {"atomi": np.array([0], dtype=np.uint64), "atomj": np.array([1], dtype=np.uint64)},
                attributes={"x_vendor": "kept"},
            ),
            "pos": Block(
                {"x": Column(np.array([0.1, 0.2]), validity=[True, False], precision=1e-3)}
            ),
        },
        meta={"title": "water", "n": 2, "v": [1, 2]},
        meta_types={"n": "u32"},
        box=Box(CUBE, boundary=[True, True, False]),
    )
    assert Frame.from_dict(frame.to_dict()) == frame


def test_step_and_time_of_a_trajectory_update() -> None:
    frame = Frame({"atoms": atoms()}, step=2**63 - 1, time=float("nan"))
    data = frame.to_dict()
    assert data["step"] == "9223372036854775807" and data["time"] == "NaN"
    assert Frame.from_dict(data) == frame
    assert Frame(step=1) != Frame(step=2)
    assert Frame(step=1, time=0.0) != Frame(step=1, time=-0.0)
    assert Frame(step=1, time=0.5) != Frame(step=1)


@pytest.mark.parametrize(
    ("step", "time"), [(1.5, None), (True, None), ("1", None), (2**63, None), (1, "x"), (1, True)]
)
def test_step_is_i64_and_time_f64(step: Any, time: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        Frame(step=step, time=time)


def test_frame_equality_covers_blocks_box_and_meta() -> None:
    base = Frame({"atoms": atoms()}, meta={"pe": 1.0}, box=CUBE)
    assert base == Frame({"atoms": atoms()}, meta={"pe": 1.0}, box=Box(CUBE))
    assert base != Frame({"atoms": atoms()}, meta={"pe": 1.0})
    assert base != Frame({"atoms": atoms(4)}, meta={"pe": 1.0}, box=CUBE)
    assert base != Frame({"atoms": atoms()}, meta={"pe": 2.0}, box=CUBE)


def test_a_frame_written_with_an_all_true_mask_equals_one_without() -> None:
    masked = Frame({"a": {"v": Column(np.zeros(2), validity=[True, True])}})
    assert masked == Frame({"a": {"v": np.zeros(2)}})


# -- row references on a frame (frame.md §8) --------------------------------------------------


def refs(values: list[int], target: str, **more: Any) -> Block:
    return Block(
        {"partner": np.array(values, dtype=np.uint64)}, targets={"partner": target}, **more
    )


def test_a_same_container_target_that_does_not_exist_is_refused() -> None:
    frame = Frame({"bonds": refs([0], "sites")})
    with pytest.raises(mrecd.InvalidRecord, match="'sites' does not exist"):
        frame.check_targets()


def test_a_missing_target_is_fine_while_the_referencing_block_has_no_rows() -> None:
    Frame({"bonds": refs([], "sites")}).check_targets()


def test_a_value_equal_to_the_target_count_is_refused() -> None:
    frame = Frame({"sites": {"v": np.zeros(3)}, "bonds": refs([0, 3], "sites")})
    with pytest.raises(mrecd.InvalidRecord, match="3 is not below"):
        frame.check_targets()
    Frame({"sites": {"v": np.zeros(3)}, "bonds": refs([0, 2], "sites")}).check_targets()


def test_a_null_row_references_nothing() -> None:
    column = Column(np.array([0, 99], dtype=np.uint64), validity=[True, False])
    block = Block({"partner": column}, targets={"partner": "sites"})
    Frame({"sites": {"v": np.zeros(3)}, "bonds": block}).check_targets()


def test_absolute_targets_are_checked_when_the_section_is_present() -> None:
    frame = Frame({"members": refs([0, 4], "/system/atoms")})
    frame.check_targets()  # section absent: no check
    frame.check_targets({"frame": {}})
    system = {"atoms": Block({"x": np.zeros(4)})}
    with pytest.raises(mrecd.InvalidRecord, match="4 is not below"):
        frame.check_targets({"system": system})
    with pytest.raises(mrecd.InvalidRecord, match="does not exist"):
        frame.check_targets({"system": {"bonds": Block(count=2)}})
    check_frame_targets(frame.blocks, {"system": {"atoms": Block({"x": np.zeros(5)})}})


def test_an_undeclared_u64_column_is_a_plain_number() -> None:
    Frame({"bonds": {"handle": np.array([10**6], dtype=np.uint64)}}).check_targets()


def test_endpoint_defaults_are_not_range_checked_by_the_model() -> None:
    # README decision: only declared targets are checked; the default endpoints are a
    # validator's concern.
    Frame({"atoms": atoms(2), "bonds": {"atomi": [0], "atomj": [5]}}).check_targets()


def test_members_with_an_absolute_target_round_trip() -> None:
    block = Block.from_dict(
        {
            "count": 2,
            "columns": {
                "atom": {"dtype": "u64", "shape": [2], "values": [0, 1]},
                "ibead": {"dtype": "u64", "shape": [2], "values": [0, 0]},
            },
            "targets": {"atom": "/frame/atoms", "ibead": "atoms"},
        }
    )
    frame = Frame({"atoms": atoms(1), "members": block})
    frame.check_targets()
    assert Frame.from_dict(frame.to_dict()) == frame


@pytest.mark.parametrize(
    "build",
    [
        lambda: Frame([1]),  # type: ignore[arg-type]
        lambda: Frame(meta=[1]),  # type: ignore[arg-type]
        lambda: Frame(meta={"a": 1}, meta_types=[1]),  # type: ignore[arg-type]
        lambda: Frame().replace(nope=1),
        lambda: mrecd.encode_frame({"a": 1}),  # type: ignore[arg-type]
        lambda: mrecd.model.encode_meta("f32", 1.0),
        lambda: mrecd.model.decode_meta_document({1: 2}, {}),  # type: ignore[dict-item]
        lambda: mrecd.Declaration().conform({"a": 1}),  # type: ignore[arg-type]
        lambda: mrecd.model.SequenceState(mrecd.Declaration()).admit({"step": 1}),  # type: ignore[arg-type]
        lambda: mrecd.Record([1]),  # type: ignore[arg-type]
        lambda: mrecd.model.box_updates_to_dict([(0, "box")]),  # type: ignore[list-item]
    ],
)
def test_wrong_types_at_the_api_are_refused_with_invalid_record(build: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        build()
