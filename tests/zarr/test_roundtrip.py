"""Frame-shaped sections written and read: dtypes, masks, precision, meta, box, extents, codecs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr_helpers import DTYPE_VALUES, every_dtype_frame, water_frame, zarr_json

import mrecd
from mrecd.forcefield import ForceField


def roundtrip(tmp_path: Path, frame: mrecd.Frame, section: str = "frame") -> mrecd.Frame:
    path = tmp_path / "r.mrec"
    mrecd.create_record(path, **{section: frame}).close()
    with mrecd.open_record(path) as record:
        back = getattr(record, section)
    assert back is not None
    return back


@pytest.mark.parametrize("section", ["frame", "system"])
def test_water_round_trips(tmp_path: Path, section: str) -> None:
    frame = water_frame(7)
    assert roundtrip(tmp_path, frame, section) == frame


@pytest.mark.parametrize("dtype", sorted(DTYPE_VALUES))
def test_every_dtype_round_trips_bit_for_bit(tmp_path: Path, dtype: str) -> None:
    back = roundtrip(tmp_path, every_dtype_frame())
    column = back["table"][f"c_{dtype}"]
    assert column.dtype == dtype
    expected = DTYPE_VALUES[dtype]
    if dtype == "string":
        assert column.values.tolist() == expected.tolist()
    else:
        assert column.values.dtype == expected.dtype.newbyteorder("<")
        assert column.values.tobytes() == expected.tobytes()


def test_every_dtype_maps_to_its_zarr_data_type(tmp_path: Path) -> None:
    path = tmp_path / "r.mrec"
    mrecd.create_record(path, frame=every_dtype_frame()).close()
    for dtype, zarr_type in mrecd.model.ZARR_DATA_TYPE.items():
        assert zarr_json(path / "frame" / "table" / f"c_{dtype}")["data_type"] == zarr_type


def test_trailing_axes_round_trip(tmp_path: Path) -> None:
    back = roundtrip(tmp_path, every_dtype_frame())
    assert back["table"]["vec"].shape == (3, 3)
    assert back["table"]["grid"].values.tolist() == np.arange(24).reshape(3, 2, 4).tolist()


def test_masks_are_stored_only_when_some_row_is_null(tmp_path: Path) -> None:
    frame = mrecd.Frame(
        {
            "atoms": {
                "q": mrecd.Column([1.0, 2.0, 3.0], validity=[True, False, True]),
                "all_valid": mrecd.Column([1.0, 2.0, 3.0], validity=[True, True, True]),
            }
        }
    )
    path = tmp_path / "m.mrec"
    mrecd.create_record(path, frame=frame).close()
    validity = path / "frame" / "atoms" / "_validity"
    assert zarr_json(validity / "q")["data_type"] == "bool"
    assert not (validity / "all_valid").exists()
    with mrecd.open_record(path) as record:
        assert record.frame is not None
        assert record.frame["atoms"]["q"].validity.tolist() == [True, False, True]
        assert record.frame["atoms"]["all_valid"].validity is None
        assert record.frame == frame


def test_block_without_masks_writes_no_validity_group(tmp_path: Path) -> None:
    path = tmp_path / "m.mrec"
    mrecd.create_record(path, frame=mrecd.Frame({"atoms": {"x": [1.0]}})).close()
    assert not (path / "frame" / "atoms" / "_validity").exists()


def test_precision_is_an_attribute_and_values_are_rounded(tmp_path: Path) -> None:
    raw = np.array([0.1234, -0.00001, 2.7181, 1e300])
    frame = mrecd.Frame({"atoms": {"x": mrecd.Column(raw, precision=1e-3)}})
    path = tmp_path / "p.mrec"
    mrecd.create_record(path, frame=frame).close()
    meta = zarr_json(path / "frame" / "atoms" / "x")
    assert meta["attributes"] == {"precision": 1e-3}
    with mrecd.open_record(path) as record:
        assert record.frame is not None
        x = record.frame["atoms"]["x"]
    assert x.precision == 1e-3
    assert x.values.tobytes() == mrecd.quantize(raw, 1e-3).tobytes()
    assert math.copysign(1.0, x.values[1]) == -1.0  # a small negative value rounds to -0.0
    assert x.values[3] == 1e300  # beyond 2^52 q: unchanged


def test_column_without_precision_has_no_precision_attribute(tmp_path: Path) -> None:
    path = tmp_path / "p.mrec"
    mrecd.create_record(path, frame=mrecd.Frame({"atoms": {"mass": [1.0, 2.0]}})).close()
    assert zarr_json(path / "frame" / "atoms" / "mass")["attributes"] == {}


ALL_TAGS: dict[str, tuple[str, Any]] = {
    "b": ("bool", True),
    "i32": ("i32", -(2**31)),
    "i64": ("i64", -(2**63)),
    "u32": ("u32", 2**32 - 1),
    "u64": ("u64", 2**64 - 1),
    "f64": ("f64", 2.0),
    "nan": ("f64", math.nan),
    "inf": ("f64", -math.inf),
    "s": ("string", "NaN"),
    "j": ("json", {"a": [1, None, "x"]}),
    "b3": ("bool3", (True, False, True)),
    "i32x3": ("i32x3", (1, -2, 3)),
    "i64x3": ("i64x3", (2**62, 0, -1)),
    "u32x3": ("u32x3", (0, 1, 2**32 - 1)),
    "u64x3": ("u64x3", (2**64 - 1, 0, 2**53 + 1)),
    "f64x3": ("f64x3", (0.0, 0.5, 1.0)),
    "f64x6": ("f64x6", (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)),
    "f64x9": ("f64x9", tuple(float(i) for i in range(9))),
}


def test_every_meta_tag_round_trips_with_its_tag(tmp_path: Path) -> None:
    meta = {k: v for k, (_, v) in ALL_TAGS.items()}
    tags = {k: t for k, (t, _) in ALL_TAGS.items()}
    frame = mrecd.Frame({}, meta=meta, meta_types=tags)
    back = roundtrip(tmp_path, frame)
    assert back.meta_types == tags
    assert back == frame
    assert isinstance(back.meta["f64"], float)  # a whole-valued f64 does not come back an int


def test_typed_json_forms_on_disk(tmp_path: Path) -> None:
    frame = mrecd.Frame(
        {},
        meta={"e": math.nan, "big": 2**64 - 1, "inf": math.inf},
        meta_types={"e": "f64", "big": "u64", "inf": "f64"},
    )
    path = tmp_path / "t.mrec"
    mrecd.create_record(path, frame=frame).close()
    attrs = zarr_json(path / "frame")["attributes"]
    assert attrs["e"] == "NaN"
    assert attrs["inf"] == "Infinity"
    assert attrs["big"] == "18446744073709551615"
    assert "NaN" not in (path / "frame" / "zarr.json").read_text().replace('"NaN"', "")


def test_storage_md_meta_example(tmp_path: Path) -> None:
    frame = mrecd.Frame(
        {},
        meta={"smiles": "O", "total_charge": 0, "units": {"length": "angstrom", "mass": "dalton"}},
    )
    path = tmp_path / "t.mrec"
    mrecd.create_record(path, frame=frame).close()
    assert zarr_json(path / "frame")["attributes"] == {
        "smiles": "O",
        "total_charge": 0,
        "units": {"length": "angstrom", "mass": "dalton"},
        "_meta_types": {"smiles": "string", "total_charge": "i64", "units": "json"},
    }


def test_empty_meta_writes_no_meta_types(tmp_path: Path) -> None:
    path = tmp_path / "t.mrec"
    mrecd.create_record(path, frame=mrecd.Frame({"atoms": {"x": [0.0]}})).close()
    assert zarr_json(path / "frame")["attributes"] == {}


@pytest.mark.parametrize(
    "box",
    [
        mrecd.Box(np.eye(3) * 10),
        mrecd.Box(np.diag([1.0, 2.0, 3.0]), origin=[1.0, -2.0, 0.5], boundary=[True, False, True]),
        mrecd.Box(cell_defined=False, origin=[1.0, 1.0, 1.0]),
    ],
    ids=["cubic", "slab-with-origin", "undefined"],
)
def test_box_round_trips(tmp_path: Path, box: mrecd.Box) -> None:
    frame = mrecd.Frame({}, box=box)
    assert roundtrip(tmp_path, frame).box == box


def test_box_layout_defaults_omitted_and_undefined_cell_explicit(tmp_path: Path) -> None:
    path = tmp_path / "b.mrec"
    mrecd.create_record(path, frame=mrecd.Frame({}, box=mrecd.Box(np.eye(3)))).close()
    box = path / "frame" / "box"
    assert sorted(p.name for p in box.iterdir()) == ["vectors", "zarr.json"]
    assert zarr_json(box / "vectors")["shape"] == [3, 3]
    assert zarr_json(box)["attributes"] == {}
    undefined = tmp_path / "u.mrec"
    mrecd.create_record(undefined, frame=mrecd.Frame({}, box=mrecd.Box(cell_defined=False))).close()
    assert zarr_json(undefined / "frame" / "box")["attributes"] == {"cell_defined": False}
    with mrecd.open_record(undefined) as record:
        assert record.frame is not None and record.frame.box is not None
        assert record.frame.box.boundary.tolist() == [False, False, False]


def test_structural_shape_and_targets_round_trip(tmp_path: Path) -> None:
    frame = mrecd.Frame(
        {
            "atoms": {"x": np.zeros(4)},
            "grid": mrecd.Block({"rho": np.arange(24.0)}, structural_shape=(2, 3, 4)),
            "members": mrecd.Block(
                {
                    "atom": np.array([0, 3], dtype=np.uint64),
                    "ibead": np.array([0, 1], dtype=np.uint64),
                },
                targets={"atom": "/frame/atoms", "ibead": "atoms"},
                attributes={"x_note": "producer attribute", "x_null": None},
            ),
            "empty": mrecd.Block({}, count=5),
        }
    )
    back = roundtrip(tmp_path, frame)
    assert back == frame
    assert back["grid"].structural_shape == (2, 3, 4)
    assert back["members"].targets == {"atom": "/frame/atoms", "ibead": "atoms"}
    assert back["members"].attributes == {"x_note": "producer attribute", "x_null": None}
    assert back["empty"].count == 5 and len(back["empty"]) == 0


def test_zero_row_columns_have_chunk_extent_one(tmp_path: Path) -> None:
    frame = mrecd.Frame(
        {"atoms": {"x": np.zeros(0), "v": np.zeros((0, 3)), "e": np.array([], dtype=str)}}
    )
    path = tmp_path / "z.mrec"
    back = roundtrip(tmp_path, frame)
    assert back == frame
    mrecd.create_record(path, frame=frame).close()
    for name, chunk in (("x", [1]), ("v", [1, 3]), ("e", [1])):
        meta = zarr_json(path / "frame" / "atoms" / name)
        assert meta["chunk_grid"]["configuration"]["chunk_shape"] == chunk


@pytest.mark.parametrize(
    ("shape", "chunk", "shard"),
    [
        ((3,), [3], None),
        ((100000, 3), [21845, 3], [109225, 3]),  # chunking.md §4.2: 5 chunks -> one shard
        ((262144,), [65536], None),  # exactly 4 chunks: plain
        ((262145,), [65536], [327680]),
        ((1000, 0), [1000, 1], None),  # zero-byte rows: one chunk, extents >= 1
    ],
)
def test_fixed_size_extents(
    tmp_path: Path, shape: tuple[int, ...], chunk: list[int], shard: Any
) -> None:
    path = tmp_path / "e.mrec"
    mrecd.create_record(path, frame=mrecd.Frame({"b": {"v": np.zeros(shape)}})).close()
    meta = zarr_json(path / "frame" / "b" / "v")
    codecs = meta["codecs"]
    if shard is None:
        assert meta["chunk_grid"]["configuration"]["chunk_shape"] == chunk
        assert codecs[0]["name"] == "bytes"
    else:
        assert meta["chunk_grid"]["configuration"]["chunk_shape"] == shard
        assert codecs[0]["name"] == "sharding_indexed"
        assert codecs[0]["configuration"]["chunk_shape"] == chunk
        assert codecs[0]["configuration"]["index_location"] == "end"


def test_sharded_column_round_trips(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    values = rng.random((100000, 3))
    frame = mrecd.Frame({"b": {"v": values, "p": mrecd.Column(values[:, 0], precision=1e-6)}})
    assert roundtrip(tmp_path, frame) == frame


def _codec_names(meta: dict[str, Any]) -> list[str]:
    codecs = meta["codecs"]
    if codecs[0]["name"] == "sharding_indexed":
        codecs = codecs[0]["configuration"]["codecs"]
    return [c["name"] for c in codecs]


@pytest.mark.parametrize(
    ("column", "names"),
    [
        ("x", ["bytes", "numcodecs.shuffle", "zstd", "crc32c"]),
        ("mass", ["bytes", "crc32c"]),
        ("element", ["vlen-utf8", "gzip", "crc32c"]),
        ("b_factor", ["bytes", "crc32c"]),
        ("_validity/b_factor", ["bytes", "gzip", "crc32c"]),
    ],
)
def test_reference_codecs(tmp_path: Path, column: str, names: list[str]) -> None:
    path = tmp_path / "c.mrec"
    mrecd.create_record(path, frame=water_frame(4)).close()
    assert _codec_names(zarr_json(path / "frame" / "atoms" / column)) == names


def test_integer_columns_use_gzip_and_box_is_dense(tmp_path: Path) -> None:
    path = tmp_path / "c.mrec"
    mrecd.create_record(path, frame=water_frame(4)).close()
    assert _codec_names(zarr_json(path / "frame" / "bonds" / "atomi")) == [
        "bytes",
        "gzip",
        "crc32c",
    ]
    assert _codec_names(zarr_json(path / "frame" / "box" / "vectors")) == [
        "bytes",
        "gzip",
        "crc32c",
    ]


def test_all_fill_chunks_are_absent_and_read_as_zeros(tmp_path: Path) -> None:
    path = tmp_path / "z.mrec"
    mrecd.create_record(
        path, frame=mrecd.Frame({"atoms": {"x": np.zeros(10), "y": np.ones(10)}})
    ).close()
    assert not (path / "frame" / "atoms" / "x" / "c").exists()
    assert (path / "frame" / "atoms" / "y" / "c" / "0").is_file()
    with mrecd.open_record(path) as record:
        assert record.frame is not None
        assert record.frame["atoms"]["x"].values.tolist() == [0.0] * 10


def test_forcefield_section_is_frame_shaped_without_meta_types(tmp_path: Path) -> None:
    ff = ForceField(
        {
            "name": "demo",
            "units": {"preset": "real"},
            "styles": [{"category": "pair", "style": "lj/cut"}],
        },
        {
            "pair.lj%2Fcut": mrecd.Block(
                {
                    "name": np.array(["A"]),
                    "itom": np.array(["A"]),
                    "jtom": np.array(["A"]),
                    "epsilon": [0.1],
                    "sigma": mrecd.Column([3.0], validity=[False]),
                }
            )
        },
    )
    path = tmp_path / "ff.mrec"
    mrecd.create_record(path, forcefield=ff).close()
    attrs = zarr_json(path / "forcefield")["attributes"]
    assert attrs == ff.document
    assert "_meta_types" not in attrs
    assert (path / "forcefield" / "pair.lj%2Fcut" / "epsilon" / "zarr.json").is_file()
    with mrecd.open_record(path) as record:
        assert record.forcefield == ff
