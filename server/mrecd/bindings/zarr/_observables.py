"""The ``observables`` section on disk (run-surface.md §5, storage.md §3.1).

``observables/<name>`` is the data array and ``observables/meta/<name>`` a
group whose attributes are its metadata document; the pairing is mandatory.
A rewrite copies every other entry of the old section byte for byte (other
observables, unknown groups and files), so only the observable written or
deleted changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import InvalidRecord
from ...model import (
    STRING_DTYPE,
    Observable,
    check_observable_meta,
    check_observable_name,
    check_observable_shape,
    dtype_of,
)
from ...storage import Location
from ._arrays import array_dtype, array_shape, read_values, write_array, zarr_store_at
from ._frames import write_group_json
from ._tree import Node, Tree, join

__all__ = ["SECTION", "observables_writer", "read_observables"]

SECTION = "observables"


def _meta_groups(tree: Tree) -> dict[str, Node]:
    meta = tree.node(join(SECTION, "meta"))
    if meta is None:
        return {}
    if meta.kind != "group":
        raise InvalidRecord(
            "observables/meta is the group of metadata documents; 'meta' is not an observable"
            " name (run-surface.md §5)",
            path=meta.path,
        )
    groups = tree.children(meta.path)
    for _name, node in groups.items():
        if node.kind != "group":
            raise InvalidRecord(
                "an observable's metadata is a group's attributes, not an array"
                " (run-surface.md §5)",
                path=node.path,
            )
    return groups


def _arrays(tree: Tree) -> dict[str, Node]:
    children = tree.children(SECTION)
    return {n: node for n, node in children.items() if node.kind == "array"}


def _check_pairing(arrays: Mapping[str, Node], metas: Mapping[str, Node]) -> None:
    for name in sorted(set(arrays) - set(metas)):
        raise InvalidRecord(
            f"observable {name!r} has no metadata group observables/meta/{name}: pairing is"
            " mandatory (run-surface.md §5)",
            path=join(SECTION, name),
        )
    for name in sorted(set(metas) - set(arrays)):
        raise InvalidRecord(
            f"metadata group observables/meta/{name} has no array observables/{name}: pairing"
            " is mandatory (run-surface.md §5)",
            path=join(SECTION, "meta", name),
        )


def _read_one(tree: Tree, array: Node, meta: Node) -> Observable:
    check_observable_name(array.path.rsplit("/", 1)[-1])
    document = check_observable_meta(meta.attributes, path=meta.path)
    shape = array_shape(array)
    check_observable_shape(document, shape, array.path)
    return Observable(document, read_values(tree, array, array_dtype(array)))


def read_observables(tree: Tree) -> dict[str, Observable] | None:
    """Every observable of the record by name, or ``None`` without the section.

    Raises
    ------
    InvalidRecord
        An array without its metadata group or the reverse, a bad document,
        or a time-dependent 0-d array (run-surface.md §5).
    """
    section = tree.node(SECTION)
    if section is None:
        return None
    if section.kind != "group":
        raise InvalidRecord("observables is a group (storage.md §3.1)", path=SECTION)
    arrays, metas = _arrays(tree), _meta_groups(tree)
    _check_pairing(arrays, metas)
    return {name: _read_one(tree, arrays[name], metas[name]) for name in sorted(arrays)}


def _skipped(relative: str, names: set[str]) -> bool:
    head, _, rest = relative.partition("/")
    if head in names:
        return True
    return head == "meta" and rest.partition("/")[0] in names


def _copy_old(old: Location, new: Location, names: set[str]) -> None:
    store = old.store
    if not old.is_dir():
        return
    for key in store.keys(old.key):
        relative = key[len(old.key) + 1 :]
        if not _skipped(relative, names):
            store.copy(key, (new / relative).key)


def _write_one(new: Location, name: str, observable: Observable) -> None:
    values = observable.data
    dtype = dtype_of(values, path=join(SECTION, name))
    if dtype == "string" and values.dtype != STRING_DTYPE:
        values = values.astype(STRING_DTYPE)
    write_group_json(new / "meta" / name, observable.document)
    write_array(zarr_store_at(new), name, values, dtype)


def observables_writer(old: Location, changes: Mapping[str, Observable | None]) -> Any:
    """A section writer: the old section with ``changes`` applied (``None`` deletes one)."""

    def writer(new: Location) -> None:
        _copy_old(old, new, set(changes))
        if not (new / "zarr.json").is_file():
            write_group_json(new, {})
        if not (new / "meta" / "zarr.json").is_file():
            write_group_json(new / "meta", {})
        for name, observable in changes.items():
            if observable is not None:
                _write_one(new, name, observable)

    return writer


def observable_problems(tree: Tree) -> list[InvalidRecord]:
    """Every broken §5 rule of the ``observables`` section (empty when clean or absent)."""
    section = tree.node(SECTION)
    if section is None:
        return []
    problems: list[InvalidRecord] = []
    try:
        arrays, metas = _arrays(tree), _meta_groups(tree)
    except InvalidRecord as exc:
        return [exc]
    for name in sorted(set(arrays) | set(metas)):
        try:
            _check_pairing({name: arrays[name]} if name in arrays else {}, _only(metas, name))
            _read_one(tree, arrays[name], metas[name])
        except InvalidRecord as exc:
            problems.append(exc)
    return problems


def frame_axis_problems(tree: Tree) -> list[InvalidRecord]:
    """Time-dependent observables whose leading axis is not the trajectory's ``nstep`` frames."""
    trajectory = tree.node("trajectory")
    nstep = None if trajectory is None else trajectory.attributes.get("nstep")
    if not isinstance(nstep, int) or isinstance(nstep, bool):
        return []
    try:
        arrays, metas = _arrays(tree), _meta_groups(tree)
    except InvalidRecord:
        return []  # reported by observable_problems
    found = []
    for name in sorted(set(arrays) & set(metas)):
        shape = array_shape(arrays[name])
        if metas[name].attributes.get("time_dependent") is True and shape and shape[0] != nstep:
            found.append(
                InvalidRecord(
                    f"time_dependent observable {name!r} has {shape[0]} rows on its leading axis,"
                    f" the trajectory {nstep} frames (run-surface.md §5)",
                    path=arrays[name].path,
                )
            )
    return found


def _only(nodes: Mapping[str, Node], name: str) -> dict[str, Node]:
    return {name: nodes[name]} if name in nodes else {}
