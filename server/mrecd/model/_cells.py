"""A trajectory's cell section: ``{cell_defined, updates: [{box, step_index}]}`` (record.md §2).

The logical JSON form of the cells a trajectory's frames carry, one update
per frame ordinal at which the cell changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InvalidRecord
from ._box import Box

__all__ = ["box_updates_from_dict", "box_updates_to_dict"]


def box_updates_from_dict(data: Any, *, path: str = "trajectory.box") -> list[tuple[int, Box]]:
    """Read a trajectory's cell section ``{cell_defined, updates: [{box, step_index}]}``.

    ``step_index`` values are frame ordinals, strictly ascending; ``cell_defined``
    is the section's one flag, applied to every update.
    """
    if not isinstance(data, Mapping):
        raise InvalidRecord("the cell section is a JSON object {cell_defined, updates}", path=path)
    unknown = set(data) - {"cell_defined", "updates"}
    if unknown:
        raise InvalidRecord(f"unknown cell section keys {sorted(unknown)}", path=path)
    cell_defined = data.get("cell_defined", True)
    if not isinstance(cell_defined, bool):
        raise InvalidRecord("cell_defined is a boolean", path=f"{path}.cell_defined")
    updates = data.get("updates", [])
    if not isinstance(updates, list):
        raise InvalidRecord("updates is a JSON array", path=f"{path}.updates")
    out: list[tuple[int, Box]] = []
    for i, update in enumerate(updates):
        ordinal, box = _box_update(update, cell_defined, f"{path}.updates.{i}")
        if out and ordinal <= out[-1][0]:
            raise InvalidRecord(
                "step_index values are strictly ascending", path=f"{path}.updates.{i}"
            )
        out.append((ordinal, box))
    return out


def _box_update(data: Any, cell_defined: bool, path: str) -> tuple[int, Box]:
    if not isinstance(data, Mapping) or set(data) != {"box", "step_index"}:
        raise InvalidRecord("a cell update is {box, step_index}", path=path)
    ordinal = data["step_index"]
    if isinstance(ordinal, bool) or not isinstance(ordinal, int) or ordinal < 0:
        raise InvalidRecord(
            f"step_index is a frame ordinal (a non-negative integer), not {ordinal!r}",
            path=f"{path}.step_index",
        )
    raw = data["box"]
    if not isinstance(raw, Mapping) or "cell_defined" in raw:
        raise InvalidRecord(
            "an update's box is {vectors, origin?, boundary?}: cell_defined is the section's",
            path=f"{path}.box",
        )
    return ordinal, Box.from_dict({**raw, "cell_defined": cell_defined}, path=f"{path}.box")


def box_updates_to_dict(updates: Iterable[tuple[int, Box]]) -> dict[str, Any] | None:
    """The cell section of :func:`box_updates_from_dict`; ``None`` when there is no cell."""
    items = list(updates)
    if not items:
        return None
    if not all(isinstance(box, Box) and isinstance(i, int) for i, box in items):
        raise InvalidRecord("cell updates are (ordinal, Box) pairs", path="trajectory.box")
    return {
        "cell_defined": items[0][1].cell_defined,
        "updates": [
            {
                "box": {k: v for k, v in box.to_dict().items() if k != "cell_defined"},
                "step_index": i,
            }
            for i, box in items
        ],
    }
