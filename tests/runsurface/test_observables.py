"""``rec.observables`` and ``rec.write_observable``: the §5 examples, refusals, preservation."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd import InvalidRecord, NotFound
from mrecd.model import Observable
from mrecd.storage import Location

DIPOLE: dict[str, Any] = {
    "kind": "vector",
    "description": "molecular dipole moment",
    "time_dependent": False,
    "unit": "e*angstrom",
}
MSD: dict[str, Any] = {
    "kind": "scalar",
    "description": "mean squared displacement",
    "time_dependent": True,
    "sampling": "per_frame",
}


def new_run(where: Location) -> mrecd.StoredRecord:
    return mrecd.create_record(where, status={"state": "succeeded"})


def group_attrs(where: Location, path: str) -> dict[str, Any]:
    doc = json.loads((where / path / "zarr.json").read_bytes())
    attributes: dict[str, Any] = doc["attributes"]
    return attributes


def test_the_dipole_example_round_trips(where: Location) -> None:
    rec = new_run(where)
    rec.write_observable("dipole", np.array([0.1, 0.2, 0.3]), DIPOLE)
    rec.close()
    obs = mrecd.open_record(where).observables["dipole"]
    assert obs.document == DIPOLE and obs.kind == "vector" and obs.unit == "e*angstrom"
    assert obs.data.dtype == np.float64 and obs.data.tolist() == [0.1, 0.2, 0.3]
    assert group_attrs(where, "observables/meta/dipole") == DIPOLE


def test_the_msd_example_round_trips(where: Location) -> None:
    rec = new_run(where)
    rec.write_observable("msd", np.arange(4.0), **MSD)
    assert rec.observables["msd"].time_dependent
    assert mrecd.open_record(where).observables["msd"] == Observable(MSD, np.arange(4.0))


def test_an_unknown_kind_is_kept_as_is(where: Location) -> None:
    rec = new_run(where)
    doc = {**DIPOLE, "kind": "tensor", "producer": None}
    rec.write_observable("polar", np.eye(3), doc)
    assert mrecd.open_record(where).observables["polar"].document == doc


def test_zero_d_and_any_column_dtype(where: Location) -> None:
    rec = new_run(where)
    rec.write_observable("energy", np.float64(-1.5), DIPOLE | {"kind": "scalar"})
    rec.write_observable("counts", np.array([[1, 2], [3, 4]], dtype=np.int32), DIPOLE)
    rec.write_observable("labels", np.array(["a", "bc"]), DIPOLE)
    read = mrecd.open_record(where).observables
    assert read["energy"].data.shape == () and float(read["energy"].data) == -1.5
    assert read["counts"].data.dtype == np.int32 and read["counts"].data.shape == (2, 2)
    assert read["labels"].data.tolist() == ["a", "bc"]
    assert sorted(read) == ["counts", "energy", "labels"] and len(read) == 3


def test_rewriting_one_keeps_the_others_and_unknown_content(where: Location) -> None:
    rec = new_run(where)
    rec.write_observable("dipole", np.zeros(3), DIPOLE)
    (where / "observables" / "notes.txt").write_bytes(b"keep")
    rec.write_observable("msd", np.arange(4.0), MSD)
    rec.write_observable("dipole", np.ones(3), DIPOLE)
    read = mrecd.open_record(where).observables
    assert read["dipole"].data.tolist() == [1.0] * 3 and "msd" in read
    assert (where / "observables" / "notes.txt").read_bytes() == b"keep"


def test_delete_removes_array_and_metadata(where: Location) -> None:
    rec = new_run(where)
    rec.write_observable("dipole", np.zeros(3), DIPOLE)
    rec.write_observable("msd", np.arange(4.0), MSD)
    del rec.observables["dipole"]
    assert list(rec.observables) == ["msd"]
    assert not (where / "observables" / "dipole").exists()
    assert not (where / "observables" / "meta" / "dipole").exists()
    with pytest.raises(NotFound, match="no observable 'dipole'"):
        rec.delete_observable("dipole")
    with pytest.raises(NotFound, match="no observable 'dipole'"):
        rec.observables["dipole"]


def test_assignment_writes_an_observable(where: Location) -> None:
    rec = new_run(where)
    rec.observables["msd"] = Observable.build("msd", np.arange(4.0), MSD)
    assert mrecd.open_record(where).observables["msd"].document == MSD


def test_an_array_without_its_metadata_group_is_refused(where: Location) -> None:
    rec = new_run(where)
    rec.write_observable("x", np.zeros(3), DIPOLE)
    where.store.delete_prefix((where / "observables" / "meta" / "x").key)
    with pytest.raises(InvalidRecord, match=r"no metadata group.*pairing.*§5") as info:
        dict(mrecd.open_record(where).observables)
    assert info.value.path == "observables/x"


def test_a_metadata_group_without_its_array_is_refused(where: Location) -> None:
    rec = new_run(where)
    rec.write_observable("x", np.zeros(3), DIPOLE)
    where.store.delete_prefix((where / "observables" / "x").key)
    with pytest.raises(InvalidRecord, match=r"has no array observables/x.*§5") as info:
        dict(mrecd.open_record(where).observables)
    assert info.value.path == "observables/meta/x"


@pytest.mark.parametrize("name", ["meta", "", "a/b", ".", "..", "__x"])
def test_bad_names_are_refused(where: Location, name: str) -> None:
    rec = new_run(where)
    with pytest.raises(InvalidRecord, match=r"observable name .* is refused.*§5"):
        rec.write_observable(name, np.zeros(3), DIPOLE)
    assert not (where / "observables").exists()


@pytest.mark.parametrize(
    ("drop", "message"),
    [
        ("kind", r"kind is required and a str \(run-surface.md §5\)"),
        ("description", r"description is required and a str"),
        ("time_dependent", r"time_dependent is required and a bool"),
    ],
)
def test_required_metadata_keys(where: Location, drop: str, message: str) -> None:
    rec = new_run(where)
    doc = {k: v for k, v in DIPOLE.items() if k != drop}
    with pytest.raises(InvalidRecord, match=message) as info:
        rec.write_observable("dipole", np.zeros(3), doc)
    assert info.value.path == f"observables/meta/dipole.{drop}"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"unit": 3}, r"unit is a string"),
        ({"axes": "xyz"}, r"axes is a list of axis names"),
        ({"axes": ["a", "b"]}, r"axes names 2 axes but the array has 1"),
        ({"time_dependent": "yes"}, r"time_dependent is required and a bool"),
        ({"note": float("nan")}, r"not finite JSON"),
    ],
)
def test_mistyped_metadata_is_refused(where: Location, extra: dict[str, Any], message: str) -> None:
    rec = new_run(where)
    with pytest.raises(InvalidRecord, match=message):
        rec.write_observable("dipole", np.zeros(3), DIPOLE | extra)


def test_time_dependent_on_a_zero_d_array_is_refused(where: Location) -> None:
    rec = new_run(where)
    with pytest.raises(InvalidRecord, match=r"a 0-d array has none \(run-surface.md §5\)"):
        rec.write_observable("e", np.float64(1.0), MSD)


def test_a_narrow_float_is_refused_not_widened(where: Location) -> None:
    rec = new_run(where)
    with pytest.raises(InvalidRecord, match=r"f64 is the only real dtype"):
        rec.write_observable("e", np.zeros(3, dtype=np.float32), DIPOLE)


def test_a_stored_document_breaking_the_rules_is_refused_on_read(where: Location) -> None:
    rec = new_run(where)
    rec.write_observable("x", np.zeros(3), DIPOLE)
    doc = json.loads((where / "observables/meta/x/zarr.json").read_bytes())
    del doc["attributes"]["description"]
    (where / "observables/meta/x/zarr.json").write_bytes(json.dumps(doc).encode())
    with pytest.raises(InvalidRecord, match=r"description is required"):
        mrecd.open_record(where).observables["x"]


def test_a_record_without_observables_has_an_empty_mapping(where: Location) -> None:
    assert dict(new_run(where).observables) == {}
