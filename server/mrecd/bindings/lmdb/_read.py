"""The reader's side: a record's trajectory resolved from its sparse updates
(lmdb.md §5; trajectory.md §6, §7, §10), with the reader's refusals.

A record's frames are scanned once into a :class:`Layout` (which blocks each
frame updates and with how many rows, the cells, steps, times and per-step
meta, all from the headers); resolving frame ``i`` then decodes only the
values that hold the blocks asked for. Records never change once committed,
so a layout stays valid for the life of the file.
"""

from __future__ import annotations

import json
import json.scanner
import struct
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from ...codecs import decode_blocks
from ...errors import FrameBytesError, InvalidRecord
from ...model import (
    Block,
    Box,
    Column,
    Declaration,
    Frame,
    LazyFrames,
    check_block_targets,
    decode_element,
    decode_meta,
)
from ._keys import frame_key
from ._plans import (
    Expect,
    Hint,
    Template,
    UpdatePlan,
    expectations,
    known_hint,
    materialize,
    plain_headers,
    plan,
    plan_keyed,
    plan_known,
    plan_like,
)

__all__ = [
    "Expected",
    "HeldFrames",
    "Layout",
    "Quick",
    "RecordView",
    "check_v1_frame",
    "join",
    "loads",
    "quick_frame",
    "replay",
    "resolve",
    "rewalk",
    "scan",
    "walk",
]

_PREFIX = struct.Struct("<4sI")
_U64BE = struct.Struct(">Q")
_UPDATE_KEYS: Final = frozenset({"blocks", "meta", "meta_types", "step", "time", "box"})
_ANGLE_VALUES: Final = frozenset({"theta0", "chi0", "phase", "phi1", "phi2", "phi3"})
_RELATIONS: Final = frozenset({"bonds", "angles", "dihedrals", "impropers", "pairs", "cmaps"})
_RELATION_PLAIN: Final = frozenset(
    {"atomi", "atomj", "atomk", "atoml", "atomm", "type", "style", "id", "type_id", "name"}
)


@dataclass(frozen=True, slots=True)
class Expected:
    """The declaration as a reader checks updates against it (computed once per state)."""

    declaration: Declaration
    #: block -> {column: (dtype, trailing, nullable)}, in declared order
    columns: dict[str, dict[str, tuple[str, tuple[int, ...], bool]]]
    #: per-step key -> tag
    tags: dict[str, str]
    #: aligned block -> target
    aligned: dict[str, str]
    #: block -> {column: what the update-plan fast path checks}
    fast: dict[str, dict[str, Expect]] = field(default_factory=dict)
    #: checked ``blocks`` header texts (grows as updates are read; see ``_plans``)
    templates: dict[str, Template] = field(default_factory=dict, compare=False)
    #: the same as header prefixes (``{"blocks":`` and the text), for :func:`plan_known`
    hints: dict[bytes, Hint] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, declaration: Declaration) -> Expected:
        """Precompute the checks for ``declaration``."""
        columns = {
            name: {c: (s.dtype, s.trailing, s.nullable) for c, s in spec.columns.items()}
            for name, spec in declaration.blocks.items()
        }
        aligned = {
            name: spec.aligned_with
            for name, spec in declaration.blocks.items()
            if spec.aligned_with is not None
        }
        tags = {key: spec.dtype for key, spec in declaration.meta.items()}
        return cls(declaration, columns, tags, aligned, expectations(columns))


@dataclass(frozen=True, slots=True)
class RecordView:
    """What a reader knows of record ``r`` before touching its frames."""

    r: int
    first: int
    n_frames: int
    declaration: Declaration
    system: Frame | None
    molrec_version: int | None
    expect: Expected
    #: the caches of the committed state the record was read in
    caches: Any = field(default=None, compare=False, repr=False)

    @property
    def path(self) -> str:
        """Where messages point: ``records[r].trajectory``."""
        return f"records[{self.r}].trajectory"


@dataclass(slots=True)
class Layout:
    """Per-frame facts of one record's trajectory, from the update headers.

    It may cover only the first :attr:`known` frames: resolving frame ``i``
    needs frames ``0..i`` only, so a random read scans no further. A layout
    is extended into a copy, never in place (other threads may hold it).
    """

    steps: list[int] = field(default_factory=list)
    times: list[float] | None = None
    metas: list[dict[str, Any]] = field(default_factory=list)
    #: block -> (ordinals of its updates, rows of each update)
    updates: dict[str, tuple[list[int], list[int]]] = field(default_factory=dict)
    boxes: tuple[list[int], list[Box]] = field(default_factory=lambda: ([], []))
    #: frames whose resolved-frame rules (row counts, ids, targets) held with
    #: every block decoded: records never change, so they are not checked again
    checked: set[int] = field(default_factory=set)
    #: decoded per-step meta of frames read so far (immutable values only)
    meta_values: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: how each checked frame resolves (see :func:`resolve`)
    recipes: dict[int, Any] = field(default_factory=dict)
    #: checked plans of the updates read so far (see ``_plans``), by frame
    plans: dict[int, UpdatePlan] = field(default_factory=dict)
    #: checked frames that resolve from one planned update of plain blocks:
    #: everything :func:`quick_frame` needs but the value (see :data:`Quick`)
    quick: dict[int, Quick] = field(default_factory=dict)
    #: per frame what :class:`HeldFrames` holds beside the bytes, when a walk
    #: checked every update against a plan and every frame's meta is held
    #: immutable: a later walk of the record only reads the values (:func:`rewalk`)
    walked: Walked | None = None

    @property
    def known(self) -> int:
        """Frames scanned so far."""
        return len(self.steps)

    def copy(self) -> Layout:
        """An independent copy to extend."""
        return Layout(
            list(self.steps),
            None if self.times is None else list(self.times),
            list(self.metas),
            {name: (list(o), list(n)) for name, (o, n) in self.updates.items()},
            (list(self.boxes[0]), list(self.boxes[1])),
            set(self.checked),
            dict(self.meta_values),
            dict(self.recipes),
            dict(self.plans),
            dict(self.quick),
            self.walked,
        )

    def latest(self, name: str, i: int) -> tuple[int, int] | None:
        """``(ordinal, rows)`` of the update of ``name`` in force at ``i``; ``None``: absent."""
        entry = self.updates.get(name)
        if entry is None:
            return None
        u = bisect_right(entry[0], i) - 1
        return None if u < 0 else (entry[0][u], entry[1][u])

    def box(self, i: int) -> Box | None:
        """The cell in force at ``i`` (carry-forward), or ``None``."""
        u = bisect_right(self.boxes[0], i) - 1
        return None if u < 0 else self.boxes[1][u]


