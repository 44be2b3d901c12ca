"""Frame-shaped groups (storage.md §5): ``frame/``, ``system/`` and ``forcefield/``.

A frame-shaped group's attributes are a document (typed meta for a frame,
the plain force-field document for ``forcefield``); its child groups are
blocks, except ``box``; a block's child arrays are columns, and its
``_validity`` subgroup holds masks. Anything else under the group (arrays
beside the blocks, subgroups of a block, extra box parts) is unknown content:
the reader skips it and :mod:`._carry` keeps it when the section is rewritten.

Readers take a :class:`Sink`: by default the first refusal raises; the
validator passes a collecting sink and gets every violation of the group.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ...errors import InvalidRecord
from ...model import (
    CANONICAL,
    META_TYPES_KEY,
    Block,
    Box,
    Column,
    Frame,
    check_precision,
    decode_meta_document,
    dumps_strict,
    encode_meta,
)
from ...model._block import BLOCK_KEYS, check_targets
from ...storage import Location
from ._arrays import array_dtype, array_shape, read_values, write_array, zarr_store_at
from ._layout import BOX, VALIDITY, check_node_name
from ._tree import Node, Tree, join

__all__ = [
    "SectionParts",
    "Sink",
    "frame_from_parts",
    "read_block",
    "read_box",
    "read_section_parts",
    "typed_attributes",
    "write_group_json",
    "write_section",
]

T = TypeVar("T")


class Sink:
    """Where refusals go: raised at once (``collect=False``) or gathered (the validator)."""

    def __init__(self, *, collect: bool = False) -> None:
        self.collect = collect
        self.errors: list[InvalidRecord] = []

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """Call ``fn(*args, **kwargs)``; when collecting, record its refusal and return ``None``."""
        if not self.collect:
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except InvalidRecord as exc:
            self.errors.append(exc)
            return None


def rebase(exc: InvalidRecord, prefix: str, sep: str = ".") -> InvalidRecord:
    """The same refusal with its path placed under ``prefix`` (model errors name only a key)."""
    path = exc.path or ""
    if path == prefix or path.startswith(prefix + "/") or path.startswith(prefix + "."):
        return exc
    return type(exc)(exc.message, path=f"{prefix}{sep}{path}" if path else prefix)


@dataclass(slots=True)
class SectionParts:
    """A frame-shaped group as read: raw ``attributes``, ``blocks`` and the ``box``."""

    path: str
    attributes: dict[str, Any]
    blocks: dict[str, Block] = field(default_factory=dict)
    box: Box | None = None


# -- reading -------------------------------------------------------------------------------


def _count(node: Node) -> int:
    count = node.attributes.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise InvalidRecord(
            f"a block group needs the attribute count, an integer >= 0; got {count!r}"
            " (storage.md §5.2)",
            path=node.path,
        )
    return count


def _structural_shape(node: Node, count: int) -> tuple[int, ...] | None:
    raw = node.attributes.get("structural_shape")
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in raw
    ):
        raise InvalidRecord(
            f"structural_shape {raw!r} is not a list of integers (frame.md §4)", path=node.path
        )
    if math.prod(raw) != count:
        raise InvalidRecord(
            f"structural_shape {raw} has product {math.prod(raw)}, not the count {count}"
            " (frame.md §4)",
            path=node.path,
        )
    return tuple(raw)


def _check_canonical(name: str, node: Node, dtype: str, shape: tuple[int, ...]) -> None:
    want = CANONICAL.get(name)
    if want is not None and (dtype != want or len(shape) != 1):
        raise InvalidRecord(
            f"canonical key {name!r} is {want}[N]; stored as {dtype}{list(shape)}, refused and not"
            " widened (conventions.md §2)",
            path=node.path,
        )


def _precision(node: Node, dtype: str) -> float | None:
    if "precision" not in node.attributes:
        return None
    p = check_precision(node.attributes["precision"], path=node.path)
    if dtype != "f64":
        raise InvalidRecord(
            f"precision is declared only on f64 columns, not {dtype} (frame.md §7.2)",
            path=node.path,
        )
    return p


def _column_layout(name: str, node: Node, count: int) -> tuple[str, tuple[int, ...], float | None]:
    dtype = array_dtype(node)
    shape = array_shape(node)
    if not shape:
        raise InvalidRecord(
            "a column has a leading axis; a 0-d array is not a column (frame.md §3)", path=node.path
        )
    if shape[0] != count:
        raise InvalidRecord(
            f"leading length {shape[0]} disagrees with the block count {count} (frame.md §4)",
            path=node.path,
        )
    _check_canonical(name, node, dtype, shape)
    return dtype, shape, _precision(node, dtype)


def _read_mask(
    tree: Tree, node: Node, columns: Mapping[str, Node], count: int
) -> npt.NDArray[np.bool_]:
    name = node.path.rsplit("/", 1)[-1]
    if name not in columns:
        raise InvalidRecord(
            f"mask names no column of the block ({name!r}) (frame.md §6)", path=node.path
        )
    dtype = array_dtype(node)
    if dtype != "bool":
        raise InvalidRecord(f"a validity mask is bool, not {dtype} (frame.md §6)", path=node.path)
    shape = array_shape(node)
    if shape != (count,):
        raise InvalidRecord(
            f"a validity mask has exactly one flag per row, shape [{count}]; got {list(shape)}"
            " (frame.md §6)",
            path=node.path,
        )
    return read_values(tree, node, "bool")


def _masks(
    tree: Tree, block: Node, columns: Mapping[str, Node], count: int, sink: Sink
) -> dict[str, Any]:
    group = tree.node(join(block.path, VALIDITY))
    if group is None:
        return {}
    if group.kind != "group":
        raise InvalidRecord(
            f"{VALIDITY} is reserved for the mask subgroup (frame.md §6)", path=group.path
        )
    masks: dict[str, Any] = {}
    for name, child in tree.children(group.path).items():
        if child.kind == "array":  # a subgroup under _validity is unknown content, kept
            masks[name] = sink.run(_read_mask, tree, child, columns, count)
    return masks


def _column(tree: Tree, name: str, node: Node, count: int, mask: Any) -> Column:
    dtype, _, precision = _column_layout(name, node, count)
    values = read_values(tree, node, dtype)
    return Column._trusted(values, dtype, mask, precision)


def read_block(tree: Tree, node: Node, sink: Sink | None = None) -> Block | None:
    """Read one block group: count, structural shape, targets, columns and masks.

    Refuses a missing count, columns whose leading length disagrees with it,
    masks that are not ``bool[count]`` or name no column, canonical keys at
    another dtype, malformed targets and precision on a non-f64 column.
    """
    sink = sink or Sink()
    count = _count(node)
    shape = sink.run(_structural_shape, node, count)
    children = tree.children(node.path)
    arrays = {n: c for n, c in children.items() if c.kind == "array" and n != VALIDITY}
    masks = sink.run(_masks, tree, node, arrays, count, sink) or {}
    columns: dict[str, Column] = {}
    for name, child in arrays.items():
        column = sink.run(_column, tree, name, child, count, masks.get(name))
        if column is not None:
            columns[name] = column
    targets = None
    if node.attributes.get("targets") is not None:
        layout = {n: (c.dtype, c.trailing) for n, c in columns.items()}
        targets = sink.run(check_targets, node.attributes["targets"], layout, path=node.path)
    attributes = {k: v for k, v in node.attributes.items() if k not in BLOCK_KEYS}
    return Block._trusted(columns, count, shape, targets, attributes)


def _box_array(tree: Tree, node: Node, part: str) -> npt.NDArray[Any]:
    dtype = array_dtype(node)
    allowed = (
        ("bool",)
        if part == "boundary"
        else ("f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
    )
    if dtype not in allowed:
        rule = "bool[3]" if part == "boundary" else "f64 (integers convert exactly)"
        raise InvalidRecord(f"box {part} must be {rule}, not {dtype} (frame.md §9)", path=node.path)
    return read_values(tree, node, dtype)


def read_box(tree: Tree, node: Node) -> Box:
    """Read the cell group ``box/`` (frame.md §9, storage.md §5.5), defaults filled."""
    if node.kind != "group":
        raise InvalidRecord("box is the cell group, not an array (storage.md §5.5)", path=node.path)
    children = tree.children(node.path)
    parts: dict[str, Any] = {}
    for part in ("vectors", "origin", "boundary"):
        child = children.get(part)
        if child is not None and child.kind == "array":
            parts[part] = _box_array(tree, child, part)
    cell_defined = node.attributes.get("cell_defined", True)
    if not isinstance(cell_defined, bool):
        raise InvalidRecord(
            f"cell_defined is a boolean attribute, not {cell_defined!r} (frame.md §9)",
            path=node.path,
        )
    if "vectors" not in parts:
        raise InvalidRecord(
            "box needs the array vectors f64[3][3] (storage.md §5.5)", path=node.path
        )
    return Box(
        parts["vectors"],
        origin=parts.get("origin"),
        boundary=parts.get("boundary"),
        cell_defined=cell_defined,
        path=node.path,
    )


def read_section_parts(tree: Tree, node: Node, sink: Sink | None = None) -> SectionParts:
    """Read a frame-shaped group's attributes, blocks and box (the caller checks targets)."""
    sink = sink or Sink()
    if node.kind != "group":
        raise InvalidRecord(
            "a frame-shaped section is a group, not an array (storage.md §5)", path=node.path
        )
    parts = SectionParts(node.path, dict(node.attributes))
    for name, child in tree.children(node.path).items():
        if name == BOX:
            parts.box = sink.run(read_box, tree, child)
        elif child.kind == "group":
            block = sink.run(read_block, tree, child, sink)
            if block is not None:
                parts.blocks[name] = block
    return parts


