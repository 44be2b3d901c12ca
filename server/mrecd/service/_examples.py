"""Examples of successful responses, for the OpenAPI document (real answers of a small run)."""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "APPENDED",
    "BINARY",
    "DECLARATION",
    "EVENTS",
    "FRAME_JSON",
    "SUMMARY",
    "binary",
    "json_example",
]

DECLARATION: Final[dict[str, Any]] = {
    "blocks": {
        "atoms": {"columns": {c: {"dtype": "f64", "trailing": []} for c in ("x", "y", "z")}}
    },
    "meta": {"pe": {"dtype": "f64"}},
}
SUMMARY: Final = {
    "name": "run-1",
    "sections": ["meta", "trajectory"],
    "nstep": 2,
    "declaration": DECLARATION,
    "read_only": False,
    "last_step": 10,
    "last_time": 5.0,
    "size": 20817,
    "updated": "2026-12-02T07:30:00.125+00:00",
    "live": True,
}
FRAME_JSON: Final = {
    "blocks": {
        "atoms": {
            "count": 2,
            "columns": {"x": {"dtype": "f64", "shape": [2], "values": [19.12, 4.15]}},
        }
    },
    "meta": {"pe": -10.0},
    "meta_types": {"pe": "f64"},
    "step": 10,
    "time": 5.0,
}
APPENDED: Final = {"nstep": 5, "first": 3, "count": 2}
EVENTS: Final = 'retry: 100\n\nevent: commit\nid: 5\ndata: {"nstep": 5, "previous": 3}\n\n'
#: the schema of a binary body (MRF1 frames, zip bytes, raw Zarr chunks)
BINARY: Final = {"schema": {"type": "string", "format": "binary"}}


def json_example(example: Any, *others: str) -> dict[str, Any]:
    """One ``responses=`` entry: ``application/json`` with ``example``; ``others`` binary."""
    content: dict[str, Any] = {"application/json": {"example": example}}
    content.update({media_type: BINARY for media_type in others})
    return {"content": content}


def binary(*media_types: str, description: str) -> dict[str, Any]:
    """One ``responses=`` entry of binary ``media_types``."""
    return {"description": description, "content": {m: BINARY for m in media_types}}