# -- headers --------------------------------------------------------------------------------


def _header(value: Any, where: str) -> dict[str, Any]:
    view = memoryview(value)
    if len(view) < 8:
        raise FrameBytesError(
            f"frame bytes are {len(view)} bytes; the prefix alone is 8", path=where
        )
    magic, length = _PREFIX.unpack_from(view)
    if magic != b"MRF1" or 8 + length > len(view):
        raise FrameBytesError("not MRF1 frame bytes (magic or header length)", path=where)
    try:
        header = _JSON.decode(bytes(view[8 : 8 + length]).decode())
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise FrameBytesError(f"header is not UTF-8 JSON: {exc}", path=where) from None
    if not isinstance(header, dict) or not isinstance(header.get("blocks"), dict):
        raise FrameBytesError("header is an object with blocks", path=where)
    unknown = set(header) - _UPDATE_KEYS
    if unknown:
        raise FrameBytesError(f"unknown header keys {sorted(unknown)}", path=where)
    return header


def _no_constant(token: str) -> Any:
    raise ValueError(f"bare {token} is not JSON")


#: One decoder for every header (``json.loads`` with options builds one per call).
_JSON: Final = json.JSONDecoder(parse_constant=_no_constant)


#: The C scanner ``_JSON.decode`` runs (typeshed types its argument as the scanner itself).
_SCAN: Final = json.scanner.make_scanner(_JSON)  # type: ignore[arg-type]


def loads(raw: Any) -> Any:
    """Strict JSON (no bare ``NaN``/``Infinity``) from UTF-8 bytes or a buffer."""
    text = bytes(raw).decode()
    try:
        value, stop = _SCAN(text, 0)
    except (StopIteration, ValueError):
        stop = -1
    if stop != len(text):  # whitespace around it, or not JSON: decode says which
        return _JSON.decode(text)
    return value


def _meta(header: dict[str, Any], declared: dict[str, str], where: str) -> dict[str, Any]:
    raw = header.get("meta", {})
    if not isinstance(raw, dict):
        raise InvalidRecord("an update's meta is an object", path=f"{where}.meta")
    tags = header.get("meta_types")
    if tags is not None and tags != {k: declared.get(k) for k in tags}:
        raise InvalidRecord(
            f"meta_types {tags} disagree with the declared per-step tags {declared}",
            path=f"{where}.meta_types",
        )
    if raw.keys() != declared.keys():
        raise InvalidRecord(
            f"an update carries every declared per-step key and no other: has {sorted(raw)},"
            f" declared {sorted(declared)} (lmdb.md §5)",
            path=f"{where}.meta",
        )
    return raw  # values are decoded (and refused if malformed) when their frame is read


def decode_step_meta(raw: dict[str, Any], tags: dict[str, str], where: str) -> dict[str, Any]:
    """Fresh held values of a per-step meta document with the declared keys."""
    return {
        key: decode_meta(tag, raw[key], path=f"{where}.meta.{key}") for key, tag in tags.items()
    }


_I64_MAX: Final = 2**63 - 1
_I64_MIN: Final = -(2**63)
#: Checked ``blocks`` texts kept as hints per declaration (as ``_plans`` keeps templates).
_MAX_HINTS: Final = 4096
_IMMUTABLE: Final = (float, int, str, bool, type(None))


def step_meta(layout: Layout, i: int, tags: dict[str, str], where: str) -> dict[str, Any]:
    """Frame ``i``'s per-step meta, decoded once when its values are immutable
    (a :class:`Frame` hands out copies of its meta, so frames may share it)."""
    known = layout.meta_values.get(i)
    if known is not None:
        return known
    values = _plain_reals(layout.metas[i], tags)
    if values is not None:
        layout.meta_values[i] = values
        return values
    values = decode_step_meta(layout.metas[i], tags, where)
    if all(type(v) in _IMMUTABLE for v in values.values()):
        layout.meta_values[i] = values
    return values


def _plain_reals(raw: dict[str, Any], tags: dict[str, str]) -> dict[str, Any] | None:
    """The values when every key is an ``f64`` held as a finite JSON real (what
    :func:`decode_meta` returns them as, unchanged); ``None`` for anything else."""
    values = {}
    for key, tag in tags.items():
        value = raw[key]
        if tag != "f64" or type(value) is not float or value - value != 0.0:  # not finite
            return None
        values[key] = value
    return values


