"""Reader refusals: a store that breaks a rule raises InvalidRecord naming the array path and rule.

Each case starts from a valid record and edits it with plain zarr-python or
plain JSON, never with mrecd's writer.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from zarr_helpers import put_array, set_attributes, update_attributes, zarr_json

import mrecd

Edit = Callable[[Path], None]

# zarr warns that raw_bytes has no V3 spec: that is the point of the raw-bytes case
pytestmark = pytest.mark.filterwarnings("ignore:The data type")


def _frame(path: Path) -> None:
    with mrecd.open_record(path) as record:
        _ = record.frame


def _system(path: Path) -> None:
    with mrecd.open_record(path) as record:
        _ = record.system


def _open(path: Path) -> None:
    mrecd.open_record(path).close()


def atoms(path: Path) -> Path:
    return path / "frame" / "atoms"


def write_raw_array_json(directory: Path, data_type: object, shape: list[int]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shape}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}],
        "attributes": {},
    }
    (directory / "zarr.json").write_text(json.dumps(doc))


# (id, edit, reader action, expected path, words of the rule in the message)
CASES: list[tuple[str, Edit, Callable[[Path], None], str, str]] = [
    (
        "float32-column",
        lambda p: put_array(atoms(p), "mass", np.ones(3, dtype=np.float32)),
        _frame,
        "frame/atoms/mass",
        "never widened",
    ),
    (
        "float16-column",
        lambda p: put_array(atoms(p), "q16", np.ones(3, dtype=np.float16)),
        _frame,
        "frame/atoms/q16",
        "frame.md §2",
    ),
    (
        "fixed-length-utf32",
        lambda p: put_array(atoms(p), "element", np.array(["O", "H", "H"])),
        _frame,
        "frame/atoms/element",
        "fixed-length strings",
    ),
    (
        "bytes-type",
        lambda p: write_raw_array_json(atoms(p) / "raw", "bytes", [3]),
        _frame,
        "frame/atoms/raw",
        "storage.md §6",
    ),
    (
        "r16-type",
        lambda p: write_raw_array_json(atoms(p) / "raw", "r16", [3]),
        _frame,
        "frame/atoms/raw",
        "storage.md §6",
    ),
    (
        "raw-bytes-type",
        lambda p: put_array(atoms(p), "raw", np.zeros(3, dtype="V2")),
        _frame,
        "frame/atoms/raw",
        "not a column dtype",
    ),
    (
        "count-mismatch",
        lambda p: put_array(atoms(p), "mass", np.ones(4)),
        _frame,
        "frame/atoms/mass",
        "disagrees with the block count",
    ),
    (
        "missing-count",
        lambda p: update_attributes(atoms(p), count=...),
        _frame,
        "frame/atoms",
        "count",
    ),
    (
        "negative-count",
        lambda p: update_attributes(atoms(p), count=-1),
        _frame,
        "frame/atoms",
        "count",
    ),
    (
        "bool-count",
        lambda p: update_attributes(atoms(p), count=True),
        _frame,
        "frame/atoms",
        "count",
    ),
    (
        "zero-d-column",
        lambda p: write_raw_array_json(atoms(p) / "scalar", "float64", []),
        _frame,
        "frame/atoms/scalar",
        "0-d",
    ),
    (
        "structural-shape-product",
        lambda p: update_attributes(atoms(p), structural_shape=[2, 2]),
        _frame,
        "frame/atoms",
        "frame.md §4",
    ),
    (
        "mask-not-bool",
        lambda p: put_array(atoms(p) / "_validity", "b_factor", np.ones(3, dtype=np.uint8)),
        _frame,
        "frame/atoms/_validity/b_factor",
        "bool",
    ),
    (
        "mask-wrong-length",
        lambda p: put_array(atoms(p) / "_validity", "b_factor", np.ones(2, dtype=bool)),
        _frame,
        "frame/atoms/_validity/b_factor",
        "one flag per row",
    ),
    (
        "mask-with-trailing-axis",
        lambda p: put_array(atoms(p) / "_validity", "b_factor", np.ones((3, 1), dtype=bool)),
        _frame,
        "frame/atoms/_validity/b_factor",
        "one flag per row",
    ),
    (
        "mask-names-no-column",
        lambda p: put_array(atoms(p) / "_validity", "nope", np.ones(3, dtype=bool)),
        _frame,
        "frame/atoms/_validity/nope",
        "names no column",
    ),
    (
        "validity-is-an-array",
        lambda p: (
            shutil.rmtree(atoms(p) / "_validity"),
            put_array(atoms(p), "_validity", np.ones(3, dtype=bool)),
        ),
        _frame,
        "frame/atoms/_validity",
        "reserved",
    ),
    (
        "canonical-id-u32",
        lambda p: put_array(atoms(p), "id", np.arange(3, dtype=np.uint32)),
        _frame,
        "frame/atoms/id",
        "conventions.md §2",
    ),
    (
        "canonical-atomi-i64",
        lambda p: put_array(p / "frame" / "bonds", "atomi", np.arange(2, dtype=np.int64)),
        _frame,
        "frame/bonds/atomi",
        "u64",
    ),
    (
        "canonical-x-with-trailing-axis",
        lambda p: put_array(atoms(p), "x", np.zeros((3, 1))),
        _frame,
        "frame/atoms/x",
        "conventions.md §2",
    ),
    (
        "precision-on-i64",
        lambda p: put_array(atoms(p), "n", np.arange(3), attributes={"precision": 0.001}),
        _frame,
        "frame/atoms/n",
        "frame.md §7.2",
    ),
    (
        "precision-zero",
        lambda p: update_attributes(atoms(p) / "x", precision=0),
        _frame,
        "frame/atoms/x",
        "frame.md §7.2",
    ),
    (
        "target-out-of-range",
        lambda p: (
            put_array(p / "frame" / "bonds", "partner", np.array([0, 3], dtype=np.uint64)),
            update_attributes(p / "frame" / "bonds", targets={"partner": "atoms"}),
        ),
        _frame,
        "frame/bonds/partner",
        "not below",
    ),
    (
        "target-block-missing",
        lambda p: (
            put_array(p / "frame" / "bonds", "partner", np.array([0, 0], dtype=np.uint64)),
            update_attributes(p / "frame" / "bonds", targets={"partner": "sites"}),
        ),
        _frame,
        "frame/bonds/partner",
        "does not exist",
    ),
    (
        "target-absolute-out-of-range",
        lambda p: (
            put_array(p / "frame" / "bonds", "sys", np.array([0, 3], dtype=np.uint64)),
            update_attributes(p / "frame" / "bonds", targets={"sys": "/system/atoms"}),
        ),
        _frame,
        "frame/bonds/sys",
        "not below",
    ),
    (
        "target-into-trajectory",
        lambda p: (
            put_array(p / "frame" / "bonds", "t", np.array([0, 0], dtype=np.uint64)),
            update_attributes(p / "frame" / "bonds", targets={"t": "/trajectory/atoms"}),
        ),
        _frame,
        "frame/bonds.targets.t",
        "trajectory",
    ),
    (
        "target-names-no-column",
        lambda p: update_attributes(p / "frame" / "bonds", targets={"ghost": "atoms"}),
        _frame,
        "frame/bonds.targets.ghost",
        "not a column",
    ),
    (
        "target-on-i64-column",
        lambda p: (
            put_array(p / "frame" / "bonds", "k", np.array([0, 0], dtype=np.int64)),
            update_attributes(p / "frame" / "bonds", targets={"k": "atoms"}),
        ),
        _frame,
        "frame/bonds.targets.k",
        "u64[N]",
    ),
    (
        "box-vectors-two-by-two",
        lambda p: put_array(p / "frame" / "box", "vectors", np.eye(2)),
        _frame,
        "frame/box",
        "three-dimensional",
    ),
    (
        "box-vectors-float32",
        lambda p: put_array(p / "frame" / "box", "vectors", np.eye(3, dtype=np.float32)),
        _frame,
        "frame/box/vectors",
        "frame.md §2",
    ),
    (
        "box-boundary-not-bool",
        lambda p: put_array(p / "frame" / "box", "boundary", np.ones(3, dtype=np.int8)),
        _frame,
        "frame/box/boundary",
        "bool[3]",
    ),
    (
        "box-boundary-four-flags",
        lambda p: put_array(p / "frame" / "box", "boundary", np.ones(4, dtype=bool)),
        _frame,
        "frame/box",
        "3 booleans",
    ),
    (
        "box-without-vectors",
        lambda p: shutil.rmtree(p / "frame" / "box" / "vectors"),
        _frame,
        "frame/box",
        "vectors",
    ),
    (
        "box-cell-defined-string",
        lambda p: update_attributes(p / "frame" / "box", cell_defined="no"),
        _frame,
        "frame/box",
        "boolean",
    ),
    (
        "undefined-cell-true-boundary",
        lambda p: (
            update_attributes(p / "frame" / "box", cell_defined=False),
            put_array(p / "frame" / "box", "boundary", np.array([True, False, False])),
        ),
        _frame,
        "frame/box",
        "frame.md §9.1",
    ),
    (
        "meta-types-not-object",
        lambda p: update_attributes(p / "frame", _meta_types=["smiles"]),
        _frame,
        "frame",
        "_meta_types",
    ),
    (
        "meta-types-bad-tag",
        lambda p: update_attributes(p / "frame", _meta_types={"smiles": "f32"}),
        _frame,
        "frame._meta_types.smiles",
        "tag",
    ),
    (
        "meta-value-not-in-tag-form",
        lambda p: update_attributes(p / "frame", e="abc", _meta_types={"e": "f64"}),
        _frame,
        "frame.meta.e",
        "",
    ),
    (
        "meta-null-under-f64",
        lambda p: update_attributes(p / "frame", e=None, _meta_types={"e": "f64"}),
        _frame,
        "frame.meta.e",
        "",
    ),
    (
        "meta-real-under-i64",
        lambda p: update_attributes(p / "frame", e=1.5, _meta_types={"e": "i64"}),
        _frame,
        "frame.meta.e",
        "",
    ),
    (
        "meta-i32-out-of-range",
        lambda p: update_attributes(p / "frame", e=2**31, _meta_types={"e": "i32"}),
        _frame,
        "frame.meta.e",
        "",
    ),
    (
        "bare-nan-attribute",
        lambda p: set_attributes(p / "frame", '{"e": NaN}'),
        _frame,
        "frame",
        "NaN",
    ),
    (
        "section-is-an-array",
        lambda p: (shutil.rmtree(p / "system"), write_raw_array_json(p / "system", "float64", [1])),
        _system,
        "system",
        "group",
    ),
    (
        "chunk-corrupted",
        lambda p: (atoms(p) / "mass" / "c" / "0").write_bytes(b"garbage"),
        _frame,
        "frame/atoms/mass",
        "cannot be decoded",
    ),
    (
        "newer-version",
        lambda p: update_attributes(p / "meta", molrec_version=3),
        _open,
        "meta.molrec_version",
        "outside",
    ),
    (
        "null-version",
        lambda p: update_attributes(p / "meta", molrec_version=None),
        _open,
        "meta.molrec_version",
        "integer",
    ),
    (
        "string-version",
        lambda p: update_attributes(p / "meta", molrec_version="2"),
        _open,
        "meta.molrec_version",
        "integer",
    ),
    (
        "float-version",
        lambda p: update_attributes(p / "meta", molrec_version=2.0),
        _open,
        "meta.molrec_version",
        "integer",
    ),
    (
        "bool-version",
        lambda p: update_attributes(p / "meta", molrec_version=True),
        _open,
        "meta.molrec_version",
        "integer",
    ),
    (
        "zero-version",
        lambda p: update_attributes(p / "meta", molrec_version=0),
        _open,
        "meta.molrec_version",
        "outside",
    ),
    (
        "status-without-state",
        lambda p: set_attributes(p / "status", {"stage": "train"}),
        _open,
        "status.state",
        "state",
    ),
    (
        "method-without-engine-name",
        lambda p: plain_method(p, {"type": "ml", "description": "fit"}),
        _open,
        "method.engine.name",
        "engine.name",
    ),
    (
        "no-substantive-section",
        lambda p: [shutil.rmtree(p / s) for s in ("frame", "system", "status")],
        _open,
        "/",
        "record.md §2",
    ),
    (
        "method-alone",
        lambda p: (
            [shutil.rmtree(p / s) for s in ("frame", "system", "status")],
            plain_method(p, {"type": "ml", "description": "fit", "engine": {"name": "x"}}),
        ),
        _open,
        "/",
        "record.md §2",
    ),
    (
        "root-zarr-format-2",
        lambda p: (p / "zarr.json").write_text('{"zarr_format": 2, "node_type": "group"}'),
        _open,
        "water.mrec",
        "Zarr V3",
    ),
    (
        "no-root-zarr-json",
        lambda p: (p / "zarr.json").unlink(),
        _open,
        "water.mrec",
        "no zarr.json",
    ),
]


def plain_method(path: Path, document: dict[str, object]) -> None:
    import zarr

    zarr.open_group(path / "method", mode="w", attributes=document)


def _system_three_atoms(path: Path) -> None:
    # the water fixture's system has 3 atoms; targets into it are checked
    assert zarr_json(path / "system" / "atoms")["attributes"]["count"] == 3


@pytest.mark.parametrize(
    ("edit", "action", "where", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_reader_refuses(
    water: Path, edit: Edit, action: Callable[[Path], None], where: str, words: str
) -> None:
    _system_three_atoms(water)
    edit(water)
    with pytest.raises(mrecd.InvalidRecord) as info:
        action(water)
    assert info.value.path is not None
    assert info.value.path.endswith(where) if where.endswith(".mrec") else info.value.path == where
    assert words in str(info.value)


def test_newer_version_is_unsupported_version(water: Path) -> None:
    update_attributes(water / "meta", molrec_version=3)
    with pytest.raises(mrecd.UnsupportedVersion):
        mrecd.open_record(water)


def test_stale_meta_type_is_ignored(water: Path) -> None:
    update_attributes(water / "frame", _meta_types={"smiles": "string", "gone": "f64"})
    with mrecd.open_record(water) as record:
        assert record.frame is not None
        assert record.frame.meta_types == {
            "smiles": "string",
            "total_charge": "i64",
            "units": "json",
        }


def test_untagged_meta_is_inferred(water: Path) -> None:
    set_attributes(
        water / "frame",
        '{"a": 1, "b": 2.5, "c": "NaN", "d": [1, 2], "e": null, "f": 18446744073709551615,'
        ' "g": -1, "h": 9223372036854775808, "i": true}',
    )
    with mrecd.open_record(water) as record:
        assert record.frame is not None
        tags = record.frame.meta_types
    assert tags == {
        "a": "i64",
        "b": "f64",
        "c": "string",
        "d": "json",
        "e": "json",
        "f": "u64",
        "g": "i64",
        "h": "u64",
        "i": "bool",
    }


def test_tagged_nan_string_is_nan(water: Path) -> None:
    update_attributes(water / "frame", e="NaN", _meta_types={"e": "f64"})
    with mrecd.open_record(water) as record:
        assert record.frame is not None
        assert np.isnan(record.frame.meta["e"])


def test_undefined_cell_ignores_vectors(water: Path) -> None:
    update_attributes(water / "frame" / "box", cell_defined=False)
    put_array(water / "frame" / "box", "vectors", np.zeros((3, 3)))
    with mrecd.open_record(water) as record:
        assert record.frame is not None and record.frame.box is not None
        assert record.frame.box.vectors.tolist() == np.eye(3).tolist()
        assert record.frame.box.boundary.tolist() == [False, False, False]


def test_integer_box_vectors_convert_exactly(water: Path) -> None:
    put_array(water / "frame" / "box", "vectors", np.eye(3, dtype=np.int32) * 7)
    with mrecd.open_record(water) as record:
        assert record.frame is not None and record.frame.box is not None
        assert record.frame.box.vectors.tolist() == (np.eye(3) * 7).tolist()


def test_root_without_meta_reads_as_empty_document(water: Path) -> None:
    shutil.rmtree(water / "meta")
    with mrecd.open_record(water) as record:
        assert record.meta == {}
        assert record.molrec_version is None


def test_unknown_meta_keys_are_kept_with_null(water: Path) -> None:
    update_attributes(water / "meta", x_vendor=None, audit={"by": ["a"]})
    with mrecd.open_record(water) as record:
        assert record.meta == {
            "record_id": "w",
            "molrec_version": 2,
            "x_vendor": None,
            "audit": {"by": ["a"]},
        }


def test_untargeted_u64_is_a_plain_number(water: Path) -> None:
    put_array(atoms(water), "handle", np.array([7, 8, 2**64 - 1], dtype=np.uint64))
    with mrecd.open_record(water) as record:
        assert record.frame is not None
        assert record.frame["atoms"]["handle"].values[2] == 2**64 - 1


def test_default_endpoints_are_not_refused_by_readers(water: Path) -> None:
    put_array(water / "frame" / "bonds", "atomj", np.array([1, 99], dtype=np.uint64))
    with mrecd.open_record(water) as record:
        assert record.frame is not None  # the validator reports it (README: Row references)


def test_off_grid_values_are_returned_as_stored(water: Path) -> None:
    put_array(atoms(water), "x", np.array([0.1, 0.2, 0.3]), attributes={"precision": 1e-3})
    with mrecd.open_record(water) as record:
        assert record.frame is not None
        assert record.frame["atoms"]["x"].values.tolist() == [0.1, 0.2, 0.3]
