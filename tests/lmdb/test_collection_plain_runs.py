"""A first read (``walk``) checks runs of plain updates in one loop
(``plain_headers``) and plans a record's first update from a blocks text
checked in an earlier record (``plan_known``): both take only what the
update-by-update path takes, and stop (or miss) on anything else, which then
goes the long way and is refused there as before."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from collection_helpers import X0, atoms, frame, new, rewrite_frame_value, system
from test_collection_update_plans import EXPECTED, PAYLOAD, xyz

import mrecd
from mrecd.bindings.lmdb import frame_key, system_key
from mrecd.bindings.lmdb._plans import plain_headers, plan_keyed, plan_known


def _value(head: dict[str, Any], payload: bytes = PAYLOAD, tail: str = "") -> bytes:
    text = json.dumps(head, separators=(",", ":")) + tail
    prefix = b"MRF1" + struct.pack("<I", len(text)) + text.encode()
    return prefix + bytes(-len(prefix) % 8) + payload


def _plain(step: int, pe: Any = -1.5, **extra: Any) -> bytes:
    return _value({"blocks": xyz(), "meta": {"pe": pe}, "step": step, **extra})


def _hint() -> Any:
    planned = plan_keyed(_plain(0), EXPECTED, {})
    assert planned is not None and planned[2] is not None
    return planned[2]


def test_a_run_is_read_up_to_the_first_update_that_is_not_plain() -> None:
    bufs = [_plain(0), _plain(3, -2.0), _plain(4), _plain(9), _plain(9), _plain(10)]
    steps, metas, starts = plain_headers(bufs, 1, _hint(), 0, ("pe",))
    assert steps == [3, 4, 9]  # the second step 9 is not above the one before
    assert metas == [{"pe": -2.0}, {"pe": -1.5}, {"pe": -1.5}]
    assert all(start % 8 == 0 and start + len(PAYLOAD) == len(_plain(3)) for start in starts)


@pytest.mark.parametrize(
    "buf",
    [
        _plain(1, time=0.5),  # a header key beyond meta and step
        _value({"blocks": xyz(), "meta": {"q": 2.0}, "step": 1}),  # another meta key
        _value({"blocks": xyz(), "meta": {"pe": 1.0, "q": 2.0}, "step": 1}),  # more meta keys
        _value({"blocks": xyz(), "meta": [1.0], "step": 1}),  # meta not an object
        _value({"blocks": xyz(), "meta": {"pe": 1.0}, "step": True}),  # not an integer
        _value({"blocks": xyz(), "meta": {"pe": 1.0}, "step": 2**63}),  # beyond i64
        _value({"blocks": xyz(n=1), "meta": {"pe": 1.0}, "step": 1}),  # another blocks text
        _plain(1)[:-8],  # a payload shorter than the text's buffers
        _value({"blocks": xyz(), "meta": {"pe": 1.0}, "step": 1}, tail=" "),  # trailing space
        b"MRFX" + _plain(1)[4:],  # not the magic
    ],
)
def test_anything_else_ends_the_run(buf: bytes) -> None:
    assert plain_headers([_plain(0), buf], 1, _hint(), 0, ("pe",)) == ([], [], [])


def test_a_known_blocks_text_plans_as_the_whole_parse_does() -> None:
    hint = _hint()
    buf = _plain(7, -3.25)
    known = plan_known(buf, {hint.prefix: hint})
    whole = plan_keyed(buf, EXPECTED, {})
    assert known is not None and whole is not None
    assert known[1] == whole[1] and known[2] == whole[2]
    assert known[0] == {k: v for k, v in whole[0].items() if k != "blocks"}


@pytest.mark.parametrize(
    "buf",
    [
        _value({"blocks": xyz(n=1), "meta": {"pe": 1.0}, "step": 1}),  # text not known
        _value({"blocks": xyz(), "step": 1, "meta": {"pe": 1.0}}),  # meta not first
        _value({"blocks": xyz(), "meta": {"pe": 1.0}, "step": 1}, PAYLOAD[:8]),  # short payload
        b"MRF1",
    ],
)
def test_an_unknown_text_or_form_is_left_to_the_whole_parse(buf: bytes) -> None:
    hint = _hint()
    assert plan_known(buf, {hint.prefix: hint}) is None


def _record(n_atoms: list[int]) -> list[mrecd.Frame]:
    """Frames whose atom count changes where ``n_atoms`` does (a new blocks text)."""
    return [frame(k, -1.0 - k, atoms=atoms(np.resize(X0, n), k)) for k, n in enumerate(n_atoms)]


def test_frames_across_broken_runs_equal_frames_read_one_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "runs.mrec.lmdb"
    shapes = [[4, 4, 4, 2, 2, 4, 4], [2, 2, 2], [4]]
    with new(path) as col:
        for n_atoms in shapes:
            col.append({"trajectory": _record(n_atoms)})
    with mrecd.open_collection(path) as col:
        records = col.read_many([0, 1, 2, 0])
        for r, record in zip([0, 1, 2, 0], records, strict=True):
            single = [col[r].trajectory[i] for i in range(len(shapes[r]))]
            assert list(record.trajectory) == single
            assert [f.step for f in record.trajectory] == list(range(len(shapes[r])))
            assert [f.meta["pe"] for f in record.trajectory] == [
                -1.0 - k for k in range(len(shapes[r]))
            ]
        assert [f["atoms"].count for f in records[0].trajectory] == shapes[0]


@pytest.mark.parametrize("at", [2, 4, 6])
def test_a_step_going_back_inside_a_run_is_refused(tmp_path: Path, at: int) -> None:
    path = tmp_path / "runs.mrec.lmdb"
    with new(path) as col:
        col.append({"system": system(), "trajectory": _record([4] * 8)})
        col.append({"system": system(), "trajectory": _record([4] * 3)})  # its text known

    def back(blocks: dict[str, Any], head: dict[str, Any]) -> tuple[Any, Any]:
        return blocks, head | {"step": 0}

    rewrite_frame_value(path, frame_key(at), back)
    with mrecd.open_collection(path) as col:
        assert len(col.read_many([1])[0].trajectory) == 3
        with pytest.raises(mrecd.InvalidRecord, match="not above the previous step"):
            col.read_many([0])


def test_a_non_finite_or_integer_meta_inside_a_run_is_decoded_as_declared(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.mrec.lmdb"
    with new(path) as col:
        col.append({"trajectory": _record([4] * 4)})

    def integer(blocks: dict[str, Any], head: dict[str, Any]) -> tuple[Any, Any]:
        return blocks, head | {"meta": {"pe": -3}}

    rewrite_frame_value(path, frame_key(2), integer)
    with mrecd.open_collection(path) as col:
        (record,) = col.read_many([0])
        pe = [f.meta["pe"] for f in record.trajectory]
    assert pe == [-1.0, -2.0, -3.0, -4.0] and type(pe[2]) is float


def _timed(n: int) -> list[mrecd.Frame]:
    return [
        mrecd.Frame({"atoms": atoms(X0, k)}, meta={"pe": -1.0 - k}, step=k, time=0.5 * k)
        for k in range(n)
    ]


def test_a_first_update_of_a_known_text_is_read_as_the_long_way_reads_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.mrec.lmdb"
    with new(path) as col:
        col.append({"system": system(), "trajectory": _record([4] * 3)})
        col.append({"system": system(), "trajectory": _record([4] * 5)})
        col.append({"system": system(), "trajectory": _timed(3)})  # not plain: times
    with mrecd.open_collection(path) as col:
        records = col.read_many([0, 1, 2])  # records 1 and 2 start from a known text
        for r, record in enumerate(records):
            assert list(record.trajectory) == [
                col[r].trajectory[i] for i in range(len(record.trajectory))
            ]
        assert [f.time for f in records[2].trajectory] == [0.0, 0.5, 1.0]
        assert [f.step for f in records[1].trajectory] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("known", [True, False])
def test_a_first_update_of_a_known_text_is_held_to_the_system_rows(
    tmp_path: Path, known: bool
) -> None:
    path = tmp_path / "runs.mrec.lmdb"
    with new(path) as col:
        col.append({"system": system(), "trajectory": _record([4] * 3)})
        col.append({"system": system(), "trajectory": _record([4] * 3)})

    def three_atoms(blocks: dict[str, Any], head: dict[str, Any]) -> tuple[Any, Any]:
        return {"atoms": mrecd.Block({"element": np.array(["O", "O", "H"])})}, head

    rewrite_frame_value(path, system_key(1), three_atoms)
    with mrecd.open_collection(path) as col:
        if known:
            col.read_many([0])  # record 1's blocks text is now known
        with pytest.raises(mrecd.InvalidRecord, match="same-named blocks align"):
            col.read_many([1])