class _Scan:
    """Folds update headers into a :class:`Layout`, refusing what a reader refuses."""

    def __init__(self, view: RecordView, layout: Layout | None = None) -> None:
        self.view = view
        self.layout = Layout() if layout is None else layout
        self.prefix = view.path

    def add(self, k: int, header: dict[str, Any]) -> None:
        view, layout = self.view, self.layout
        where = f"{self.prefix}[{k}]"
        for name, entry in header["blocks"].items():
            if name not in view.declaration.blocks:
                raise InvalidRecord(
                    f"the update carries block {name!r}, which sequence_schema does not declare"
                    f" (lmdb.md §5); declared: {sorted(view.declaration.blocks)}",
                    path=f"{where}/{name}",
                )
            count = entry.get("count") if isinstance(entry, dict) else None
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise FrameBytesError(
                    "a block's count is a non-negative integer", path=f"{where}/{name}"
                )
            ordinals, rows = layout.updates.setdefault(name, ([], []))
            ordinals.append(k)
            rows.append(count)
        self._step_time(k, header, where)
        layout.metas.append(_meta(header, view.expect.tags, where))
        if header.get("box") is not None:
            self._box(k, Box.from_dict(header["box"], path=f"{where}/box"), where)

    def add_planned(self, k: int, header: dict[str, Any], plan: UpdatePlan) -> None:
        """:meth:`add` for an update whose blocks its plan has checked (declared
        names, integer counts): only the step, time, meta and cell remain."""
        layout = self.layout
        where = f"{self.prefix}[{k}]"
        for name, (count, _) in plan.blocks.items():
            ordinals, rows = layout.updates.setdefault(name, ([], []))
            ordinals.append(k)
            rows.append(count)
        self._step_time(k, header, where)
        layout.metas.append(_meta(header, self.view.expect.tags, where))
        if header.get("box") is not None:
            self._box(k, Box.from_dict(header["box"], path=f"{where}/box"), where)

    def add_plain(self, k: int, header: dict[str, Any], plan: UpdatePlan) -> None:
        """:meth:`add_planned` when the header is only ``meta`` and an integer
        ``step`` above the last one, frame ``k > 0`` and no times: what those
        checks would find, found without them; anything else goes the long way."""
        layout = self.layout
        step = header.get("step")
        raw = header.get("meta")
        steps = layout.steps
        if (
            len(header) != 2
            or type(step) is not int
            or not steps
            or not steps[-1] < step <= _I64_MAX
            or layout.times is not None
            or type(raw) is not dict
            or raw.keys() != self.view.expect.tags.keys()
        ):
            self.add_planned(k, header, plan)
            return
        updates = layout.updates
        for name, (count, _) in plan.blocks.items():
            ordinals, rows = updates.setdefault(name, ([], []))
            ordinals.append(k)
            rows.append(count)
        steps.append(step)
        layout.metas.append(raw)

    def _step_time(self, k: int, header: dict[str, Any], where: str) -> None:
        layout = self.layout
        if "step" not in header:
            raise InvalidRecord(
                "a trajectory update carries its step (lmdb.md §5)", path=f"{where}.step"
            )
        step = decode_element("i64", header["step"], path=f"{where}.step")
        if layout.steps and step <= layout.steps[-1]:
            raise InvalidRecord(
                f"step {step} is not above the previous step {layout.steps[-1]} (lmdb.md §5)",
                path=f"{where}.step",
            )
        layout.steps.append(step)
        has_time = header.get("time") is not None
        if k == 0:
            layout.times = [] if has_time else None
        elif has_time != (layout.times is not None):
            raise InvalidRecord(
                "time is all-or-nothing within a record (lmdb.md §5)", path=f"{where}.time"
            )
        if layout.times is not None:
            layout.times.append(decode_element("f64", header["time"], path=f"{where}.time"))

    def _box(self, k: int, box: Box, where: str) -> None:
        ordinals, boxes = self.layout.boxes
        if boxes and boxes[0].cell_defined != box.cell_defined:
            raise InvalidRecord(
                "cell updates of one record disagree on cell_defined"
                " (lmdb.md §5, trajectory.md §4)",
                path=f"{where}/box",
            )
        ordinals.append(k)
        boxes.append(box)


def _values(
    txn: Any, view: RecordView, start: int = 0, stop: int | None = None
) -> Iterator[tuple[int, Any]]:
    """``(k, value)`` for frames ``start <= k < stop`` in order; a missing key is refused."""
    stop = view.n_frames if stop is None else stop
    if start >= stop:
        return
    base = view.first
    cursor = txn.cursor()
    k = start  # the frame whose key comes next
    if cursor.set_key(frame_key(base + start)):
        pack = _U64BE.pack
        for key, value in cursor.iternext():  # from the key found on
            try:
                expected = b"f" + pack(base + k)
            except struct.error:
                expected = frame_key(base + k)  # refuses the ordinal outside u64
            if key != expected:
                break
            yield k, value
            k += 1
            if k == stop:
                return
    raise InvalidRecord(
        f"frame key f‖{base + k} is missing inside the record's range (lmdb.md §5)",
        path=f"{view.path}[{k}]",
    )


def copies(txn: Any, view: RecordView) -> list[bytes]:
    """Every value of the record's trajectory in order, copied out of ``txn``
    (frames outlive it); a missing key is refused as :func:`_values` refuses it."""
    get, pack, first = txn.get, _U64BE.pack, view.first
    try:
        return [bytes(get(b"f" + pack(j))) for j in range(first, first + view.n_frames)]
    except (TypeError, struct.error):  # bytes(None): a key is missing; or outside u64
        return [bytes(value) for _, value in _values(txn, view)]


