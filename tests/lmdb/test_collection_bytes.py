"""Byte-level tests of the file: keys (lmdb.md §2), meta (§3), index (§4),
frames (§5) and the worked values of §6."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from collection_helpers import H2O2, UNITS, X0, atoms, frame, header, keys, meta_of, new

import mrecd
from mrecd.bindings.lmdb import frame_key, record_key, system_key
from mrecd.codecs import decode_blocks

WORKED_F1 = (
    '{"blocks":{"atoms":{"count":4,"structural_shape":null,"columns":{'
    '"x":{"dtype":"f64","shape":[4],"offset":0},'
    '"y":{"dtype":"f64","shape":[4],"offset":32},'
    '"z":{"dtype":"f64","shape":[4],"offset":64}}}},"meta":{"pe":-12.3},"step":1}'
)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (frame_key(1), "660000000000000001"),
        (record_key(0), "720000000000000000"),
        (system_key(258), "730000000000000102"),
        (frame_key(2**64 - 1), "66ffffffffffffffff"),
    ],
)
def test_key_bytes(key: bytes, expected: str) -> None:
    assert key.hex() == expected
    assert len(key) == 9


def test_key_order_is_numeric_order() -> None:
    ordinals = [0, 1, 255, 256, 258, 2**32, 2**63]
    assert sorted(frame_key(j) for j in ordinals) == [frame_key(j) for j in ordinals]


@pytest.mark.parametrize("ordinal", [-1, 2**64])
def test_key_outside_u64_is_refused(ordinal: int) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        frame_key(ordinal)


@pytest.fixture
def worked(tmp_path: Path) -> Path:
    """The two-H2O2 example of lmdb.md §5 with the smiles index of §6.3."""
    path = tmp_path / "h2o2.mrec.lmdb"
    with new(path, index_columns={"smiles": {"dtype": "string"}}) as col:
        col.append(
            {
                "trajectory": [
                    frame(0, -12.0, atoms=atoms(X0, 0.5)),
                    frame(1, -12.3, atoms=atoms(X0)),
                    frame(2, -12.2, atoms=atoms(X0)),  # repeats frame 1's coordinates
                ]
            },
            index={"smiles": "OO"},
        )
        col.append(
            {"trajectory": [frame(0, -11.0, atoms=atoms(X0)), frame(1, -11.5, atoms=atoms(X0, 1))]},
            index={"smiles": "OO"},
        )
    return path


def test_worked_example_keys(worked: Path) -> None:
    stored = keys(worked)
    assert sorted(stored) == sorted(
        [b"meta", b"index"] + [record_key(r) for r in range(2)] + [frame_key(j) for j in range(5)]
    )  # no system → no s keys; no force field → no ff key


def test_worked_example_f1_is_the_336_byte_value(worked: Path) -> None:
    value = keys(worked)[frame_key(1)]
    text, length = header(value)
    assert (length, text) == (228, WORKED_F1)
    assert len(value) == 336
    assert value[:4] == b"MRF1" and value[236:240] == bytes(4)
    assert np.frombuffer(value[240:272], "<f8").tolist() == X0.tolist()
    assert np.frombuffer(value[272:304], "<f8").tolist() == (X0 + 1).tolist()


def test_worked_example_f2_carries_no_blocks(worked: Path) -> None:
    value = keys(worked)[frame_key(2)]
    assert header(value) == ('{"blocks":{},"meta":{"pe":-12.2},"step":2}', 42)
    assert len(value) == 8 + 42 + 6  # pad 6, empty payload


def test_worked_example_next_record_restates(worked: Path) -> None:
    stored = keys(worked)
    blocks, head = decode_blocks(stored[frame_key(3)])
    assert head["step"] == 0 and list(blocks) == ["atoms"]
    blocks0, head0 = decode_blocks(stored[frame_key(0)])
    assert head0["step"] == 0 and list(blocks0) == ["atoms"]


def test_worked_example_index_and_meta(worked: Path) -> None:
    value = keys(worked)[b"index"]
    text, length = header(value)
    assert length == 353
    assert len(value) == 8 + 353 + 7 + 56
    entry = json.loads(text)["blocks"]["records"]["columns"]
    assert [(n, c.get("offset")) for n, c in entry.items()] == [
        ("first_frame", 0),
        ("n_frames", 16),
        ("n_atoms", 32),
        ("has_trajectory", 48),
        ("smiles", None),
    ]
    blocks, _ = decode_blocks(value)
    records = blocks["records"]
    assert records["first_frame"].values.tolist() == [0, 3]
    assert records["n_frames"].values.tolist() == [3, 2]
    assert records["n_atoms"].values.tolist() == [4, 4]
    assert records["has_trajectory"].values.tolist() == [True, True]
    assert json.loads(text)["meta"] == {}
    meta = meta_of(worked)
    assert list(meta) == [
        "layout",
        "layout_version",
        "collection",
        "sequence_schema",
        "n_records",
        "n_frames",
    ]
    assert meta["layout"] == "mrec-lmdb" and meta["layout_version"] == 1
    assert meta["collection"] == {**UNITS, "molrec_version": 2}
    assert meta["sequence_schema"] == H2O2
    assert (meta["n_records"], meta["n_frames"]) == (2, 5)


def test_worked_example_reads_back_resolved(worked: Path) -> None:
    with mrecd.open_collection(worked) as col:
        trajectory = col[0].trajectory
        assert [f.step for f in trajectory] == [0, 1, 2]
        assert trajectory[2]["atoms"] == trajectory[1]["atoms"]  # carried forward
        assert trajectory[2].meta == {"pe": -12.2}
        assert col[1].trajectory[0]["atoms"]["x"].values.tolist() == X0.tolist()
        assert col.index["smiles"].values.tolist() == ["OO", "OO"]


def test_system_value_carries_meta_types(tmp_path: Path) -> None:
    path = tmp_path / "s.mrec.lmdb"
    system = mrecd.Frame(
        {"atoms": {"element": ["O", "O", "H", "H"]}}, meta={"smiles": "OO", "total_charge": 0}
    )
    with new(path) as col:
        col.append({"system": system})
    value = keys(path)[system_key(0)]
    head = json.loads(header(value)[0])
    assert head["meta_types"] == {"smiles": "string", "total_charge": "i64"}
    assert head["meta"] == {"smiles": "OO", "total_charge": 0}
    assert "step" not in head


def test_masked_column_offsets(tmp_path: Path) -> None:
    """lmdb.md §6.3: a masked f64 column of 2 rows at @128 has validity @144, next @152."""
    path = tmp_path / "m.mrec.lmdb"
    columns = {
        "a": {"dtype": "f64", "trailing": [3]},  # @56, 48 bytes
        "b": {"dtype": "u64"},  # @104
        "c": {"dtype": "bool"},  # @120, 2 bytes padded to 8
        "e": {"dtype": "f64", "nullable": True},  # @128, validity @144
        "g": {"dtype": "i32"},  # @152
    }
    with new(path, index_columns=columns) as col:
        row = {"a": [1.0, 2.0, 3.0], "b": 7, "c": True, "g": -1}
        col.extend(
            [{"system": mrecd.Frame({})}, {"system": mrecd.Frame({})}],
            index=[{**row, "e": 1.5}, {**row, "e": None}],
        )
        assert col.index["e"].validity.tolist() == [True, False]
    entry = json.loads(header(keys(path)[b"index"])[0])["blocks"]["records"]["columns"]
    assert (entry["e"]["offset"], entry["e"]["validity"], entry["g"]["offset"]) == (128, 144, 152)
