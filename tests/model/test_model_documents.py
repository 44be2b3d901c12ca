"""Untyped documents: record meta and molrec_version, status, method, collection meta.

record.md §2.3, §4; run-surface.md §2-§3; collection.md §2.1; spec README "Decisions".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import mrecd
from mrecd.model import (
    MOLREC_VERSION,
    check_collection_meta,
    check_method,
    check_molrec_version,
    check_record_meta,
    check_status,
    check_units,
    stamp_meta,
)


def test_the_current_version_is_2() -> None:
    assert MOLREC_VERSION == 2 == mrecd.MOLREC_VERSION


@pytest.mark.parametrize(
    "version", [None, 0, -1, "2", 2.0, True, False, 3, [2], {"v": 2}], ids=repr
)
def test_a_present_version_outside_1_and_2_is_refused(version: Any) -> None:
    with pytest.raises(mrecd.UnsupportedVersion, match="molrec_version"):
        check_molrec_version(version)
    with pytest.raises(mrecd.InvalidRecord):
        check_record_meta({"molrec_version": version})


@pytest.mark.parametrize("version", [1, 2])
def test_versions_1_and_2_are_accepted_and_returned_as_stored(version: int) -> None:
    assert check_molrec_version(version) == version
    assert check_record_meta({"molrec_version": version}) == {"molrec_version": version}


def test_an_absent_version_reads() -> None:
    assert check_record_meta({}) == {}


@pytest.mark.parametrize("claimed", [1, 7, None, "x", 2.0])
def test_a_writer_stamps_2_over_whatever_the_producer_claims(claimed: Any) -> None:
    assert stamp_meta({"molrec_version": claimed, "k": None}) == {"molrec_version": 2, "k": None}
    assert stamp_meta(None) == {"molrec_version": 2}


def test_stamping_still_validates_the_rest_and_copies() -> None:
    doc = {"creator": {"name": "x"}}
    out = stamp_meta(doc)
    assert doc == {"creator": {"name": "x"}} and out["molrec_version"] == 2
    with pytest.raises(mrecd.InvalidRecord, match="creator"):
        stamp_meta({"molrec_version": 7, "creator": {"version": "1"}})


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"creator": {"version": "0.1.0"}}, "meta.creator"),
        ({"creator": "molrs"}, "meta.creator"),
        ({"creator": {"name": "m", "version": 1}}, "meta.creator.version"),
        ({"author": {"email": "a@b"}}, "meta.author"),
        ({"author": {"name": "A", "email": 3}}, "meta.author.email"),
        ({"created_at": "2026-08-04T00:00:00"}, "meta.created_at"),
        ({"created_at": "2026-08-04"}, "meta.created_at"),
        ({"created_at": "2026-13-04T00:00:00Z"}, "meta.created_at"),
        ({"created_at": "2026-08-04T25:00:00+00:00"}, "meta.created_at"),
        ({"created_at": 1754265600}, "meta.created_at"),
        ({"modules": {"qm": {"version": [1]}}}, "meta.modules.qm.version"),
        ({"modules": {"qm": {"version": [1, 2, 3]}}}, "meta.modules.qm.version"),
        ({"modules": {"qm": {"version": [1, "2"]}}}, "meta.modules.qm.version"),
        ({"modules": {"qm": {"version": [1.0, 2]}}}, "meta.modules.qm.version"),
        ({"modules": {"qm": {"version": [True, 2]}}}, "meta.modules.qm.version"),
        ({"modules": {"qm": {"version": None}}}, "meta.modules.qm.version"),
        ({"modules": {"qm": 1}}, "meta.modules.qm"),
        ({"modules": []}, "meta.modules"),
        ({"record_id": 5}, "meta.record_id"),
        ({"content_hash": None}, "meta.content_hash"),
        ({"source": ["a"]}, "meta.source"),
        ({"x": float("nan")}, "meta"),
    ],
)
def test_malformed_meta_keys_are_refused_naming_the_field(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(mrecd.InvalidRecord) as info:
        check_record_meta(doc)
    assert info.value.path == field


@pytest.mark.parametrize(
    "doc",
    [
        {"created_at": "2026-08-04T00:00:00+00:00"},
        {"created_at": "2026-08-04T00:00:00Z"},
        {"created_at": "2026-08-04T00:00:00.123-05:30"},
        {"modules": {"qm": {"version": [1, 0], "basis": "def2-svp"}}},
        {
            "molrec_version": 2,
            "creator": {"name": "molrec-fixtures", "version": "0.0.0"},
            "created_at": "2026-08-04T00:00:00+00:00",
        },
        {"record_schema_version": 9, "format_name": "x", "audit": {"any": ["thing"]}},
    ],
)
def test_valid_meta_documents_pass_unchanged(doc: dict[str, Any]) -> None:
    assert check_record_meta(doc) == doc


def test_unknown_keys_survive_including_null() -> None:
    doc = {"x_vendor": None, "nested": {"k": [1, None]}}
    assert check_record_meta(doc) == doc
    assert stamp_meta(doc) == {**doc, "molrec_version": 2}


@pytest.mark.parametrize("doc", [[], "meta", None, 3])
def test_a_document_is_an_object(doc: Any) -> None:
    for check in (check_record_meta, check_status, check_method, check_collection_meta):
        with pytest.raises(mrecd.InvalidRecord, match="JSON object"):
            check(doc)


# -- status -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({}, "status.state"),
        ({"stage": "train"}, "status.state"),
        ({"state": 1}, "status.state"),
        ({"state": "running", "started_at": "2026-08-04T00:00:00"}, "status.started_at"),
        ({"state": "running", "finished_at": "yesterday"}, "status.finished_at"),
        ({"state": "running", "epoch": -1}, "status.epoch"),
        ({"state": "running", "global_step": 1.5}, "status.global_step"),
        ({"state": "running", "epoch": True}, "status.epoch"),
        ({"state": "running", "message": 3}, "status.message"),
        ({"state": "failed"}, "status.error"),
        ({"state": "failed", "error": {"type": "X"}}, "status.error"),
    ],
)
def test_malformed_status_is_refused(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(mrecd.InvalidRecord) as info:
        check_status(doc)
    assert info.value.path == field


@pytest.mark.parametrize(
    "doc",
    [
        {"state": "running", "started_at": "2026-08-04T00:00:00Z"},
        {"state": "running", "started_at": "2026-08-04T00:00:00+00:00", "epoch": 3},
        {"state": "failed", "error": {"message": "boom", "type": "X"}},
        {"state": "x_custom", "progress": {"done": 3}, "x_vendor": None},
    ],
)
def test_valid_status_passes_unchanged(doc: dict[str, Any]) -> None:
    assert check_status(doc) == doc


# -- method -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"type": "ml", "description": "fit"}, "method.engine.name"),
        ({"type": "ml", "description": "fit", "engine": {}}, "method.engine.name"),
        ({"type": "ml", "description": "fit", "engine": "molnex"}, "method.engine.name"),
        ({"description": "fit", "engine": {"name": "m"}}, "method.type"),
        ({"type": "ml", "engine": {"name": "m"}}, "method.description"),
        (
            {"type": "ml", "description": "fit", "engine": {"name": "m", "version": 2}},
            "method.engine.version",
        ),
    ],
)
def test_malformed_method_is_refused(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(mrecd.InvalidRecord) as info:
        check_method(doc)
    assert info.value.path == field


def test_a_method_with_engine_name_passes_and_keeps_unknown_keys() -> None:
    doc = {
        "type": "training",
        "description": "fit",
        "engine": {"name": "molnex", "x": 1},
        "k": None,
    }
    assert check_method(doc) == doc


# -- collection document ----------------------------------------------------------------------


def test_a_collection_document_must_carry_units() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="units"):
        check_collection_meta({})
    with pytest.raises(mrecd.InvalidRecord, match="units"):
        check_collection_meta({"molrec_version": 2})
    assert check_collection_meta({"units": {"length": "angstrom"}}) == {
        "units": {"length": "angstrom"}
    }
    assert check_collection_meta({"units": {}}) == {"units": {}}


@pytest.mark.parametrize(
    "units",
    [
        {
            "length": "angstrom",
            "energy": "kcal/mol",
            "force": "kcal/mol/angstrom",
            "charge": "e",
            "mass": "dalton",
            "time": "ps",
        },
        {"energy": "eV"},
    ],
)
def test_pint_parseable_units_pass(units: dict[str, str]) -> None:
    assert check_units(units) == units


@pytest.mark.parametrize(
    ("units", "field"),
    [
        ({"length": "furlongz"}, "units.length"),
        ({"length": ""}, "units.length"),
        ({"length": 1}, "units.length"),
        ("angstrom", "units"),
    ],
)
def test_unparseable_units_are_refused(units: Any, field: str) -> None:
    with pytest.raises(mrecd.InvalidRecord) as info:
        check_units(units)
    assert info.value.path == field


def test_a_collection_version_is_checked_when_present() -> None:
    with pytest.raises(mrecd.UnsupportedVersion):
        check_collection_meta({"units": {}, "molrec_version": None})
    with pytest.raises(mrecd.UnsupportedVersion):
        check_collection_meta({"units": {}, "molrec_version": 3})


def test_a_module_without_a_version_is_kept(tmp_path: Path) -> None:
    """Other writers record modules with only ``spec`` and their own keys (issue 10, item 4)."""
    meta = {"modules": {"qm": {"spec": "https://example.org/qm", "basis": "def2-svp"}}}
    assert check_record_meta(meta) == meta
    path = tmp_path / "m.mrec"
    mrecd.create_record(path, meta=meta, status={"state": "running"}).close()
    with mrecd.open_record(path) as record:
        assert record.meta["modules"] == meta["modules"]
