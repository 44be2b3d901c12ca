"""The checked-in OpenAPI document is the one the app generates."""

from __future__ import annotations

import json
from pathlib import Path

from mrecd.service.openapi import document

CHECKED_IN = Path(__file__).parents[2] / "openapi" / "openapi.json"


def test_openapi_is_current() -> None:
    assert CHECKED_IN.read_text() == document(), "stale: run `make openapi` and commit it"


def test_every_v1_route_is_documented() -> None:
    paths = json.loads(document())["paths"]
    for path in (
        "/v1/records",
        "/v1/records/{name}",
        "/v1/records/{name}/{section}",
        "/v1/records/{name}/trajectory/frames",
        "/v1/records/{name}/trajectory/frames/{i}",
        "/v1/records/{name}/trajectory/events",
        "/v1/records/{name}/zarr/{key}",
        "/healthz",
        "/readyz",
    ):
        assert path in paths, path