def frame_from_parts(parts: SectionParts) -> Frame:
    """The frame of a ``frame``/``system`` group: typed meta decoded per frame.md §10.6."""
    attrs = dict(parts.attributes)
    tags = attrs.pop(META_TYPES_KEY, {})
    try:
        meta, meta_types = decode_meta_document(attrs, tags, path=parts.path)
    except InvalidRecord as exc:
        raise rebase(exc, parts.path) from None
    return Frame._trusted(parts.blocks, meta, meta_types, parts.box)


# -- writing -------------------------------------------------------------------------------


def typed_attributes(frame: Frame) -> dict[str, Any]:
    """A frame group's attributes: each meta value in its typed JSON form, plus ``_meta_types``.

    ``_meta_types`` maps every key to its tag and is omitted for an empty
    document (storage.md §5.1).
    """
    tags = frame.meta_types
    attrs: dict[str, Any] = {k: encode_meta(tags[k], v) for k, v in frame.meta.items()}
    if attrs:
        attrs[META_TYPES_KEY] = dict(tags)
    return attrs


def write_group_json(directory: Location, attributes: Mapping[str, Any]) -> None:
    """Write a group's ``zarr.json`` (strict JSON: a NaN or infinity is refused, never bare)."""
    directory.mkdir(parents=True, exist_ok=True)
    doc = {"zarr_format": 3, "node_type": "group", "attributes": dict(attributes)}
    try:
        text = dumps_strict(doc)
    except ValueError as exc:
        raise InvalidRecord(f"attributes are not finite JSON: {exc}", path=directory.name) from None
    (directory / "zarr.json").write_bytes(text.encode("utf-8"))


