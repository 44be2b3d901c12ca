"""Interoperability: plain zarr-python and the zarrs (Rust) codec pipeline read what mrecd writes,
bit for bit; a store laid out by plain zarr-python calls reads back through mrecd.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.codecs import BytesCodec, GzipCodec, ZstdCodec
from zarr_helpers import all_arrays, every_dtype_frame, water_frame

import mrecd
from mrecd.forcefield import ForceField


@contextmanager
def zarrs_pipeline() -> Iterator[None]:
    """Decode with the zarrs Rust pipeline; strict, so an unsupported array errors instead of
    silently falling back to zarr-python."""
    with zarr.config.set(
        {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}
    ):
        yield


def rich_record(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A record with every dtype, masks, precision, a sharded column, a box and a force field.

    Returns the path and ``{array path: expected numpy values}`` built from the model.
    """
    rng = np.random.default_rng(5)
    big = rng.random((100000, 3))
    frame = mrecd.Frame(
        {
            **every_dtype_frame().blocks,
            "atoms": water_frame(5)["atoms"],
            "big": {"v": big, "p": mrecd.Column(big[:, 1], precision=1e-4)},
        },
        box=mrecd.Box(
            np.diag([1.0, 2.0, 3.0]), origin=[0.5, 0.5, 0.5], boundary=[True, False, True]
        ),
    )
    ff = ForceField(
        {
            "name": "f",
            "units": {"preset": "real"},
            "styles": [{"category": "atom", "style": "full"}],
        },
        {"atom.full": mrecd.Block({"name": np.array(["A", "B"]), "mass": [1.0, 2.0]})},
    )
    path = tmp_path / "rich.mrec"
    mrecd.create_record(path, frame=frame, forcefield=ff).close()
    expected: dict[str, Any] = {}
    for section, blocks in (("frame", frame.blocks), ("forcefield", ff.tables)):
        for block_name, block in blocks.items():
            for column_name, column in block.items():
                expected[f"{section}/{block_name}/{column_name}"] = column.values
                if column.validity is not None:
                    expected[f"{section}/{block_name}/_validity/{column_name}"] = column.validity
    box = frame.box
    assert box is not None
    expected["frame/box/vectors"] = box.vectors
    expected["frame/box/origin"] = box.origin
    expected["frame/box/boundary"] = box.boundary
    return path, expected


