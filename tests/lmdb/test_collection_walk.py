"""``read_many``'s one pass over a record (``walk``): an update repeating the
previous update's ``blocks`` text skips that text's parse and check
(``plan_like``), and its frames are built when first asked for, yet every
reader rule still refuses inside ``read_many``."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from collection_helpers import X0, atoms, frame, header, new, raw, rewrite_frame_value, system
from test_collection_update_plans import EXPECTED, PAYLOAD, value, xyz

import mrecd
from mrecd.bindings.lmdb import frame_key
from mrecd.bindings.lmdb._plans import plan_keyed, plan_like
from mrecd.codecs import decode_blocks, encode_blocks


def _hint(blocks: dict[str, Any]) -> Any:
    planned = plan_keyed(value(blocks, PAYLOAD), EXPECTED, {})
    assert planned is not None and planned[2] is not None
    return planned[2]


def test_the_same_blocks_text_is_read_without_its_blocks() -> None:
    got = plan_like(value(xyz(), PAYLOAD, step=7), _hint(xyz()))
    assert got is not None
    header, start = got
    assert header == {"meta": {}, "step": 7}
    assert start % 8 == 0 and start + len(PAYLOAD) == len(value(xyz(), PAYLOAD))


@pytest.mark.parametrize(
    "buf",
    [
        value(xyz(n=1), PAYLOAD),  # another blocks text
        value(xyz(), PAYLOAD[:40]),  # a payload shorter than the text's buffers
        value(xyz(), PAYLOAD, blocks2=1),  # a key outside the header's
    ],
)
def test_anything_else_goes_back_to_the_whole_plan(buf: bytes) -> None:
    assert plan_like(buf, _hint(xyz())) is None


def test_a_second_blocks_key_or_trailing_space_is_not_taken_for_the_same_text() -> None:
    text = '{"blocks":' + json.dumps(xyz(), separators=(",", ":"))
    for tail in (',"step":0,"blocks":{}}', ',"step":0} '):
        head = b"MRF1" + struct.pack("<I", len(text + tail)) + (text + tail).encode()
        assert plan_like(head + bytes(-len(head) % 8) + PAYLOAD, _hint(xyz())) is None


def _three(path: Path, **kwargs: Any) -> None:
    with new(path, **kwargs) as col:
        frames = [frame(k, -1.0 - k, atoms=atoms(X0, k)) for k in range(3)]
        col.append({"system": system(), "trajectory": frames})


def test_held_frames_equal_frames_read_one_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "w.mrec.lmdb"
    _three(path)
    with mrecd.open_collection(path) as col:
        (record,) = col.read_many([0])
        single = [col[0].trajectory[i] for i in range(3)]
    assert list(record.trajectory) == single
    assert record.trajectory[2]["atoms"]["x"].values.tolist() == (X0 + 2).tolist()
    assert record.trajectory[1] is record.trajectory[1]  # built once, then kept
    assert [f.meta["pe"] for f in record.trajectory] == [-1.0, -2.0, -3.0]


def _edit_header(change: Callable[[dict[str, Any]], None]) -> Any:
    def edit(blocks: dict[str, Any], head: dict[str, Any]) -> tuple[Any, Any]:
        change(head)
        return blocks, head

    return edit


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda h: h.update(step=1), "not above the previous step"),
        (lambda h: h.update(meta={}), "every declared per-step key"),
        (lambda h: h.update(meta={"pe": True}), "not a real"),
        (lambda h: h.update(time=1.0), "all-or-nothing"),
        (lambda h: h.update(meta_types={"pe": "i64"}), "disagree with the declared"),
    ],
)
def test_rules_still_refuse_on_a_repeated_blocks_text(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    path = tmp_path / "w.mrec.lmdb"
    _three(path)
    rewrite_frame_value(path, frame_key(2), _edit_header(change))
    with mrecd.open_collection(path) as col, pytest.raises(mrecd.InvalidRecord, match=message):
        col.read_many([0])


def test_a_row_count_change_is_checked_against_the_system(tmp_path: Path) -> None:
    path = tmp_path / "w.mrec.lmdb"
    _three(path)

    def shorter(blocks: dict[str, Any], head: dict[str, Any]) -> tuple[Any, Any]:
        return {"atoms": mrecd.Block({c: np.zeros(3) for c in "xyz"})}, head

    rewrite_frame_value(path, frame_key(2), shorter)
    rule = "same-named blocks align"
    with mrecd.open_collection(path) as col, pytest.raises(mrecd.InvalidRecord, match=rule):
        col.read_many([0])


def test_the_tampered_update_repeats_the_blocks_text(tmp_path: Path) -> None:
    """The refusals above are met on the repeated-text path, not the whole plan."""
    path = tmp_path / "w.mrec.lmdb"
    _three(path)
    rewrite_frame_value(path, frame_key(2), _edit_header(lambda h: h.update(step=1)))
    with raw(path) as txn:
        one, two = (bytes(txn.get(frame_key(k))) for k in (1, 2))
    text = header(one)[0]
    prefix = text[: text.index(',"meta"')]
    assert prefix.startswith('{"blocks":') and header(two)[0].startswith(prefix + ",")


def test_a_second_read_many_reads_the_values_without_checking_them_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records never change once committed: a record walked and checked whole in
    this process is read again against the plans it passed (``rewalk``)."""
    path = tmp_path / "w.mrec.lmdb"
    _three(path)
    with mrecd.open_collection(path) as col:
        (first,) = col.read_many([0])
        expected = list(first.trajectory)

        def no_walk(*args: Any) -> Any:
            raise AssertionError("walked again")

        monkeypatch.setattr("mrecd.bindings.lmdb._store.walk", no_walk)
        (again,) = col.read_many([0])
        assert list(again.trajectory) == expected
        assert again.trajectory[2]["atoms"]["x"].values.tolist() == (X0 + 2).tolist()
        assert [f.step for f in again.trajectory] == [f.step for f in expected]


def test_a_value_of_another_size_is_checked_again_on_the_second_read(tmp_path: Path) -> None:
    path = tmp_path / "w.mrec.lmdb"
    _three(path)
    with mrecd.open_collection(path) as col:
        col.read_many([0])
        # rewritten under the open handle (a second environment is refused in-process)
        with col._binding._live().env.begin(write=True) as txn:
            blocks, head = decode_blocks(bytes(txn.get(frame_key(2))), copy=True)
            head = {k: v for k, v in head.items() if k != "blocks"} | {"meta": {}}
            txn.put(frame_key(2), encode_blocks(dict(blocks), head))
        with pytest.raises(mrecd.InvalidRecord, match="every declared per-step key"):
            col.read_many([0])


def test_a_frame_read_again_is_built_from_its_value_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checked frame of one planned update is read again from its key and
    size (``quick_frame``), without the recipe's replay."""
    path = tmp_path / "w.mrec.lmdb"
    _three(path)
    with mrecd.open_collection(path) as col:
        trajectory = col[0].trajectory
        first = [trajectory[i] for i in range(3)]

        def no_replay(*args: Any) -> Any:
            raise AssertionError("replayed")

        monkeypatch.setattr("mrecd.api._collection.replay", no_replay)
        again = [col[0].trajectory[i] for i in range(3)]
    assert again == first
    assert again[1]["atoms"]["x"].values.tolist() == (X0 + 1).tolist()
    assert [f.meta["pe"] for f in again] == [-1.0, -2.0, -3.0]
