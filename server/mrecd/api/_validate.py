"""``validate_record``: every rule this package knows, checked against a stored record.

Unlike a reader, which refuses at the first broken rule, the validator walks
the whole store and reports each violation with its array path. It also
reports what readers must accept but a conforming writer never produces:
values off the grid of a declared precision (frame.md §7.2), default relation
endpoints out of the ``atoms`` range (README "Row references"), codecs outside
the must-decode set, big-endian arrays, array-holding document groups, and
packing defects of a ``*.mrec.zip``.

The trajectory section is checked by ``validate_trajectory(record)`` from
:mod:`mrecd.api._trajectory` (issue 4) when the record has one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from ..bindings.zarr import (
    DOCUMENT_SECTIONS,
    FRAME_SECTIONS,
    Node,
    RecordStore,
    SectionParts,
    Sink,
    Tree,
    array_dtype,
    frame_axis_problems,
    frame_from_parts,
    join,
    metrics_problems,
    observable_problems,
    read_values,
    record_kind,
)
from ..errors import InvalidRecord, MrecdError, NotFound
from ..forcefield import ForceField
from ..model import (
    ENDPOINTS,
    Block,
    check_method,
    check_record_meta,
    check_status,
    on_grid,
    quantize,
)
from ..storage import Location, location_of
from ._record import StoredRecord, _check_section_targets
from ._trajectory import validate_trajectory
from ._violations import Violation

if TYPE_CHECKING:
    from os import PathLike

__all__ = ["validate_record"]

#: Codecs every conforming reader decodes (chunking.md §1).
MUST_DECODE: Final = frozenset(
    {
        "bytes",
        "gzip",
        "zstd",
        "numcodecs.shuffle",
        "crc32c",
        "vlen-utf8",
        "sharding_indexed",
        "transpose",
    }
)


class _Report:
    """Violations gathered so far, with helpers that turn refusals into entries."""

    def __init__(self) -> None:
        self.items: list[Violation] = []

    def add(self, path: str, rule: str, message: str) -> None:
        self.items.append(Violation(path, rule, message))

    def error(self, exc: MrecdError, *, path: str = "", rule: str = "") -> None:
        self.items.append(Violation.from_error(exc, path=path, rule=rule))

    def attempt(self, fn: Callable[..., Any], *args: Any, path: str = "", rule: str = "") -> Any:
        try:
            return fn(*args)
        except MrecdError as exc:
            self.error(exc, path=path, rule=rule)
            return None


def validate_record(path: str | PathLike[str] | Location) -> list[Violation]:
    """Check the record at ``path`` (``*.mrec`` dir or ``*.mrec.zip``) against every known rule.

    Returns
    -------
    list of Violation
        Empty when the record is clean; otherwise one entry per violation, in
        the order found (root documents, frame-shaped sections, arrays,
        packing, trajectory).

    Raises
    ------
    NotFound
        Nothing exists at ``path``.
    """
    location = location_of(path, read_only=True)
    if not location.exists():
        raise NotFound("nothing to validate at this path", path=str(location))
    report = _Report()
    try:
        record_kind(location)
        store = RecordStore(location, writable=False)
    except InvalidRecord as exc:
        report.error(exc, path=str(location), rule="storage.md §1")
        return report.items
    try:
        _check_documents(store, report)
        _check_frame_sections(store, report)
        _check_run_surface(store, report)
        _check_arrays(store.tree, report)
        if store.tree.packed:
            _check_packing(store.tree, report)
        if "trajectory" in store.sections():
            _check_trajectory(location, report)
    finally:
        store.close()
    return report.items


# -- documents and the root -------------------------------------------------------------------


def _check_documents(store: RecordStore, report: _Report) -> None:
    sections = store.sections()
    meta = report.attempt(store.document, "meta", path="meta", rule="storage.md §4")
    if "meta" not in sections:
        report.add(
            "meta", "record.md §2", "meta/ is absent: every writer creates it first (record.md §2)"
        )
    elif meta is not None:
        report.attempt(check_record_meta, meta, path="meta", rule="record.md §4")
    for name, check in (("status", check_status), ("method", check_method)):
        document = report.attempt(store.document, name, path=name, rule="storage.md §4")
        if document is not None:
            report.attempt(check, document, path=name, rule="record.md §2.3")
    if not set(sections).intersection(("frame", "system", "trajectory", "forcefield", "status")):
        report.add(
            "/",
            "record.md §2",
            "no substantive section (frame, system, trajectory, forcefield, status)",
        )
    for name in DOCUMENT_SECTIONS:
        if name in sections and sections[name].kind == "group":
            for child in store.tree.children(name):
                report.add(
                    join(name, child), "storage.md §4", "a document section is an array-free group"
                )


# -- frame-shaped sections --------------------------------------------------------------------


def _check_frame_sections(store: RecordStore, report: _Report) -> None:
    parts: dict[str, SectionParts] = {}
    for name in FRAME_SECTIONS:
        sink = Sink(collect=True)
        read = report.attempt(store.section_parts, name, sink, path=name)
        for exc in sink.errors:
            report.error(exc, path=name)
        if read is not None:
            parts[name] = read
    sections = {name: p.blocks for name, p in parts.items()}
    for name, section in parts.items():
        if name == "forcefield":
            read_forcefield = partial(ForceField.from_section, molrec_version=_version(store))
            report.attempt(
                read_forcefield,
                section.attributes,
                section.blocks,
                path=name,
                rule="forcefield.md §1",
            )
            report.attempt(_check_section_targets, name, section.blocks, sections, path=name)
            continue
        report.attempt(frame_from_parts, section, path=name, rule="frame.md §10.6")
        report.attempt(_check_section_targets, name, section.blocks, sections, path=name)
        _check_endpoints(name, section.blocks, report)
        report.attempt(_check_box_as_written, store.tree, name, report, path=join(name, "box"))
    for name, section in parts.items():
        _check_grid(name, section.blocks, report)


def _version(store: RecordStore) -> int | None:
    try:
        meta = store.document("meta") or {}
    except InvalidRecord:
        return None
    value = meta.get("molrec_version")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _modules(store: RecordStore) -> Mapping[str, Any]:
    try:
        modules = (store.document("meta") or {}).get("modules")
    except InvalidRecord:
        return {}
    return modules if isinstance(modules, Mapping) else {}


def _valid_values(block: Block, column: str) -> Any:
    col = block[column]
    return col.values if col.validity is None else col.values[col.validity]


def _check_grid(section: str, blocks: Mapping[str, Block], report: _Report) -> None:
    """Values of a precision column must be what the rounding stores (frame.md §7.1, §11 #11-12)."""
    for block_name, block in blocks.items():
        for column_name, column in block.items():
            if column.precision is None:
                continue
            values = np.asarray(_valid_values(block, column_name), dtype=np.float64).ravel()
            if on_grid(values, column.precision):
                continue
            off = int(
                np.count_nonzero(
                    quantize(values, column.precision).view(np.uint64) != values.view(np.uint64)
                )
            )
            report.add(
                join(section, block_name, column_name),
                "frame.md §7.1",
                f"{off} of {values.size} values are off the grid of precision {column.precision!r}"
                " (a writer stores round_half_even(x/q)*q; frame.md §7.1)",
            )


def _check_box_as_written(tree: Tree, section: str, report: _Report) -> None:
    """Writer rules a reader papers over: ``cell_defined`` only when false; an undefined cell
    writes identity vectors and an explicit all-false boundary (frame.md §9, §9.1)."""
    node = tree.node(join(section, "box"))
    if node is None or node.kind != "group":
        return
    flag = node.attributes.get("cell_defined")
    if flag is True:
        report.add(node.path, "frame.md §9", "cell_defined is written only when it is false")
    if flag is not False:
        return
    children = tree.children(node.path)
    if "boundary" not in children:
        report.add(node.path, "frame.md §9.1", "an undefined cell writes boundary as all-false")
    vectors = children.get("vectors")
    if vectors is not None and vectors.kind == "array":
        values = read_values(tree, vectors, array_dtype(vectors))
        if values.shape == (3, 3) and not np.array_equal(values, np.eye(3)):
            report.add(vectors.path, "frame.md §9.1", "an undefined cell writes identity vectors")


def _check_endpoints(section: str, blocks: Mapping[str, Block], report: _Report) -> None:
    """Undeclared endpoints ``atomi``..``atomm`` index ``atoms`` of their section (frame.md §8)."""
    atoms = blocks.get("atoms")
    for block_name, block in blocks.items():
        declared = block.targets or {}
        for column_name in ENDPOINTS:
            if column_name not in block or column_name in declared or block.count == 0:
                continue
            column = block[column_name]
            if column.dtype != "u64" or column.trailing:
                continue  # not a row reference by convention; a canonical-key refusal covers it
            where = join(section, block_name, column_name)
            values = _valid_values(block, column_name)
            if atoms is None:
                report.add(
                    where,
                    "frame.md §8",
                    "endpoint column references atoms, but the section has no atoms block",
                )
            elif values.size and int(values.max()) >= atoms.count:
                report.add(
                    where,
                    "frame.md §8",
                    f"endpoint {int(values.max())} is not below the {atoms.count} rows of atoms"
                    " (frame.md §8)",
                )


# -- observables and metrics (run-surface.md §4-§5) -------------------------------------------


def _check_run_surface(store: RecordStore, report: _Report) -> None:
    tree = store.tree
    for exc in [*observable_problems(tree), *frame_axis_problems(tree)]:
        report.error(exc, path="observables", rule="run-surface.md §5")
    for exc in metrics_problems(tree, _modules(store)):
        report.error(exc, path="metrics", rule="run-surface.md §4")


# -- every array ------------------------------------------------------------------------------


def _walk(tree: Tree, path: str, report: _Report) -> Iterator[Node]:
    try:
        children = tree.children(path)
    except InvalidRecord as exc:
        report.error(exc, path=path, rule="storage.md §1")
        return
    for child in children.values():
        if child.kind == "array":
            yield child
        else:
            yield from _walk(tree, child.path, report)


def _codec_names(codecs: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for codec in codecs if isinstance(codecs, list) else []:
        name = codec.get("name") if isinstance(codec, Mapping) else codec
        config = codec.get("configuration", {}) if isinstance(codec, Mapping) else {}
        config = config if isinstance(config, Mapping) else {}
        yield str(name), config
        if name == "sharding_indexed":
            yield from _codec_names(config.get("codecs"))
            yield from _codec_names(config.get("index_codecs"))


def _check_arrays(tree: Tree, report: _Report) -> None:
    """Codecs in the must-decode set (chunking.md §1); little-endian ``bytes`` (storage.md §6)."""
    for node in _walk(tree, "", report):
        for name, config in _codec_names(node.metadata.get("codecs")):
            if name not in MUST_DECODE:
                report.add(
                    node.path, "chunking.md §1", f"codec {name!r} is outside the must-decode set"
                )
            elif name == "bytes" and config.get("endian") == "big":
                report.add(
                    node.path,
                    "storage.md §6",
                    "writers emit little-endian bytes; this array is big-endian",
                )


def _check_packing(tree: Tree, report: _Report) -> None:
    """Stored entries, relative ``/`` names, no directory entries (chunking.md §7)."""
    for info in tree.infos():
        name = info.filename
        if name.endswith("/"):
            report.add(name, "chunking.md §7", "a packed record has no directory entries")
        elif info.compress_type != 0:
            report.add(
                name,
                "chunking.md §7",
                f"entry is compressed (method {info.compress_type}); entries are stored",
            )
        if name.startswith("/") or "\\" in name or ".." in name.split("/"):
            report.add(
                name, "chunking.md §7", "entry names are relative, '/'-separated, without '..'"
            )


# -- the trajectory hook ------------------------------------------------------------------------


def _check_trajectory(location: Location, report: _Report) -> None:
    """Hand the record to the trajectory validator (trajectory.md)."""
    try:
        record = StoredRecord(
            RecordStore(location, writable=False), read_only=True, check_sections=False
        )
    except MrecdError:
        return  # the root is broken; already reported above
    try:
        report.items.extend(validate_trajectory(record))
    finally:
        record.close()