def scan(txn: Any, view: RecordView, upto: int, layout: Layout | None = None) -> Layout:
    """A layout covering frames ``0..upto`` of ``view``'s trajectory: ``layout``
    (copied) extended from its update headers in ``txn``."""
    start = 0 if layout is None else layout.known
    folder = _Scan(view, None if layout is None else layout.copy())
    for k, value in _values(txn, view, start, upto + 1):
        folder.add(k, _scanned(bytes(value), view, folder.layout, k))
    return folder.layout


def _scanned(buf: bytes, view: RecordView, layout: Layout, k: int) -> dict[str, Any]:
    """Update ``k``'s header; its plan is kept too when it takes the fast path,
    so resolving the frame does not parse the header again."""
    planned = plan(buf, view.expect.fast, view.expect.templates)
    if planned is None:
        return _header(buf, f"{view.path}[{k}]")
    layout.plans[k] = planned[1]
    return planned[0]


# -- decoding blocks ------------------------------------------------------------------------


def _check_block(
    name: str, block: Block, expected: dict[str, tuple[str, tuple[int, ...], bool]], where: str
) -> None:
    columns = block.columns  # a plain dict: cheaper than the Mapping protocol
    if columns.keys() != expected.keys():
        raise InvalidRecord(
            f"block {name!r} has columns {sorted(columns)}; sequence_schema declares"
            f" {sorted(expected)}",
            path=where,
        )
    for column_name, (dtype, trailing, nullable) in expected.items():
        column = columns[column_name]
        if column.dtype != dtype or column.values.shape[1:] != trailing:
            raise InvalidRecord(
                f"column is {column.dtype}{list(column.trailing)}, declared"
                f" {dtype}{list(trailing)}",
                path=f"{where}/{column_name}",
            )
        if column.validity is not None and not nullable:
            raise InvalidRecord(
                "a mask on a column not declared nullable", path=f"{where}/{column_name}"
            )


def _decode_update(
    txn: Any, view: RecordView, layout: Layout, k: int, names: list[str]
) -> dict[str, Block]:
    """Blocks ``names`` of update ``k`` (viewing an owned copy of the value)."""
    j = view.first + k
    value = txn.get(frame_key(j))
    if value is None:
        where = f"{view.path}[{k}]"
        raise InvalidRecord("frame key missing inside the record's range (lmdb.md §5)", path=where)
    buf = bytes(value)
    known = layout.plans.get(k)
    if known is None or known.size != len(buf):
        planned = plan(buf, view.expect.fast, view.expect.templates)
        if planned is None:
            return _decode_general(buf, view, k, names)
        known = planned[1]
        layout.plans[k] = known  # one C call: safe beside readers in other threads
    return materialize(known, buf, names)


def _decode_general(buf: bytes, view: RecordView, k: int, names: list[str]) -> dict[str, Block]:
    """The general decoder: every form of lmdb.md §6, refusing with the rule's message."""
    where = f"{view.path}[{k}]"
    try:
        blocks, _ = decode_blocks(buf)
    except FrameBytesError as exc:
        raise FrameBytesError(
            exc.message, path=f"{where}/{exc.path}" if exc.path else where
        ) from None
    out = {}
    for name in names:
        block = blocks[name]
        _check_block(name, block, view.expect.columns[name], f"{where}/{name}")
        out[name] = block
    return out


# -- rules on a resolved frame --------------------------------------------------------------


def _check_counts(view: RecordView, counts: Mapping[str, int], where: str) -> None:
    system = None if view.system is None else view.system.blocks
    for name, target in view.expect.aligned.items():
        if name in counts and counts.get(target) != counts[name]:
            raise InvalidRecord(
                f"aligned block {name!r} has {counts[name]} rows but its target {target!r} has"
                f" {counts.get(target, 'none (absent)')} (trajectory.md §7.2)",
                path=f"{where}/{name}",
            )
    if system is None:
        return
    for name, count in counts.items():
        if name in system and system[name].count != count:
            raise InvalidRecord(
                f"trajectory block {name!r} has {count} rows but system/{name} has"
                f" {system[name].count}: same-named blocks align 1:1 (collection.md §3)",
                path=f"{where}/{name}",
            )


def _check_ids(view: RecordView, blocks: Mapping[str, Block], where: str) -> None:
    if view.system is None:
        return
    system = view.system.blocks
    for name, block in blocks.items():
        mine = block.columns.get("id")
        theirs = system[name].columns.get("id") if name in system else None
        if mine is not None and theirs is not None and not mine.same_values(theirs):
            raise InvalidRecord(
                f"trajectory {name}/id differs from system/{name}/id (trajectory.md §1.5)",
                path=f"{where}/{name}/id",
            )


def _check_targets(
    view: RecordView, blocks: Mapping[str, Block], counts: Mapping[str, int], where: str
) -> None:
    if not any(block.targets for block in blocks.values()):
        return
    # Only the target's row count matters: stand-ins keep undecoded targets cheap.
    resolved = {name: Block._trusted({}, count) for name, count in counts.items()} | dict(blocks)
    sections = None if view.system is None else {"system": view.system.blocks}
    for name, block in blocks.items():
        try:
            check_block_targets(name, block, resolved, sections)
        except InvalidRecord as exc:
            raise InvalidRecord(exc.message, path=f"{where}/{exc.path}") from None


