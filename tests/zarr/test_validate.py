"""``mrecd.validate_record`` and ``mrecd validate``: every violation, one line each, with a path."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.codecs import BytesCodec
from zarr_helpers import put_array, update_attributes

import mrecd
from mrecd.cli import main


def test_a_clean_record_has_no_violation(water: Path) -> None:
    assert mrecd.validate_record(water) == []
    assert mrecd.validate_record(mrecd.pack_record(water)) == []


def test_off_grid_values_are_reported_not_refused(water: Path) -> None:
    put_array(
        water / "frame" / "atoms", "x", np.array([0.1, 0.5, 0.25]), attributes={"precision": 1e-3}
    )
    violations = mrecd.validate_record(water)
    assert [(v.path, v.rule) for v in violations] == [("frame/atoms/x", "frame.md §7.1")]
    assert "1 of 3 values are off the grid" in violations[0].message  # 0.5 and 0.25 are on it


def test_off_grid_ignores_null_rows(water: Path) -> None:
    atoms = water / "frame" / "atoms"
    put_array(atoms, "q", np.array([0.5, 0.1234, 0.25]), attributes={"precision": 1e-3})
    put_array(atoms / "_validity", "q", np.array([True, False, True]))
    assert mrecd.validate_record(water) == []


def test_default_endpoints_out_of_range_are_reported(water: Path) -> None:
    put_array(water / "frame" / "bonds", "atomj", np.array([1, 3], dtype=np.uint64))
    violations = mrecd.validate_record(water)
    assert [(v.path, v.rule) for v in violations] == [("frame/bonds/atomj", "frame.md §8")]


def test_every_violation_is_reported_not_just_the_first(water: Path) -> None:
    atoms = water / "frame" / "atoms"
    put_array(atoms, "mass", np.ones(3, dtype=np.float32))
    put_array(atoms, "id", np.arange(3, dtype=np.int64))
    put_array(atoms / "_validity", "nope", np.ones(3, dtype=bool))
    put_array(water / "system" / "atoms", "extra", np.ones(5))
    update_attributes(water / "status", state=...)
    update_attributes(water / "frame", _meta_types={"smiles": "f32"})
    paths = {v.path for v in mrecd.validate_record(water)}
    assert {
        "frame/atoms/mass",
        "frame/atoms/id",
        "frame/atoms/_validity/nope",
        "system/atoms/extra",
        "status.state",
        "frame._meta_types.smiles",
    } <= paths


@pytest.mark.parametrize(
    ("edit", "path", "rule"),
    [
        (
            lambda p: update_attributes(p / "meta", molrec_version=3),
            "meta.molrec_version",
            "record.md §4",
        ),
        (
            lambda p: zarr.open_group(p / "meta", mode="r+").create_array(
                "stray", data=np.arange(2)
            ),
            "meta/stray",
            "storage.md §4",
        ),
        (
            lambda p: zarr.open_group(p / "frame" / "atoms", mode="r+").create_array(
                "be",
                data=np.arange(3, dtype=">i4"),
                serializer=BytesCodec(endian="big"),
                overwrite=True,
            ),
            "frame/atoms/be",
            "storage.md §6",
        ),
        (
            lambda p: update_attributes(p / "frame" / "bonds", targets={"atomi": "nowhere"}),
            "frame/bonds/atomi",
            "frame.md §8",
        ),
    ],
    ids=["newer-version", "array-in-document-group", "big-endian", "missing-target"],
)
def test_single_violations(water: Path, edit: object, path: str, rule: str) -> None:
    edit(water)  # type: ignore[operator]
    violations = mrecd.validate_record(water)
    assert (path, rule) in [(v.path, v.rule) for v in violations], violations


def test_codecs_outside_the_must_decode_set_are_reported(water: Path) -> None:
    array = water / "frame" / "atoms" / "mass"
    doc = json.loads((array / "zarr.json").read_text())
    doc["codecs"].insert(
        1,
        {
            "name": "blosc",
            "configuration": {
                "cname": "lz4",
                "clevel": 5,
                "shuffle": "shuffle",
                "typesize": 8,
                "blocksize": 0,
            },
        },
    )
    (array / "zarr.json").write_text(json.dumps(doc))
    violations = mrecd.validate_record(water)
    assert ("frame/atoms/mass", "chunking.md §1") in [(v.path, v.rule) for v in violations]


def test_missing_meta_is_reported(water: Path) -> None:
    import shutil

    shutil.rmtree(water / "meta")
    assert [(v.path, v.rule) for v in mrecd.validate_record(water)] == [("meta", "record.md §2")]


def test_not_a_record(tmp_path: Path) -> None:
    (tmp_path / "a.mrec").mkdir()
    (tmp_path / "a.mrec" / "stray.txt").write_text("x")
    violations = mrecd.validate_record(tmp_path / "a.mrec")
    assert len(violations) == 1 and violations[0].rule == "storage.md §1"
    (tmp_path / "b.zarr").mkdir()
    (tmp_path / "b.zarr" / "zarr.json").write_text("{}")
    assert mrecd.validate_record(tmp_path / "b.zarr")[0].rule == "storage.md §1"
    with pytest.raises(mrecd.NotFound):
        mrecd.validate_record(tmp_path / "none.mrec")


def test_packing_defects_are_reported(water: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.mrec.zip"
    with zipfile.ZipFile(bad, "w") as archive:
        for path in sorted(water.rglob("*")):
            rel = path.relative_to(water).as_posix()
            if path.is_dir():
                archive.writestr(rel + "/", b"")
            else:
                archive.write(path, rel, compress_type=zipfile.ZIP_DEFLATED)
    rules = {v.rule for v in mrecd.validate_record(bad)}
    messages = " ".join(v.message for v in mrecd.validate_record(bad))
    assert rules == {"chunking.md §7"}
    assert "directory entries" in messages and "stored" in messages


def test_a_plain_record_with_a_trajectory_group_validates(water: Path) -> None:
    g = zarr.open_group(water / "trajectory", mode="w", attributes={"nstep": 0})
    g.create_array("step", data=np.zeros(0, dtype=np.int64))
    assert mrecd.validate_record(water) == []


def test_violation_text_names_path_and_rule(water: Path) -> None:
    put_array(
        water / "frame" / "atoms", "x", np.array([0.1, 0.2, 0.3]), attributes={"precision": 1e-3}
    )
    (violation,) = mrecd.validate_record(water)
    assert str(violation).startswith("frame/atoms/x: ")
    assert str(violation).endswith("(a writer stores round_half_even(x/q)*q; frame.md §7.1)")
    assert (
        str(mrecd.Violation("a/b", "frame.md §6", "no citation"))
        == "a/b: no citation [frame.md §6]"
    )


def test_cli_validate_clean_and_dirty(water: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(water)]) == 0
    assert capsys.readouterr().out == ""
    put_array(
        water / "frame" / "atoms", "x", np.array([0.1, 0.2, 0.3]), attributes={"precision": 1e-3}
    )
    put_array(water / "frame" / "atoms", "mass", np.ones(2))
    assert main(["validate", str(water)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert {line.split(":")[0] for line in lines} == {"frame/atoms/x", "frame/atoms/mass"}


def test_cli_validate_a_zip(water: Path) -> None:
    assert main(["validate", str(mrecd.pack_record(water))]) == 0


def test_cli_validate_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "none.mrec")]) == 2
    assert "no" in capsys.readouterr().err


def test_cli_usage_error_exits_2() -> None:
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2


def test_cli_runs_as_a_module(water: Path) -> None:
    import os
    import subprocess
    import sys

    put_array(
        water / "frame" / "atoms", "x", np.array([0.1, 0.2, 0.3]), attributes={"precision": 1e-3}
    )
    result = subprocess.run(
        [sys.executable, "-m", "mrecd.cli", "validate", str(water)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout.startswith("frame/atoms/x: ")


def test_box_writer_rules_are_reported(water: Path) -> None:
    box = water / "frame" / "box"
    update_attributes(box, cell_defined=True)
    assert [(v.path, v.rule) for v in mrecd.validate_record(water)] == [
        ("frame/box", "frame.md §9")
    ]
    update_attributes(box, cell_defined=False)  # 20 x identity vectors, no boundary array
    found = [(v.path, v.rule) for v in mrecd.validate_record(water)]
    assert found == [("frame/box", "frame.md §9.1"), ("frame/box/vectors", "frame.md §9.1")]


def test_violation_from_an_error_without_citation_uses_the_fallbacks() -> None:
    error = mrecd.InvalidRecord("status needs a string state", path="status.state")
    assert mrecd.Violation.from_error(error, rule="record.md §2.3") == mrecd.Violation(
        "status.state", "record.md §2.3", "status needs a string state"
    )
    bare = mrecd.Violation.from_error(mrecd.InvalidRecord("x"), path="frame")
    assert (bare.path, bare.rule) == ("frame", "mrecd")
