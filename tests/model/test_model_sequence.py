"""SequenceState: the writer-side trajectory rules that need no storage.

trajectory.md §1.1, §1.2, §1.5, §4, §6, §7.2; record.md §6.1.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.model import Block, Box, Column, Declaration, Frame, SequenceState

CUBE = np.eye(3) * 12.0


def col(dtype: str = "f64", **more: Any) -> dict[str, Any]:
    return {"dtype": dtype, "trailing": [], **more}


DECL = Declaration.from_dict(
    {
        "blocks": {
            "atoms": {"columns": {"x": col(precision=0.001), "id": col("u64")}},
            "atom_types": {"columns": {"type": col("string")}, "aligned_with": "atoms"},
            "bonds": {
                "columns": {"atomi": col("u64"), "partner": col("u64")},
                "targets": {"partner": "atoms"},
            },
            "insertions": {"columns": {"atomi": col("u64")}},
        },
        "meta": {"pe": {"dtype": "f64", "fill": "NaN"}},
    }
)


def atoms(n: int, x: Any = None, ids: Any = None) -> Block:
    return Block(
        {
            "x": np.arange(n, dtype=float) if x is None else np.asarray(x, dtype=float),
            "id": np.arange(n, dtype=np.uint64)
            if ids is None
            else np.asarray(ids, dtype=np.uint64),
        }
    )


def types(n: int, name: str = "C") -> Block:
    return Block({"type": [name] * n})


def frame(step: int, time: float | None = None, **blocks: Block | None) -> Frame:
    box = blocks.pop("box", None)
    return Frame({k: v for k, v in blocks.items() if v is not None}, step=step, time=time, box=box)


def state(**kwargs: Any) -> SequenceState:
    return SequenceState(DECL, **kwargs)


# -- steps and time ---------------------------------------------------------------------------


@pytest.mark.parametrize("steps", [(0, 10, 10), (0, 10, 5)])
def test_steps_must_strictly_increase(steps: tuple[int, int, int]) -> None:
    s = state()
    s.admit(frame(steps[0], atoms=atoms(2)))
    s.admit(frame(steps[1]))
    with pytest.raises(mrecd.StepOrderError, match="strictly increasing"):
        s.admit(frame(steps[2]))
    assert s.nstep == 2 and s.last_step == 10  # nothing changed


def test_steps_may_start_anywhere_and_skip() -> None:
    s = state()
    for step in (-5, 7, 1000):
        s.admit(frame(step))
    assert (s.nstep, s.last_step) == (3, 1000)


def test_a_frame_without_a_step_is_refused() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="step"):
        state().admit(Frame())


def test_time_is_all_or_nothing() -> None:
    with_time = state()
    with_time.admit(frame(0, time=0.0))
    with pytest.raises(mrecd.InvalidRecord, match="all-or-nothing"):
        with_time.admit(frame(1))
    without = state()
    without.admit(frame(0))
    with pytest.raises(mrecd.InvalidRecord, match="all-or-nothing"):
        without.admit(frame(1, time=0.5))
    without.admit(frame(1))


# -- carry-forward ----------------------------------------------------------------------------


def test_a_repeated_block_is_no_update_and_an_omitted_one_carries_forward() -> None:
    s = state()
    first = s.admit(frame(0, atoms=atoms(2)))
    assert set(first.blocks) == {"atoms"}
    assert s.admit(frame(1, atoms=atoms(2))).blocks == {}
    assert s.admit(frame(2)).blocks == {}
    assert s.current["atoms"].count == 2


def test_a_repeated_nan_is_no_change_and_negative_zero_after_zero_is_one() -> None:
    s = state()
    s.admit(frame(0, atoms=atoms(2, x=[math.nan, 0.0])))
    assert s.admit(frame(1, atoms=atoms(2, x=[math.nan, 0.0]))).blocks == {}
    update = s.admit(frame(2, atoms=atoms(2, x=[math.nan, -0.0])))
    assert set(update.blocks) == {"atoms"}


def test_a_change_below_half_a_quantum_is_no_update() -> None:
    s = state()
    s.admit(frame(0, atoms=atoms(2, x=[1.0, 2.0])))
    assert s.admit(frame(1, atoms=atoms(2, x=[1.0001, 2.0001]))).blocks == {}
    assert set(s.admit(frame(2, atoms=atoms(2, x=[1.01, 2.0]))).blocks) == {"atoms"}


def test_a_zero_row_block_is_an_update_that_empties_it() -> None:
    s = state()
    s.admit(frame(0, atoms=atoms(5)))
    assert s.admit(frame(3, insertions=Block({"atomi": np.array([4], dtype=np.uint64)}))).blocks
    update = s.admit(frame(4, insertions=Block({"atomi": np.zeros(0, dtype=np.uint64)})))
    assert update.blocks["insertions"].count == 0
    assert s.current["insertions"].count == 0


def test_meta_is_materialized_with_fills_in_every_update() -> None:
    update = state().admit(frame(0))
    assert math.isnan(update.meta["pe"])


def test_a_refused_frame_changes_nothing() -> None:
    s = state()
    s.admit(frame(0, atoms=atoms(3), atom_types=types(3), box=Box(CUBE)))
    before = (s.nstep, s.last_step, s.has_time, dict(s.current), s.box)
    with pytest.raises(mrecd.InvalidRecord):
        s.admit(frame(1, atoms=atoms(4), box=Box(CUBE * 2)))  # atom_types not restated
    assert (s.nstep, s.last_step, s.has_time, s.current, s.box) == before


def test_copy_keeps_a_batch_all_or_nothing() -> None:
    s = state()
    s.admit(frame(0, atoms=atoms(2)))
    batch = s.copy()
    batch.admit(frame(1, atoms=atoms(2, x=[5.0, 6.0])))
    assert s.nstep == 1 and s.current["atoms"]["x"].values.tolist() == [0.0, 1.0]
    assert batch.nstep == 2


# -- aligned blocks (trajectory.md §7.2) ------------------------------------------------------


def test_an_aligned_block_resolves_at_every_frame_while_it_carries_forward() -> None:
    s = state()
    s.admit(frame(0, atoms=atoms(3), atom_types=types(3)))
    for step in (1, 2):
        assert set(s.admit(frame(step, atoms=atoms(3, x=[step] * 3))).blocks) == {"atoms"}
    assert set(s.admit(frame(3, atoms=atoms(3), atom_types=types(3, "O"))).blocks) == {
        "atoms",
        "atom_types",
    }
    assert s.current["atom_types"]["type"].values.tolist() == ["O"] * 3


def test_growing_the_target_without_restating_the_aligned_block_is_refused() -> None:
    s = state()
    s.admit(frame(0, atoms=atoms(3), atom_types=types(3)))
    s.admit(frame(1, atoms=atoms(3)))
    with pytest.raises(mrecd.InvalidRecord, match="restate it"):
        s.admit(frame(2, atoms=atoms(4)))
    s.admit(frame(2, atoms=atoms(4), atom_types=types(4)))
    assert s.current["atom_types"].count == 4


def test_an_aligned_block_before_its_target_is_refused() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="target 'atoms' is absent"):
        state().admit(frame(0, atom_types=types(3)))


def test_a_target_without_its_aligned_block_is_fine() -> None:
    s = state()
    s.admit(frame(0, atoms=atoms(3)))
    s.admit(frame(1, atoms=atoms(4)))


def test_an_emptied_target_with_an_emptied_aligned_block_is_fine() -> None:
    s = state()
    s.admit(frame(0, atoms=atoms(3), atom_types=types(3)))
    s.admit(frame(1, atoms=atoms(3)))
    s.admit(frame(2, atoms=atoms(0), atom_types=types(0)))
    assert s.current["atoms"].count == 0 == s.current["atom_types"].count


def test_restating_the_aligned_block_with_another_count_is_refused() -> None:
    s = state()
    s.admit(frame(0, atoms=atoms(3), atom_types=types(3)))
    with pytest.raises(mrecd.InvalidRecord, match="aligned block 'atom_types' has 2 rows"):
        s.admit(frame(1, atom_types=types(2)))


# -- system alignment (trajectory.md §1.5, record.md §6.1) ------------------------------------


def test_a_trajectory_update_must_hold_the_system_row_count() -> None:
    s = state(system={"atoms": Block({"id": np.arange(3, dtype=np.uint64)})})
    with pytest.raises(mrecd.InvalidRecord, match="holds 4 rows but system/atoms has 3"):
        s.admit(frame(0, atoms=atoms(4)))
    s.admit(frame(0, atoms=atoms(3)))


def test_matching_counts_but_different_ids_are_refused() -> None:
    s = state(system={"atoms": Block({"id": np.array([0, 1, 2], dtype=np.uint64)})})
    with pytest.raises(mrecd.InvalidRecord, match="id differs"):
        s.admit(frame(0, atoms=atoms(3, ids=[0, 1, 3])))


def test_an_aligned_block_may_not_share_a_name_with_a_system_block() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="shares its name with a system block"):
        state(system={"atom_types": types(3)})
    state(system={"atoms": atoms(3)})  # its target may


def test_a_structural_shape_must_match_the_system_count() -> None:
    declaration = Declaration.from_dict(
        {"blocks": {"grid": {"columns": {"v": col()}, "structural_shape": [2, 2]}}}
    )
    with pytest.raises(mrecd.InvalidRecord, match="4 rows per update"):
        SequenceState(declaration, system={"grid": Block({"v": np.zeros(3)})})


# -- row references on resolved frames --------------------------------------------------------


def bonds(partner: list[int]) -> Block:
    return Block(
        {
            "atomi": np.zeros(len(partner), dtype=np.uint64),
            "partner": np.array(partner, dtype=np.uint64),
        },
        targets={"partner": "atoms"},
    )


def test_references_are_checked_on_the_resolved_frame() -> None:
    s = state()
    with pytest.raises(mrecd.InvalidRecord, match="does not exist"):
        s.admit(frame(0, bonds=bonds([0])))
    s.admit(frame(0, atoms=atoms(3), bonds=bonds([2])))
    with pytest.raises(mrecd.InvalidRecord, match="2 is not below 'atoms''s 2 rows"):
        s.admit(frame(1, atoms=atoms(2)))  # the target shrinks under a carried reference
    s.admit(frame(1, atoms=atoms(2), bonds=bonds([1])))


# -- the cell ---------------------------------------------------------------------------------


def test_a_cell_update_is_stored_only_where_it_changes() -> None:
    s = state()
    assert s.admit(frame(0, box=Box(CUBE))).box == Box(CUBE)
    assert s.admit(frame(1, box=Box(CUBE))).box is None
    assert s.admit(frame(2)).box is None
    assert s.admit(frame(3, box=Box(CUBE * 1.0208333))).box is not None


def test_cell_defined_is_one_flag_for_the_run() -> None:
    s = state()
    s.admit(frame(0, box=Box(CUBE)))
    with pytest.raises(mrecd.InvalidRecord, match="cell_defined"):
        s.admit(frame(1, box=Box(cell_defined=False)))


def test_restore_sets_the_state_of_a_reopened_store() -> None:
    s = state()
    s.restore(nstep=4, last_step=30, has_time=False, current={"atoms": atoms(2)}, box=None)
    with pytest.raises(mrecd.StepOrderError):
        s.admit(frame(30))
    assert s.admit(frame(31, atoms=atoms(2))).blocks == {}
    assert s.admit(frame(32)).ordinal == 5


def test_update_holds_the_conformed_frame() -> None:
    update = state().admit(frame(0, atoms=Block({"x": Column(np.array([0.1])), "id": [0]})))
    assert update.frame["atoms"]["x"].values.tolist() == [round(0.1 * 1024) / 1024]
