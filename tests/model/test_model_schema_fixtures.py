"""The format's public schema fixtures: every valid case loads and round-trips, every invalid one
is refused with ``InvalidRecord`` (spec README "Test data").

Kinds that are not models of this package are listed in ``NOT_OURS`` with the reason; a new
kind directory fails :func:`test_every_fixture_kind_is_handled` until it is placed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mrecd
from conftest import SCHEMA, load_json, schema_cases
from mrecd.model import (
    Block,
    Box,
    Column,
    Declaration,
    Frame,
    MetaSpec,
    Record,
    box_updates_from_dict,
    box_updates_to_dict,
    check_collection_meta,
    check_method,
    check_record_meta,
    check_status,
)


def _document(
    check: Callable[[Any], dict[str, Any]],
) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    return check, lambda doc: doc


def _trajectory_read(data: Any) -> Record:
    return Record.from_dict({"meta": {}, "trajectory": data})


def _trajectory_write(record: Record) -> Any:
    return record.to_dict()["trajectory"]


def _collection_read(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise mrecd.InvalidRecord("a collection is a JSON object")
    declaration = Declaration.from_dict(data["sequence_schema"])
    records = [Record.from_dict(r) for r in data["records"]]
    for record in records:
        if record.declaration is not None and record.declaration.meta != declaration.meta:
            raise mrecd.InvalidRecord("a record's per-step meta must equal the collection's")
    return {
        "meta": check_collection_meta(data["meta"]),
        "sequence_schema": declaration,
        "index": Block.from_dict(data["index"]),
        "records": records,
    }


def _collection_write(parts: dict[str, Any]) -> dict[str, Any]:
    return {
        "meta": parts["meta"],
        "sequence_schema": parts["sequence_schema"].to_dict(),
        "index": parts["index"].to_dict(),
        "records": [r.to_dict() for r in parts["records"]],
    }


#: kind directory -> (read: JSON -> model, write: model -> JSON)
LOADERS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "core/column": (Column.from_dict, Column.to_dict),
    "core/block": (Block.from_dict, Block.to_dict),
    "core/box": (Box.from_dict, Box.to_dict),
    "core/cell": (Box.from_dict, Box.to_dict),
    "core/frame": (Frame.from_dict, Frame.to_dict),
    "core/meta": _document(check_record_meta),
    "core/meta-series": (MetaSpec.from_dict, MetaSpec.to_dict),
    "core/collection-meta": _document(check_collection_meta),
    "core/status": _document(check_status),
    "core/method": _document(check_method),
    "core/record": (Record.from_dict, Record.to_dict),
    "core/trajectory": (_trajectory_read, _trajectory_write),
    "core/trajectory-box": (box_updates_from_dict, box_updates_to_dict),
    "core/box-update": (
        lambda d: box_updates_from_dict({"cell_defined": True, "updates": [d]}),
        lambda updates: box_updates_to_dict(updates)["updates"][0],  # type: ignore[index]
    ),
    "core/collection": (_collection_read, _collection_write),
    "binding/sequence-schema": (Declaration.from_dict, Declaration.to_dict),
}

NOT_OURS = {
    "core/forcefield": "the force-field engineer's suite (mrecd.forcefield)",
    "observables/array": "observables are preserved as plain JSON, not modelled",
    "observables/observable": "observables are preserved as plain JSON, not modelled",
    "observables/observable-meta": "observables are preserved as plain JSON, not modelled",
    "observables/observables": "observables are preserved as plain JSON, not modelled",
    "draft/observables/array": "draft, not part of version 1",
    "draft/observables/observable": "draft, not part of version 1",
    "draft/observables/observables": "draft, not part of version 1",
    "draft/observables/source": "draft, not part of version 1",
    "ref/ref": "record pointers belong to the draft observables",
    "report/violation": "conformance reports are a validator's output",
}


def _kinds() -> set[str]:
    return {str(p.parent.relative_to(SCHEMA)) for p in SCHEMA.rglob("*.json")}


def _cases(prefix: str) -> list[Any]:
    return [
        pytest.param(kind, path, id=f"{kind}/{path.name}")
        for kind in sorted(LOADERS)
        for path in schema_cases(kind, prefix)
    ]


def test_every_fixture_kind_is_handled() -> None:
    assert _kinds() == set(LOADERS) | set(NOT_OURS)
    assert all(schema_cases(kind, "valid") for kind in LOADERS)


@pytest.mark.parametrize(("kind", "path"), _cases("valid"))
def test_a_valid_case_loads_and_round_trips(kind: str, path: Path) -> None:
    read, write = LOADERS[kind]
    model = read(load_json(path))
    written = write(model)
    text = json.dumps(written, allow_nan=False)  # finite JSON, no bare NaN
    again = read(json.loads(text))
    assert again == model
    assert write(again) == written


@pytest.mark.parametrize(("kind", "path"), _cases("invalid"))
def test_an_invalid_case_is_refused(kind: str, path: Path) -> None:
    read, _ = LOADERS[kind]
    with pytest.raises(mrecd.InvalidRecord):
        read(load_json(path))


def test_there_are_invalid_cases_for_most_kinds() -> None:
    with_invalid = {kind for kind in LOADERS if schema_cases(kind, "invalid")}
    assert len(with_invalid) >= 12