def check_v1_frame(blocks: Mapping[str, Block], where: str) -> None:
    """Refuse what a version-1 collection would need converted (forcefield.md §11.3).

    Chosen: the conversion of relation parameters and angle values is not
    implemented; §11 allows "convert exactly, or refuse", so such frames are
    refused and every other frame reads unchanged.
    """
    for name, block in blocks.items():
        angles = {
            c for c in block if c in _ANGLE_VALUES or (c.startswith("phase") and c[5:].isdigit())
        }
        params = set(block) - _RELATION_PLAIN if name in _RELATIONS else set()
        if angles or params or (name == "impropers" and block.count):
            raise InvalidRecord(
                f"block {name!r} of a version-1 collection carries"
                f" {sorted(angles | params) or 'rows'}"
                " that forcefield.md §11.3 converts; this reader refuses instead of converting",
                path=f"{where}/{name}",
            )


# -- resolving ------------------------------------------------------------------------------


def resolve(
    txn: Any, view: RecordView, layout: Layout, i: int, names: list[str] | None = None
) -> Frame:
    """Frame ``i`` resolved by carry-forward: blocks ``names`` (all when ``None``),
    the cell in force, its step, time and meta (trajectory.md §10)."""
    recipe = layout.recipes.get(i) if names is None else None
    if recipe is not None:
        return _replay(txn, view, layout, i, recipe)
    where = f"{view.path}[{i}]"
    counts: dict[str, int] = {}
    wanted: dict[int, list[str]] = {}
    for name in view.declaration.blocks:
        latest = layout.latest(name, i)
        if latest is None:
            continue
        counts[name] = latest[1]
        if names is None or name in names:
            wanted.setdefault(latest[0], []).append(name)
    checked = i in layout.checked
    if not checked:
        _check_counts(view, counts, where)
    decoded: dict[str, Block] = {}
    for k, block_names in wanted.items():
        decoded.update(_decode_update(txn, view, layout, k, block_names))
    blocks = {name: decoded[name] for name in view.declaration.blocks if name in decoded}
    if not checked:
        _check_ids(view, blocks, where)
        _check_targets(view, blocks, counts, where)
        if view.molrec_version == 1:
            check_v1_frame(blocks, where)
        if names is None:
            layout.checked.add(i)  # a set: safe to share between threads
    meta = step_meta(layout, i, view.expect.tags, where)
    time = None if layout.times is None else layout.times[i]
    tags = dict(view.expect.tags)
    if names is None and i in layout.checked:
        pairs = tuple((k, tuple(block_names)) for k, block_names in wanted.items())
        layout.recipes[i] = (pairs, tuple(blocks), layout.box(i), layout.steps[i], time)
        quick = _quick(view, layout, i, pairs)
        if quick is not None:
            layout.quick[i] = quick  # one dict store: safe beside readers in other threads
    return Frame._trusted(blocks, meta, tags, layout.box(i), layout.steps[i], time)


#: A checked frame read again from one value: its key, the value's size, per
#: block ``(name, count, ((column, dtype, numpy dtype, items, offset), ...))``
#: with offsets from the value's start, then meta, tags, cell, step and time.
Quick = tuple[bytes, int, tuple[Any, ...], dict[str, Any], dict[str, str], Any, int, Any]


def _quick(
    view: RecordView, layout: Layout, i: int, pairs: tuple[tuple[int, tuple[str, ...]], ...]
) -> Quick | None:
    """Frame ``i``'s :data:`Quick` entry when it resolves from one planned update
    whose blocks are all plain and its meta is held (immutable); else ``None``."""
    if len(pairs) != 1:
        return None
    k, names = pairs[0]
    known = layout.plans.get(k)
    meta = layout.meta_values.get(i)
    if known is None or meta is None or not known.plain.issuperset(names):
        return None
    start = known.start
    blocks = tuple(
        (
            name,
            known.blocks[name][0],
            tuple((c[0], c[1], c[2], c[3], start + c[5]) for c in known.blocks[name][1]),
        )
        for name in names
    )
    time = None if layout.times is None else layout.times[i]
    key = frame_key(view.first + k)
    return key, known.size, blocks, meta, view.expect.tags, layout.box(i), layout.steps[i], time


def quick_frame(value: bytes, quick: Quick) -> Frame:
    """The frame of a :data:`Quick` entry from its value (``len(value)`` is the
    entry's size: the bytes its plan checked; records never change)."""
    blocks = {}
    for name, count, columns in quick[2]:
        blocks[name] = Block._trusted(
            {
                c: Column._trusted(np.frombuffer(value, np_dtype, items, at), dtype)
                for c, dtype, np_dtype, items, at in columns
            },
            count,
        )
    return Frame._trusted(blocks, quick[3], quick[4], quick[5], quick[6], quick[7])


#: How a checked frame resolves: ``((update, block names), ...)``, block order,
#: cell, step and time.
Recipe = tuple[tuple[tuple[int, tuple[str, ...]], ...], tuple[str, ...], Any, int, Any]


def _replay(txn: Any, view: RecordView, layout: Layout, i: int, recipe: Recipe) -> Frame:
    """Frame ``i`` again, from its recipe: its rules held when it was first resolved."""
    pairs, order, box, step, time = recipe
    if len(pairs) == 1:
        k, names = pairs[0]
        known = layout.plans.get(k)
        value = None if known is None else txn.get(frame_key(view.first + k))
        if value is not None and known is not None and known.size == len(value):
            blocks = materialize(known, bytes(value), names)  # the plan checked these bytes
        else:
            blocks = _decode_update(txn, view, layout, k, list(names))
    else:
        decoded: dict[str, Block] = {}
        for k, block_names in pairs:
            decoded.update(_decode_update(txn, view, layout, k, list(block_names)))
        blocks = {name: decoded[name] for name in order}
    meta = layout.meta_values.get(i) or step_meta(layout, i, view.expect.tags, "")
    return Frame._trusted(blocks, meta, view.expect.tags, box, step, time)