def same_bits(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> bool:
    if a.dtype.kind in "TUO" or b.dtype.kind in "TUO":
        return bool(a.tolist() == b.tolist())
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_plain_zarr_python_reads_every_array_bit_for_bit(tmp_path: Path) -> None:
    path, expected = rich_record(tmp_path)
    found = dict(all_arrays(path))
    assert set(found) == set(expected)
    for name, array in found.items():
        assert same_bits(np.asarray(array[...]), np.asarray(expected[name])), name


def test_zarrs_pipeline_reads_every_array_bit_for_bit(tmp_path: Path) -> None:
    path, expected = rich_record(tmp_path)
    checked = 0
    with zarrs_pipeline():
        for name, array in all_arrays(path):
            if array.metadata.data_type.to_json(zarr_format=3) == "string":
                # zarrs-python declines variable-length strings (they go back to zarr-python)
                continue
            assert type(array._async_array.codec_pipeline).__name__ == "ZarrsCodecPipeline"
            values = np.asarray(array[...])
            assert same_bits(values, np.asarray(expected[name])), name
            checked += 1
    assert checked >= 20


def test_plain_zarr_python_reads_a_packed_record_in_place(tmp_path: Path) -> None:
    path, expected = rich_record(tmp_path)
    packed = mrecd.pack_record(path)
    store = zarr.storage.ZipStore(Path(packed), mode="r")
    try:
        group = zarr.open_group(store, mode="r")
        found = {p: n for p, n in group.members(max_depth=None) if isinstance(n, zarr.Array)}
        assert set(found) == set(expected)
        for name, array in found.items():
            assert same_bits(np.asarray(array[...]), np.asarray(expected[name])), name
    finally:
        store.close()


def plain_store(root: Path) -> None:
    """A record laid out with plain zarr-python calls only (zarr's own default codecs)."""
    g = zarr.open_group(root, mode="w")
    g.create_group("meta", attributes={"molrec_version": 2, "creator": {"name": "plain"}})
    frame = g.create_group(
        "frame",
        attributes={"title": "plain", "n": 3, "_meta_types": {"title": "string", "n": "i32"}},
    )
    atoms = frame.create_group("atoms", attributes={"count": 3, "x_producer": [1, 2]})
    atoms.create_array("x", data=np.array([0.0, 1.0, 2.0]))
    atoms.create_array("y", data=np.array([0.0, 0.5, 2.0]), compressors=ZstdCodec(level=9))
    atoms.create_array("id", data=np.array([10, 11, 12], dtype=np.uint64))
    atoms.create_array("element", data=np.array(["O", "H", "H"], dtype=np.dtypes.StringDType()))
    atoms.create_array("charge", data=np.array([-1.0, 0.5, 0.4]), attributes={"precision": 0.5})
    validity = atoms.create_group("_validity")
    validity.create_array("charge", data=np.array([True, True, False]))
    bonds = frame.create_group("bonds", attributes={"count": 2, "targets": {"partner": "atoms"}})
    bonds.create_array("atomi", data=np.array([0, 0], dtype=np.uint64))
    bonds.create_array("atomj", data=np.array([1, 2], dtype=np.uint64))
    bonds.create_array("partner", data=np.array([2, 1], dtype=np.uint64))
    box = frame.create_group("box")
    box.create_array("vectors", data=np.eye(3) * 9)
    box.create_array("boundary", data=np.array([True, True, False]))
    g.create_group("status", attributes={"state": "succeeded"})


def test_a_plain_zarr_python_store_reads_through_mrecd(tmp_path: Path) -> None:
    root = tmp_path / "plain.mrec"
    plain_store(root)
    with mrecd.open_record(root) as record:
        assert record.meta == {"molrec_version": 2, "creator": {"name": "plain"}}
        assert record.status == {"state": "succeeded"}
        frame = record.frame
        assert frame is not None
    assert frame.meta == {"title": "plain", "n": 3}
    assert frame.meta_types == {"title": "string", "n": "i32"}
    atoms = frame["atoms"]
    assert atoms.attributes == {"x_producer": [1, 2]}
    assert atoms["y"].values.tolist() == [0.0, 0.5, 2.0]
    assert atoms["id"].dtype == "u64"
    assert atoms["element"].values.tolist() == ["O", "H", "H"]
    assert atoms["charge"].precision == 0.5
    assert atoms["charge"].validity is not None and atoms["charge"].validity.tolist() == [
        True,
        True,
        False,
    ]
    assert frame["bonds"].targets == {"partner": "atoms"}
    assert frame.box is not None and frame.box.boundary.tolist() == [True, True, False]
    assert mrecd.validate_record(root) == []


def test_big_endian_arrays_decode(tmp_path: Path) -> None:
    root = tmp_path / "be.mrec"
    plain_store(root)
    atoms = zarr.open_group(root / "frame" / "atoms", mode="r+")
    for name, data in (
        ("q", np.array([1.5, -2.25, 3.0], dtype=">f8")),
        ("n", np.array([-1, 2, 2**30], dtype=">i4")),
        ("id", np.array([1, 2, 2**64 - 1], dtype=">u8")),
        ("cz", np.array([1 + 1j, 2, 3j], dtype=">c16")),
    ):
        atoms.create_array(
            name,
            data=data,
            serializer=BytesCodec(endian="big"),
            compressors=GzipCodec(),
            overwrite=True,
        )
    with mrecd.open_record(root) as record:
        assert record.frame is not None
        block = record.frame["atoms"]
    assert block["q"].values.tolist() == [1.5, -2.25, 3.0] and block["q"].dtype == "f64"
    assert block["n"].values.tolist() == [-1, 2, 2**30] and block["n"].dtype == "i32"
    assert block["id"].values[2] == 2**64 - 1 and block["id"].values.dtype == np.dtype("<u8")
    assert block["cz"].values.tolist() == [1 + 1j, 2, 3j]


def test_missing_chunks_read_as_the_fill_value(tmp_path: Path) -> None:
    root = tmp_path / "fill.mrec"
    plain_store(root)
    atoms = zarr.open_group(root / "frame" / "atoms", mode="r+")
    array = atoms.create_array(
        "f", shape=(3,), dtype="int64", chunks=(1,), fill_value=7, overwrite=True
    )
    array[1] = 5  # chunks 0 and 2 stay unwritten
    with mrecd.open_record(root) as record:
        assert record.frame is not None
        assert record.frame["atoms"]["f"].values.tolist() == [7, 5, 7]


@pytest.mark.parametrize("index_location", ["start", "end"])
def test_sharded_arrays_from_other_writers_decode(tmp_path: Path, index_location: str) -> None:
    root = tmp_path / "shard.mrec"
    plain_store(root)
    atoms = zarr.open_group(root / "frame" / "atoms", mode="r+")
    from zarr.codecs import ShardingCodec

    data = np.arange(3.0)
    atoms.create_array(
        "s",
        shape=(3,),
        dtype="float64",
        chunks=(3,),
        serializer=ShardingCodec(chunk_shape=(1,), index_location=index_location),
        compressors=None,
        overwrite=True,
    )[...] = data
    with mrecd.open_record(root) as record:
        assert record.frame is not None
        assert record.frame["atoms"]["s"].values.tolist() == [0.0, 1.0, 2.0]
