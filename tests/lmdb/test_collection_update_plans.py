"""The update-plan fast path (``_plans``) accepts a subset of what the general
decoder accepts: whatever it is unsure of goes to the general path, and a
header text checked once is not trusted with a payload it has not checked."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from collection_helpers import X0, atoms, frame, new, raw

import mrecd
from mrecd.bindings.lmdb import frame_key
from mrecd.bindings.lmdb._plans import expectations, materialize, plan

COLUMNS = {
    "atoms": {c: ("f64", (), False) for c in "xyz"},
    "flags": {"on": ("bool", (), False), "q": ("f64", (2,), True)},
}
EXPECTED = expectations(COLUMNS)


def value(blocks: dict[str, Any], payload: bytes, **header: Any) -> bytes:
    text = json.dumps({"blocks": blocks, "meta": {}, "step": 0, **header}, separators=(",", ":"))
    head = b"MRF1" + struct.pack("<I", len(text)) + text.encode()
    return head + bytes(-len(head) % 8) + payload


def xyz(n: int = 2, **changes: Any) -> dict[str, Any]:
    cols = {c: {"dtype": "f64", "shape": [n], "offset": 8 * n * k} for k, c in enumerate("xyz")}
    for name, entry in changes.items():
        cols[name] = entry
    return {"atoms": {"count": n, "structural_shape": None, "columns": cols}}


PAYLOAD = np.arange(6, dtype="<f8").tobytes()


def test_a_well_formed_update_is_planned_and_read() -> None:
    templates: dict[str, Any] = {}
    planned = plan(value(xyz(), PAYLOAD), EXPECTED, templates)
    assert planned is not None and len(templates) == 1
    header, known = planned
    assert header["step"] == 0 and list(header["blocks"]) == ["atoms"]
    blocks = materialize(known, value(xyz(), PAYLOAD), ["atoms"])
    assert blocks["atoms"]["z"].values.tolist() == [4.0, 5.0]
    assert not blocks["atoms"]["x"].values.flags.writeable


@pytest.mark.parametrize(
    "blocks",
    [
        xyz(x={"dtype": "f64", "shape": [2], "offset": 0.0}),
        xyz(x={"dtype": "f64", "shape": [2.0], "offset": 0}),
        xyz(x={"dtype": "f64", "shape": [2], "offset": 4}),
        xyz(x={"dtype": "f64", "shape": [2], "offset": 48}),
        xyz(x={"dtype": "f32", "shape": [2], "offset": 0}),
        xyz(x={"dtype": "f64", "shape": [2], "offset": 0, "validity": 40}),
        xyz(x={"dtype": "f64", "shape": [2], "offset": 0, "precision": 0.1}),
        {"bonds": {"count": 0, "columns": {}}},
        {"atoms": {"count": True, "columns": xyz()["atoms"]["columns"]}},
        {"atoms": {**xyz()["atoms"], "targets": {}}},
        {"atoms": {**xyz()["atoms"], "structural_shape": [2]}},
    ],
)
def test_anything_unusual_takes_the_general_path(blocks: dict[str, Any]) -> None:
    assert plan(value(blocks, PAYLOAD), EXPECTED, {}) is None


def test_a_checked_header_text_is_not_trusted_with_a_shorter_payload() -> None:
    templates: dict[str, Any] = {}
    assert plan(value(xyz(), PAYLOAD), EXPECTED, templates) is not None
    assert plan(value(xyz(), PAYLOAD[:40]), EXPECTED, templates) is None


def test_bool_and_mask_bytes_are_checked_per_value() -> None:
    cols = {
        "on": {"dtype": "bool", "shape": [2], "offset": 0},
        "q": {"dtype": "f64", "shape": [2, 2], "offset": 8, "validity": 40},
    }
    blocks = {"flags": {"count": 2, "columns": cols}}
    good = b"\x01\x00" + bytes(6) + np.zeros(4).tobytes() + b"\x01\x01" + bytes(6)
    templates: dict[str, Any] = {}
    assert plan(value(blocks, good), EXPECTED, templates) is not None
    bad_bool = b"\x02" + good[1:]
    bad_mask = good[:40] + b"\x07" + good[41:]
    assert plan(value(blocks, bad_bool), EXPECTED, templates) is None
    assert plan(value(blocks, bad_mask), EXPECTED, templates) is None
    assert len(templates) == 1


def test_a_repeated_blocks_key_is_not_templated() -> None:
    text = '{"blocks":{},"meta":{},"step":0,"blocks":' + json.dumps(xyz()) + "}"
    head = b"MRF1" + struct.pack("<I", len(text)) + text.encode()
    buf = head + bytes(-len(head) % 8) + PAYLOAD
    templates: dict[str, Any] = {}
    planned = plan(buf, EXPECTED, templates)
    assert planned is not None and list(planned[0]["blocks"]) == ["atoms"]  # the last one
    assert templates == {}


def test_reads_after_tampering_refuse_with_the_rules_message(tmp_path: Path) -> None:
    """A value first read through a plan, then replaced by bad bytes: a reader in a
    new process state refuses it with the general decoder's message."""
    path = tmp_path / "t.mrec.lmdb"
    with new(path) as col:
        col.append(
            {"trajectory": [frame(0, 1.0, atoms=atoms(X0)), frame(1, 2.0, atoms=atoms(X0, 1))]}
        )
        assert col[0].trajectory[1]["atoms"]["x"].values.tolist() == (X0 + 1).tolist()
    with raw(path, write=True) as txn:
        good = bytes(txn.get(frame_key(1)))
        length = struct.unpack_from("<I", good, 4)[0]
        head = json.loads(good[8 : 8 + length])
        head["blocks"]["atoms"]["columns"]["y"]["offset"] = 4
        text = json.dumps(head, separators=(",", ":")).encode()
        prefix = b"MRF1" + struct.pack("<I", len(text)) + text
        txn.put(
            frame_key(1),
            prefix + bytes(-len(prefix) % 8) + good[8 + length + (-(8 + length) % 8) :],
        )
    with mrecd.open_collection(path) as col:
        with pytest.raises(mrecd.FrameBytesError, match="offset 4 is not a multiple of 8"):
            col[0].trajectory[1]
        with pytest.raises(mrecd.FrameBytesError, match="not a multiple of 8"):
            col.read_many([0])