def replay(txn: Any, view: RecordView, layout: Layout, i: int) -> Frame:
    """Frame ``i``, whole, from its recipe in ``layout`` (``i in layout.recipes``):
    its rules held when it was first resolved."""
    return _replay(txn, view, layout, i, layout.recipes[i])


def walk(txn: Any, view: RecordView) -> tuple[Layout, HeldFrames]:
    """Every frame of the record in one pass (each value read and checked once), and its layout.

    The resolved-frame rules run where they can change: row counts, ``id``
    equality and row references only at frames that update a block, and row
    counts and references not again at an update with the same checked
    ``blocks`` text as the one before it (same blocks, same counts, no
    references of its own: the resolved frame's counts are unchanged). Runs
    of such updates with plain headers are checked in one loop
    (:func:`_plain_run`). The frames are held as checked bytes and built when
    first asked for.
    """
    declared = list(view.declaration.blocks)
    tags = view.expect.tags
    layout = Layout()
    rules = bool(view.expect.aligned) or view.system is not None
    held = HeldFrames(copies(txn, view), tags)
    walker = _Walker(view, layout)
    sources: dict[str, int] = {}  #: block -> the update it resolves from
    counts: dict[str, int] = {}
    general: dict[str, Block] = {}  #: resolved blocks decoded by the general decoder
    short = view.molrec_version != 1  # version 1's rule reads every update's blocks
    n = view.n_frames
    k, sources = _first_run(walker, held, counts) if short and n else (0, sources)
    while k < n:
        if short:
            k, sources = _plain_run(walker, k, sources, held)
            if k == n:
                break
        names, same = walker.decode(held.bufs[k], k, held)
        where = f"{view.path}[{k}]"
        if names:
            if same:
                sources = (
                    dict.fromkeys(sources, k)
                    if len(names) == len(sources)
                    else (sources | dict.fromkeys(names, k))
                )
            else:
                for name in names:
                    counts[name] = walker.counts[name]
                    block = walker.blocks.get(name)
                    if block is None:
                        general.pop(name, None)
                    else:
                        general[name] = block
                sources = {
                    name: k if name in names else sources[name]
                    for name in declared
                    if name in names or name in sources
                }
                if rules:
                    _check_counts(view, {name: counts[name] for name in sources}, where)
                _check_targets(view, general, counts, where)
            if walker.blocks and view.system is not None:
                _check_ids(view, walker.blocks, where)
            if view.molrec_version == 1:
                check_v1_frame(walker.blocks, where)
        held.sources.append(sources)
        held.metas.append(step_meta(layout, k, tags, where))
        box = layout.box(k) if layout.boxes[0] else None
        if box is not None:
            held.boxes[k] = box
        k += 1
    layout.checked.update(range(n))
    held.plans = list(map(layout.plans.get, range(n)))
    held.steps, held.times = layout.steps, layout.times
    if len(layout.plans) == n and len(layout.meta_values) == n:
        layout.walked = held.walked()  # never changed from here on
    return layout, held


def _plain_run(
    walker: _Walker, k: int, sources: dict[str, int], held: HeldFrames
) -> tuple[int, dict[str, int]]:
    """Updates ``k, k + 1, ...`` while each is the common one of a record (see
    :func:`plain_headers`): the previous update's ``blocks`` text (checked
    then), a header of only ``meta`` and ``step``, no times and no cell in the
    record so far, no ``id`` column; checked in one loop and folded into the
    layout at once. Returns where the run stopped and the sources in force
    there (the resolved-frame rules do not change inside a run: same blocks,
    same counts, no references of their own)."""
    hint, layout = walker.hint, walker.folder.layout
    steps = layout.steps
    if hint is None or walker.ids or not steps or layout.times is not None or layout.boxes[0]:
        return k, sources
    run = plain_headers(held.bufs, k, hint, steps[-1], tuple(walker.view.expect.tags))
    return _fold_run(walker, k, sources, held, run)


def _first_run(
    walker: _Walker, held: HeldFrames, counts: dict[str, int]
) -> tuple[int, dict[str, int]]:
    """:func:`_plain_run` from update 0, when its ``blocks`` text was checked
    before (:func:`known_hint`), holds no ``id`` column and its header is
    plain: its checks are then a run's with any i64 step (no times, no cell,
    the declared per-step keys), and the rules of a first update of plain
    blocks are its row counts against the system and the aligned blocks.
    Returns where the run stopped (0: update 0 goes the long way) and the
    sources in force there; ``counts`` gets update 0's row counts."""
    view, layout = walker.view, walker.folder.layout
    hint = known_hint(held.bufs[0], view.expect.hints)
    if hint is None or hint.template.ids:
        return 0, {}
    run = plain_headers(held.bufs, 0, hint, _I64_MIN - 1, tuple(view.expect.tags))
    if not run[0]:
        return 0, {}
    names = hint.template.blocks
    first = {name: count for name, (count, _) in names.items()}
    if view.expect.aligned or view.system is not None:
        _check_counts(view, first, f"{view.path}[0]")
    counts.update(first)
    for name in names:
        layout.updates[name] = ([], [])
    walker.hint, walker.counts = hint, first
    sources = {name: 0 for name in view.declaration.blocks if name in names}
    return _fold_run(walker, 0, sources, held, run)