def check_blocks(blocks: Mapping[str, Block], section: str) -> None:
    """A writer's name checks: every block and column name is a Zarr node name; no block ``box``."""
    for name, block in blocks.items():
        where = join(section, name)
        check_node_name(name, what="block", path=section)
        if name == BOX:
            raise InvalidRecord(
                "'box' names the cell and cannot name a block (frame.md §5)", path=where
            )
        for column in block:
            check_node_name(column, what="column", path=where)


def _write_block(
    store: Any, root: Location, name: str, block: Block, extra: Mapping[str, dict[str, Any]]
) -> None:
    for column_name, column in block.items():
        write_array(
            store,
            f"{name}/{column_name}",
            column.values,
            column.dtype,
            precision=column.precision,
            attributes=extra.get(column_name),
        )
    masked = {n: c.validity for n, c in block.items() if c.validity is not None}
    for column_name, mask in masked.items():
        write_array(store, f"{name}/{VALIDITY}/{column_name}", mask, "bool", dense=True)
    if masked:
        write_group_json(root / name / VALIDITY, {})
    attrs: dict[str, Any] = {"count": block.count}
    if block.structural_shape is not None:
        attrs["structural_shape"] = list(block.structural_shape)
    if block.targets:
        attrs["targets"] = block.targets
    attrs.update(block.attributes)
    write_group_json(root / name, attrs)


def _write_box(store: Any, root: Location, box: Box, extra_attrs: Mapping[str, Any]) -> None:
    write_array(store, f"{BOX}/vectors", box.vectors, "f64", dense=True)
    if not box.origin_is_default:
        write_array(store, f"{BOX}/origin", box.origin, "f64", dense=True)
    # An undefined cell writes its all-false boundary explicitly (frame.md §9.1);
    # a defined cell omits the all-true default (ref).
    if not box.cell_defined or not box.boundary_is_default:
        write_array(store, f"{BOX}/boundary", box.boundary, "bool", dense=True)
    attrs = dict(extra_attrs)
    attrs.pop("cell_defined", None)
    if not box.cell_defined:
        attrs["cell_defined"] = False
    write_group_json(root / BOX, attrs)


@dataclass(slots=True)
class Extras:
    """Unknown attributes carried into a rewritten section: per column and of the box group."""

    columns: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    box: dict[str, Any] = field(default_factory=dict)


def write_section(
    root: Location,
    attributes: Mapping[str, Any],
    blocks: Mapping[str, Block],
    box: Box | None,
    extras: Extras | None = None,
) -> None:
    """Write a frame-shaped group into the empty directory ``root``, data before metadata.

    Arrays land first, then each block's ``zarr.json``, and the section's own
    ``zarr.json`` last.
    """
    extras = extras or Extras()
    store = zarr_store_at(root)
    for name, block in blocks.items():
        _write_block(store, root, name, block, extras.columns.get(name, {}))
    if box is not None:
        _write_box(store, root, box, extras.box)
    write_group_json(root, attributes)
