"""Carry unknown content into a rewritten section (record.md §9, storage.md §5.6, §8).

The model holds blocks, columns, block attributes, meta and the box; what it
cannot hold survives a rewrite by being carried over from the old group:

* under the section: every entry that is not a block group or ``box``
  (arrays beside the blocks, plain files);
* under a block that is still written: every entry that is not a column
  array or ``_validity`` (subgroups, files); under its ``_validity``: every
  entry that is not a mask array;
* column arrays still written keep their attributes other than ``precision``;
* a box still written keeps its other attributes and children.

A name the new section uses itself is never overwritten by carried content.
Blocks, columns and masks the caller dropped are gone: the model decides
everything it can express.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...model import Block
from ...storage import Location
from ._frames import Extras
from ._layout import BOX, VALIDITY

__all__ = ["carried_extras", "copy_unknown", "copy_unknown_document"]

_BOX_PARTS = frozenset({"vectors", "origin", "boundary"})


def _metadata(directory: Location) -> dict[str, Any] | None:
    try:
        doc = json.loads((directory / "zarr.json").read_bytes())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _kind(directory: Location) -> str | None:
    doc = _metadata(directory)
    kind = None if doc is None else doc.get("node_type")
    return kind if isinstance(kind, str) else None


def _attributes(directory: Location) -> dict[str, Any]:
    doc = _metadata(directory) or {}
    attrs = doc.get("attributes")
    return dict(attrs) if isinstance(attrs, dict) else {}


def carried_extras(old: Location, blocks: Mapping[str, Block], has_box: bool) -> Extras:
    """Unknown attributes of the old section's columns and box that the rewrite keeps."""
    extras = Extras()
    for name, block in blocks.items():
        kept: dict[str, dict[str, Any]] = {}
        for column in block:
            attrs = (
                _attributes(old / name / column) if _kind(old / name / column) == "array" else {}
            )
            attrs.pop("precision", None)  # the model's declaration decides
            if attrs:
                kept[column] = attrs
        if kept:
            extras.columns[name] = kept
    if has_box and _kind(old / BOX) == "group":
        extras.box = _attributes(old / BOX)
    return extras


def _copy(source: Location, target: Location) -> None:
    if target.exists():
        return
    store = source.store
    if source.is_file():
        store.copy(source.key, target.key)
        return
    for key in list(store.keys(source.key)):
        store.copy(key, target.key + key[len(source.key) :])


def _copy_entries(old: Location, new: Location, keep: Any) -> None:
    """Copy each entry ``e`` of ``old`` for which ``keep(e)`` holds, unless ``new`` has it."""
    if not old.is_dir():
        return
    for entry in old.iterdir():
        if entry.name != "zarr.json" and keep(entry):
            _copy(entry, new / entry.name)


def copy_unknown(old: Location, new: Location, blocks: Mapping[str, Block], has_box: bool) -> None:
    """Copy the old section's unknown entries into the newly written ``new`` (see module doc)."""
    _copy_entries(old, new, lambda e: not (e.is_dir() and _kind(e) == "group"))
    for name in blocks:
        old_block, new_block = old / name, new / name
        if _kind(old_block) != "group":
            continue
        _copy_entries(
            old_block,
            new_block,
            lambda e: e.name != VALIDITY and not (e.is_dir() and _kind(e) == "array"),
        )
        if (new_block / VALIDITY).is_dir() and _kind(old_block / VALIDITY) == "group":
            _copy_entries(
                old_block / VALIDITY,
                new_block / VALIDITY,
                lambda e: not (e.is_dir() and _kind(e) == "array"),
            )
    if has_box and _kind(old / BOX) == "group":
        _copy_entries(old / BOX, new / BOX, lambda e: e.name not in _BOX_PARTS)


def copy_unknown_document(old: Location, new: Location) -> None:
    """A document group holds only attributes; anything else found under it is kept."""
    _copy_entries(old, new, lambda e: True)