def _fold_run(
    walker: _Walker,
    k: int,
    sources: dict[str, int],
    held: HeldFrames,
    run: tuple[list[int], list[dict[str, Any]], list[int]],
) -> tuple[int, dict[str, int]]:
    """Fold a run of checked plain updates from ``k`` (:func:`plain_headers`'s
    answer) into the layout and ``held``; where it stopped and the sources then."""
    got, raws, starts = run
    stop = k + len(got)
    if stop == k:
        return k, sources
    layout, hint = walker.folder.layout, walker.hint
    assert hint is not None  # a run is read against the hint
    steps, tags, template = layout.steps, walker.view.expect.tags, hint.template
    walker.last = _plans_of(layout, held.bufs, k, starts, template, walker.last)
    walker.blocks = {}
    steps.extend(got)
    layout.metas.extend(raws)
    for name, (count, _) in template.blocks.items():
        ordinals, rows = layout.updates[name]  # the previous update held the same blocks
        ordinals.extend(range(k, stop))
        rows.extend([count] * len(got))
    held.metas.extend(_run_metas(layout, k, raws, tags, walker.view.path))
    names = template.blocks
    if len(names) != len(sources):
        held.sources.extend(sources | dict.fromkeys(names, j) for j in range(k, stop))
        return stop, sources | dict.fromkeys(names, stop - 1)
    if tuple(sources) == tuple(names):
        held.sources.extend([None] * len(got))  # every block from the frame's own update
    else:
        held.sources.extend(dict.fromkeys(sources, j) for j in range(k, stop))
    return stop, dict.fromkeys(sources, stop - 1)


def _plans_of(
    layout: Layout,
    bufs: list[bytes],
    k: int,
    starts: list[int],
    template: Template,
    known: UpdatePlan | None,
) -> UpdatePlan | None:
    """The plans of updates ``k, k + 1, ...`` of a run (one object while the
    size and payload start repeat); returns the last."""
    plans = layout.plans
    for j, start in enumerate(starts, k):
        size = len(bufs[j])
        if known is None or known.size != size or known.start != start:
            known = UpdatePlan(size, start, template.blocks, template.plain)
        plans[j] = known
    return known


def _run_metas(
    layout: Layout, k: int, raws: list[dict[str, Any]], tags: dict[str, str], path: str
) -> list[dict[str, Any]]:
    """The held per-step meta of a run's frames: a document of finite ``f64``
    reals is held as parsed (what :func:`decode_meta` makes of it), any other
    is decoded (and refused if malformed) by :func:`step_meta`."""
    reals = all(tag == "f64" for tag in tags.values())
    values = layout.meta_values
    out = []
    for j, raw in enumerate(raws, k):
        if reals:
            for value in raw.values():
                if type(value) is not float or value - value != 0.0:  # not finite
                    break
            else:
                values[j] = raw
                out.append(raw)
                continue
        out.append(step_meta(layout, j, tags, f"{path}[{j}]"))
    return out


def rewalk(txn: Any, view: RecordView, layout: Layout) -> HeldFrames | None:
    """The record's frames again after a :func:`walk` in this process checked
    them all (``layout.walked``): each value is read in ``txn`` and held with
    its plan, whose checks held for these bytes (a record never changes once
    committed; the size is checked again). ``None`` when a value's size
    differs: :func:`walk` then checks it whole."""
    walked = layout.walked
    if walked is None:
        return None
    plans = layout.plans
    bufs = copies(txn, view)
    known: list[UpdatePlan | None] = [plans[k] for k in range(len(bufs))]
    for p, buf in zip(known, bufs, strict=True):
        if p is None or p.size != len(buf):
            return None
    held = HeldFrames(bufs, view.expect.tags, walked)
    held.plans = known
    return held


#: What :class:`HeldFrames` holds beside the bytes after a walk: per frame the
#: sources (block -> update ordinal; ``None``: every block from the frame's own
#: update), the meta, the cells (frame -> cell, where one is in force), the
#: steps and the times (``None``: none).
Walked = tuple[list[dict[str, int] | None], list[dict[str, Any]], dict[int, Box], list[int], Any]


class HeldFrames(LazyFrames):
    """A record's resolved frames as read and checked by :func:`walk`: each
    :class:`Frame` is built from the held bytes when first asked for (its
    arrays view a copy of the stored value, read-only), then kept."""

    __slots__ = ("_decoded", "boxes", "bufs", "metas", "plans", "sources", "steps", "tags", "times")

    def __init__(
        self, bufs: list[bytes], tags: dict[str, str], walked: Walked | None = None
    ) -> None:
        self.tags = tags
        #: the checked values, and their plans (``None``: decoded at once, see :meth:`hold`)
        self.bufs = bufs
        self.plans: list[UpdatePlan | None] = []
        self._decoded: dict[int, dict[str, Block]] = {}
        self._made: list[Frame | None] = [None] * len(bufs)
        self.sources: list[dict[str, int] | None] = []
        self.metas: list[dict[str, Any]] = []
        self.boxes: dict[int, Box] = {}
        self.steps: list[int] = []
        self.times: list[float] | None = None
        if walked is not None:
            self.sources, self.metas, self.boxes, self.steps, self.times = walked

    def walked(self) -> Walked:
        """What a :func:`rewalk` holds again beside the bytes."""
        return self.sources, self.metas, self.boxes, self.steps, self.times

    def hold(self, k: int, blocks: dict[str, Block]) -> None:
        """Keep update ``k``'s blocks, decoded at once (general or checked now)."""
        self._decoded[k] = blocks

    def _blocks(self, k: int) -> dict[str, Block]:
        blocks = self._decoded.get(k)
        if blocks is None:
            known = self.plans[k]
            assert known is not None  # an update without a plan was decoded at once
            blocks = materialize(known, self.bufs[k], known.blocks)
            self._decoded[k] = blocks  # one dict store: safe beside other threads
        return blocks

    def _build(self, k: int) -> Frame:
        sources = self.sources[k]
        if sources is None:
            blocks = dict(self._blocks(k))
        else:
            blocks = {name: self._blocks(u)[name] for name, u in sources.items()}
        time = None if self.times is None else self.times[k]
        return Frame._trusted(
            blocks, self.metas[k], self.tags, self.boxes.get(k), self.steps[k], time
        )


