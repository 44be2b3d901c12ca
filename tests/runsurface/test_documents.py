"""The status and method examples of run-surface.md §2-§3 on a stored record."""

from __future__ import annotations

from typing import Any

import pytest

import mrecd
from mrecd import InvalidRecord
from mrecd.storage import Location

ENGINE = {"type": "ml", "description": "fit", "engine": {"name": "molnex"}}


@pytest.mark.parametrize(
    "status",
    [
        {"state": "running", "started_at": "2026-08-04T00:00:00Z"},
        {"state": "running", "started_at": "2026-08-04T00:00:00+00:00"},
        {"state": "failed", "error": {"message": "diverged", "type": "X"}, "custom": None},
        {"state": "paused", "epoch": 0, "progress": {"batches": 3}},
    ],
)
def test_valid_status_documents_round_trip(where: Location, status: dict[str, Any]) -> None:
    mrecd.create_record(where, status=status).close()
    assert mrecd.open_record(where).status == status


@pytest.mark.parametrize(
    ("status", "path", "message"),
    [
        ({}, "status.state", "status needs a string state"),
        (
            {"state": "running", "started_at": "2026-08-04T00:00:00"},
            "status.started_at",
            "explicit offset",
        ),
        ({"state": "running", "epoch": -1}, "status.epoch", "non-negative integer"),
        ({"state": "failed", "error": {"type": "X"}}, "status.error", r"error\.message"),
    ],
)
def test_invalid_status_documents_are_refused(
    where: Location, status: dict[str, Any], path: str, message: str
) -> None:
    with pytest.raises(InvalidRecord, match=message) as info:
        mrecd.create_record(where, status=status)
    assert info.value.path == path
    assert not where.exists()


def test_the_method_example_round_trips(where: Location) -> None:
    mrecd.create_record(where, status={"state": "running"}, method=ENGINE).close()
    assert mrecd.open_record(where).method == ENGINE


def test_a_method_without_engine_name_is_refused(where: Location) -> None:
    rec = mrecd.create_record(where, status={"state": "running"})
    with pytest.raises(InvalidRecord, match=r"engine\.name") as info:
        rec.write_method({"type": "ml", "description": "fit"})
    assert info.value.path == "method.engine.name"


def test_the_golden_training_type_is_not_refused_on_read(where: Location) -> None:
    method = {**ENGINE, "type": "training"}  # §3 flag: unknown type values are read
    mrecd.create_record(where, status={"state": "running"}, method=method).close()
    assert mrecd.open_record(where).method == method