class _Walker:
    """Reads a record's updates in order, folding their headers into a
    layout; an update with the same ``blocks`` text as the one before skips
    the parse and check of that text (see :func:`plan_like`)."""

    __slots__ = ("blocks", "counts", "folder", "hint", "ids", "last", "view")

    def __init__(self, view: RecordView, layout: Layout) -> None:
        self.view = view
        self.folder = _Scan(view, layout)
        self.hint: Hint | None = None
        self.last: UpdatePlan | None = None
        self.ids = False
        #: the blocks of the last update decoded now (with ``id`` columns, or general)
        self.blocks: dict[str, Block] = {}
        #: row counts of the last update's blocks
        self.counts: dict[str, int] = {}

    def decode(self, buf: bytes, k: int, held: HeldFrames) -> tuple[Any, bool]:
        """Check update ``k`` and hold it in ``held``; its block names and
        whether its ``blocks`` text is the previous update's."""
        hint = self.hint
        if hint is not None:
            got = plan_like(buf, hint)
            if got is not None:
                header, start = got
                known = self.last
                if known is None or known.size != len(buf) or known.start != start:
                    known = self.last = UpdatePlan(
                        len(buf), start, hint.template.blocks, hint.template.plain
                    )
                self.folder.layout.plans[k] = known
                self.folder.add_plain(k, header, known)
                self._hold(known, buf, k, held)
                return known.blocks, True
        view, layout = self.view, self.folder.layout
        expect = view.expect
        planned = plan_known(buf, expect.hints) or plan_keyed(buf, expect.fast, expect.templates)
        if planned is None:
            self.hint = self.last = None
            blocks, header, _ = _decode_whole(buf, view, layout, k)
            self.folder.add(k, header)
            self.blocks = blocks
            self.counts = {name: block.count for name, block in blocks.items()}
            held.hold(k, blocks)
            return blocks, False
        header, known, self.hint = planned
        if self.hint is not None and len(expect.hints) < _MAX_HINTS:
            expect.hints.setdefault(self.hint.prefix, self.hint)  # one C call: thread-safe
        self.last = known
        layout.plans[k] = known
        self.folder.add_planned(k, header, known)
        self.ids = any(c[0] == "id" for _, cols in known.blocks.values() for c in cols)
        self.counts = {name: count for name, (count, _) in known.blocks.items()}
        self._hold(known, buf, k, held)
        return known.blocks, False

    def _hold(self, known: UpdatePlan, buf: bytes, k: int, held: HeldFrames) -> None:
        if self.ids or self.view.molrec_version == 1:  # their rules read the blocks now
            self.blocks = materialize(known, buf, known.blocks)
            held.hold(k, self.blocks)
        else:
            self.blocks = {}  # built from the held bytes when first asked for


def _decode_whole(
    buf: bytes, view: RecordView, layout: Layout, k: int
) -> tuple[dict[str, Block], dict[str, Any], UpdatePlan | None]:
    """Every block of update ``k``, its header (one parse serves the layout too)
    and its plan when it took the fast path."""
    planned = plan(buf, view.expect.fast, view.expect.templates)
    if planned is not None:
        header, known = planned
        layout.plans[k] = known
        return materialize(known, buf, known.blocks), header, known
    where = f"{view.path}[{k}]"
    try:
        blocks, header = decode_blocks(buf)
    except FrameBytesError as exc:
        raise FrameBytesError(
            exc.message, path=f"{where}/{exc.path}" if exc.path else where
        ) from None
    if not isinstance(header.get("blocks"), dict):
        raise FrameBytesError("header is an object with blocks", path=where)
    for name, block in blocks.items():
        if name in view.expect.columns:  # an undeclared block is refused by the layout scan
            _check_block(name, block, view.expect.columns[name], f"{where}/{name}")
    return blocks, header, None


# -- the joined view ------------------------------------------------------------------------


def join(system: Frame | None, frame: Frame) -> Frame:
    """System and trajectory frame as one frame (collection.md §3).

    A same-named block is one block whose columns are the union (system
    columns first; an ``id`` in both is equal and kept once); other blocks of
    either side pass through. Chosen where the spec is silent: meta is the
    system's document updated by the per-step values (a per-step key wins),
    and the cell is the trajectory's, else the system's.
    """
    if system is None:
        return frame
    blocks = dict(system.blocks)
    for name, block in frame.items():
        base = blocks.get(name)
        if base is None:
            blocks[name] = block
            continue
        columns = dict(base.columns) | {c: col for c, col in block.items() if c not in base}
        targets = (base.targets or {}) | (block.targets or {})
        blocks[name] = Block._trusted(
            columns, base.count, base.structural_shape, targets, base.attributes
        )
    meta = system.meta | frame.meta
    tags = system.meta_types | frame.meta_types
    box = frame.box if frame.box is not None else system.box
    return Frame._trusted(blocks, meta, tags, box, frame.step, frame.time)
