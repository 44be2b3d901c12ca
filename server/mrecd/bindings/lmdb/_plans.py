"""Update plans: what reading one trajectory update needs once it has been checked.

A plan is built from an update's frame bytes (lmdb.md §6) in one pass that
holds every block to the collection's declaration: block declared, no
structural shape, targets or attributes (those take the general decoder),
exactly the declared columns, each with the declared dtype, the shape
``[count, *trailing]``, an 8-aligned buffer inside the value, a mask only
where declared nullable, bool and mask bytes 0 or 1. Anything else makes
:func:`plan` return ``None`` and the caller takes the general decoder, which
refuses with the rule's message or accepts. The fast path so accepts a
subset of what the general path accepts, never more.

Records never change once committed, so a plan stays valid for the life of
the file: reading an update again is ``txn.get`` plus ``np.frombuffer`` at
the planned offsets, with no header parse and no re-validation.
"""

from __future__ import annotations

import json
import json.scanner
import operator
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import numpy as np

from ...model import Block, Column, numpy_dtype

__all__ = [
    "ColumnPlan",
    "Expect",
    "Hint",
    "Template",
    "UpdatePlan",
    "expectations",
    "known_hint",
    "materialize",
    "plain_headers",
    "plan",
    "plan_keyed",
    "plan_known",
    "plan_like",
]

_PREFIX = struct.Struct("<4sI")
_UPDATE_KEYS: Final = frozenset({"blocks", "meta", "meta_types", "step", "time", "box"})
_BLOCK_KEYS: Final = frozenset({"count", "structural_shape", "columns"})
_COLUMN_KEYS: Final = frozenset({"dtype", "shape", "offset", "validity"})

#: One declared column as the fast path checks it: dtype, trailing, nullable,
#: numpy dtype (``None`` for strings, which take the general decoder).
Expect = tuple[str, tuple[int, ...], bool, Any]
#: One planned column: name, dtype, numpy dtype, items, shape (``None`` when
#: one-dimensional), value offset and mask offset (``None``: no mask), both
#: from the start of the payload.
ColumnPlan = tuple[str, str, Any, int, tuple[int, ...] | None, int, int | None]
Blocks = dict[str, tuple[int, tuple[ColumnPlan, ...]]]


class UpdatePlan(NamedTuple):
    """A checked update: its size in bytes, where its payload starts and, per
    block, its row count and columns.

    A named tuple: one is made per update a walk reads, where a frozen
    dataclass's ``__init__`` cost as much as the update's other checks.
    """

    size: int
    start: int
    blocks: Blocks
    #: blocks whose columns are all one-dimensional without a mask (the short way)
    plain: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Template:
    """The checked form of one ``blocks`` header text: what an update with that
    text needs of its payload to be accepted without checking again."""

    blocks: Blocks
    need: int  #: payload bytes the buffers reach
    byte_checks: tuple[tuple[int, int], ...]  #: (offset, items) of bool and mask bytes
    #: blocks whose columns are all one-dimensional without a mask
    plain: frozenset[str] = frozenset()
    #: whether a block has an ``id`` column (its rules read the blocks at once)
    ids: bool = False


def expectations(
    columns: Mapping[str, Mapping[str, tuple[str, tuple[int, ...], bool]]],
) -> dict[str, dict[str, Expect]]:
    """The declared columns with the numpy dtype each buffer is viewed as."""
    return {
        block: {
            name: (dtype, trailing, nullable, None if dtype == "string" else numpy_dtype(dtype))
            for name, (dtype, trailing, nullable) in specs.items()
        }
        for block, specs in columns.items()
    }


def _no_constant(token: str) -> Any:
    raise ValueError(f"bare {token} is not JSON")


_JSON: Final = json.JSONDecoder(parse_constant=_no_constant)


def _offset(value: Any, nbytes: int, size: int) -> int | None:
    if type(value) is not int or value < 0 or value & 7 or value + nbytes > size:
        return None
    return value


def _bytes_ok(payload: memoryview, checks: tuple[tuple[int, int], ...]) -> bool:
    """Bool and mask buffers hold only the bytes 0 and 1 (lmdb.md §6.2)."""
    return all(
        not items or np.frombuffer(payload, np.uint8, items, at).max() <= 1 for at, items in checks
    )


def _column(entry: Any, name: str, want: Expect, count: int, size: int) -> ColumnPlan | None:
    dtype, trailing, nullable, np_dtype = want
    if np_dtype is None or type(entry) is not dict or not entry.keys() <= _COLUMN_KEYS:
        return None
    shape = entry.get("shape")
    if entry.get("dtype") != dtype or type(shape) is not list or len(shape) != 1 + len(trailing):
        return None
    if any(type(n) is not int for n in shape) or shape[0] != count or tuple(shape[1:]) != trailing:
        return None
    items = count
    for n in trailing:
        items *= n
    at = _offset(entry.get("offset"), items * np_dtype.itemsize, size)
    if at is None:
        return None
    mask_at = None
    if "validity" in entry:
        mask_at = _offset(entry["validity"], count, size)
        if not nullable or mask_at is None:
            return None
    return name, dtype, np_dtype, items, tuple(shape) if trailing else None, at, mask_at


def _block(
    entry: Any, expected: dict[str, Expect], size: int
) -> tuple[int, tuple[ColumnPlan, ...]] | None:
    if type(entry) is not dict or not entry.keys() <= _BLOCK_KEYS:
        return None
    count = entry.get("count")
    columns = entry.get("columns")
    if entry.get("structural_shape") is not None or type(count) is not int or count < 0:
        return None
    if type(columns) is not dict or columns.keys() != expected.keys():
        return None
    planned = []
    for name, want in expected.items():
        column = _column(columns[name], name, want, count, size)
        if column is None:
            return None
        planned.append(column)
    return count, tuple(planned)


def _template(
    blocks: dict[str, Any], expected: dict[str, dict[str, Expect]], size: int
) -> Template | None:
    """Check a header's ``blocks`` against a payload of ``size`` bytes."""
    planned = {}
    for name, entry in blocks.items():
        want = expected.get(name)
        block = None if want is None else _block(entry, want, size)
        if block is None:
            return None
        planned[name] = block
    need = 0
    checks = []
    for count, columns in planned.values():
        for _, dtype, np_dtype, items, _, at, mask_at in columns:
            need = max(need, at + items * np_dtype.itemsize)
            if dtype == "bool":
                checks.append((at, items))
            if mask_at is not None:
                need = max(need, mask_at + count)
                checks.append((mask_at, count))
    plain = frozenset(
        name
        for name, (_, columns) in planned.items()
        if all(shape is None and mask_at is None for _, _, _, _, shape, _, mask_at in columns)
    )
    ids = any(c[0] == "id" for _, columns in planned.values() for c in columns)
    return Template(planned, need, tuple(checks), plain, ids)


def _split_header(text: str) -> tuple[dict[str, Any], str | None]:
    """The parsed header and its ``blocks`` text (``None`` when ``blocks`` is not
    the first key of a compact header: then the text is parsed whole).

    Two headers with the same ``blocks`` text hold the same blocks, so one
    check serves both (what depends on the payload is checked per value).
    ``{"blocks":B,R}`` parses as ``B`` and ``{R}`` as long as ``R`` holds no
    ``blocks`` key of its own (JSON's last-one-wins would pick that one).
    """
    if text.startswith('{"blocks":'):
        try:
            blocks, stop = _JSON.raw_decode(text, 10)
            tail = text[stop:]
            rest = {} if tail == "}" else _JSON.decode("{" + tail[1:]) if tail[:1] == "," else None
        except (ValueError, RecursionError):
            rest = None
        if type(rest) is dict and "blocks" not in rest:
            rest["blocks"] = blocks
            return rest, text[10:stop]
    return _JSON.decode(text), None


def plan(
    buf: bytes, expected: dict[str, dict[str, Expect]], templates: dict[str, Template]
) -> tuple[dict[str, Any], UpdatePlan] | None:
    """``(header, plan)`` of a trajectory update held to ``expected``, or ``None``
    when anything is outside the fast path (the general decoder decides).

    ``templates`` holds checked ``blocks`` texts (bounded by the caller's
    choice of dict; entries are only added).
    """
    planned = plan_keyed(buf, expected, templates)
    return None if planned is None else planned[:2]


def plan_keyed(
    buf: bytes, expected: dict[str, dict[str, Expect]], templates: dict[str, Template]
) -> tuple[dict[str, Any], UpdatePlan, Hint | None] | None:
    """:func:`plan`, with a :class:`Hint` for the next update when its ``blocks``
    text was split off (``None`` otherwise)."""
    size = len(buf)
    if size < 8:
        return None
    magic, length = _PREFIX.unpack_from(buf)
    end = 8 + length
    start = end + (-end & 7)
    if magic != b"MRF1" or start > size:
        return None
    try:
        header, key = _split_header(buf[8:end].decode())
    except (ValueError, RecursionError):
        return None
    if type(header) is not dict or not header.keys() <= _UPDATE_KEYS:
        return None
    blocks = header.get("blocks")
    if type(blocks) is not dict:
        return None
    room = size - start
    template = None if key is None else templates.get(key)
    if template is None or template.need > room:
        template = _template(blocks, expected, room)
        if template is None:
            return None
        if key is not None and len(templates) < _MAX_TEMPLATES:
            templates[key] = template
    if template.byte_checks and not _bytes_ok(memoryview(buf)[start:], template.byte_checks):
        return None
    hint = None if key is None else Hint(('{"blocks":' + key).encode(), template)
    return header, UpdatePlan(size, start, template.blocks, template.plain), hint


class Hint(NamedTuple):
    """A checked ``blocks`` text as the bytes an update's header starts with
    (``{"blocks":`` and the text), and its template: the next update of a
    record usually carries the same text (a named tuple: one per record read)."""

    prefix: bytes
    template: Template


def plan_like(buf: bytes, hint: Hint) -> tuple[dict[str, Any], int] | None:
    """The header (without its ``blocks``) and payload start of an update whose
    ``blocks`` text is ``hint``'s, held to its template; ``None`` when the text
    differs or anything is outside the fast path (the caller plans it whole).

    The same text parses to the same blocks (a JSON object ends at its own
    closing brace), so only the rest of the header is parsed here, and the
    payload checks of :func:`plan` run as they would there.
    """
    prefix = hint.prefix
    cut = 8 + len(prefix)
    if not buf.startswith(prefix, 8) or len(buf) < cut + 1:
        return None
    length = _PREFIX.unpack_from(buf)[1]  # the magic is in the checked prefix's stead
    end = 8 + length
    start = end + (-end & 7)
    if buf[:4] != b"MRF1" or start > len(buf) or end <= cut:
        return None
    sep = buf[cut]
    try:
        if sep == _COMMA:
            text = "{" + buf[cut + 1 : end].decode()
            rest, stop = _SCAN(text, 0)  # the scanner decode runs, without its wrapping
            if stop != len(text):
                return None  # trailing text or whitespace: plan() decides
        elif sep == _CLOSE and end == cut + 1:
            rest = {}
        else:
            return None
    except (ValueError, RecursionError, StopIteration):
        return None
    if type(rest) is not dict or "blocks" in rest or not rest.keys() <= _UPDATE_KEYS:
        return None
    template = hint.template
    if template.need > len(buf) - start:
        return None
    if template.byte_checks and not _bytes_ok(memoryview(buf)[start:], template.byte_checks):
        return None
    return rest, start


def known_hint(buf: bytes, hints: Mapping[bytes, Hint]) -> Hint | None:
    """The hint of ``hints`` whose ``blocks`` text the header of ``buf``
    starts with, found without parsing it (see :func:`plan_known`; nothing of
    the rest of the header or the payload is checked here); ``None``: none."""
    if len(buf) < 18:
        return None
    end = buf.find(b',"meta":', 18, 8 + _PREFIX.unpack_from(buf)[1])
    return hints.get(buf[8:end]) if end > 0 else None


def plan_known(
    buf: bytes, hints: Mapping[bytes, Hint]
) -> tuple[dict[str, Any], UpdatePlan, Hint] | None:
    """:func:`plan_keyed`'s answer for an update whose ``blocks`` text is one
    of ``hints`` (checked before, in any record), found without parsing that
    text; ``None`` otherwise (the caller plans it whole).

    The candidate text ends where ``,"meta":`` first follows ``{"blocks":``
    in the header. A hint's text is a whole JSON value, so a header starting
    with it holds exactly those blocks, wherever the candidate was cut; the
    rest is :func:`plan_like`'s. A miss (another first key, a column named
    ``meta``) only costs the lookup.
    """
    hint = known_hint(buf, hints)
    if hint is None:
        return None
    got = plan_like(buf, hint)
    if got is None:
        return None
    template = hint.template
    return got[0], UpdatePlan(len(buf), got[1], template.blocks, template.plain), hint


def plain_headers(
    bufs: Sequence[bytes], k: int, hint: Hint, last: int, keys: tuple[str, ...]
) -> tuple[list[int], list[dict[str, Any]], list[int]]:
    """Steps, per-step meta documents and payload starts of updates ``bufs[k:]``
    up to the first one that is not the common plain update: ``hint``'s
    ``blocks`` text held to its template (the checks of :func:`plan_like`), a
    header of only ``meta`` with exactly ``keys`` in that order and an integer
    ``step`` above the one before (``last`` for update ``k``) and within i64.

    The rests of the headers (after the ``blocks`` text) are parsed as one
    JSON array when :func:`_joined` can show that each is one element of it;
    otherwise, or when any update of the run is not plain, one at a time
    (:func:`_each`, whose answer this always is).
    """
    rests, starts = _rests(bufs, k, hint)
    if not rests:
        return [], [], []
    joined = _joined(rests, last, keys)
    if joined is None:
        return _each(bufs, k, hint, last, keys)
    return joined[0], joined[1], starts


def _rests(bufs: Sequence[bytes], k: int, hint: Hint) -> tuple[list[bytes], list[int]]:
    """The header rests (between ``hint``'s text with its comma and the header's
    end, the closing brace included) and payload starts of updates ``k, k + 1,
    ...`` up to the first whose bytes fail :func:`_each`'s checks; one that
    does not end its header with ``}`` fails them there too (no JSON object
    text ends otherwise)."""
    prefix = hint.prefix
    cut = 8 + len(prefix)
    need = hint.template.need
    checks = hint.template.byte_checks
    unpack = _PREFIX.unpack_from
    rests: list[bytes] = []
    starts: list[int] = []
    for j in range(k, len(bufs)):
        buf = bufs[j]
        if not buf.startswith(prefix, 8) or not buf.startswith(b"MRF1"):
            break
        end = 8 + unpack(buf)[1]
        start = end + (-end & 7)
        if end <= cut or len(buf) - start < need or buf[cut] != _COMMA or buf[end - 1] != _CLOSE:
            break
        if checks and not _bytes_ok(memoryview(buf)[start:], checks):
            break
        rests.append(buf[cut + 1 : end])
        starts.append(start)
    return rests, starts


def _joined(
    rests: list[bytes], last: int, keys: tuple[str, ...]
) -> tuple[list[int], list[dict[str, Any]]] | None:
    """Steps and metas of header rests that are all plain (see :func:`plain_headers`),
    parsed as the one JSON text ``[{rest,{rest,...]``; ``None``: not shown.

    Each ``{rest`` is then exactly one element, parsed as it would be alone:
    no ``[`` (the outer array is the only one), no ``\\`` and no whitespace
    anywhere; every element a ``{step, meta}`` object with ``keys`` (none
    holding a quote, bracket, brace, comma, colon or whitespace) in its
    meta, and exactly as many ``"`` as those key strings need, so every
    string is one of those keys and none spans a joint. At each joint ``,{``
    then stands outside strings, where only the outer array takes it (an
    object wants a key after a comma), so the joints split elements; ``n``
    rests and ``n`` elements leave one element per rest.
    """
    n = len(rests)
    raw = b",{".join(rests)
    quotes = 2 * (2 + len(keys))
    if not _safe(keys) or raw.count(b'"') != n * quotes:
        return None
    if len(raw.translate(None, _UNSAFE)) != len(raw):
        return None
    try:
        text = "[{" + raw.decode() + "]"
        parsed, stop = _SCAN(text, 0)
        steps = [rest["step"] for rest in parsed]
        metas = [rest["meta"] for rest in parsed]
    except (ValueError, RecursionError, StopIteration, TypeError, KeyError):
        return None
    if stop != len(text) or len(parsed) != n or set(map(len, parsed)) != {2}:
        return None
    if set(map(type, steps)) != {int} or set(map(type, metas)) != {dict}:
        return None
    if set(map(tuple, metas)) != {keys} or not last < steps[0] or steps[-1] > _I64_MAX:
        return None
    if not all(map(operator.lt, steps, steps[1:])):
        return None
    return steps, metas


def _safe(keys: tuple[str, ...]) -> bool:
    """Whether per-step keys can be told apart in a joined text (see :func:`_joined`)."""
    known = _SAFE_KEYS.get(keys)
    if known is None:
        known = not any(c in _KEY_UNSAFE or c.isspace() for key in keys for c in key)
        if len(_SAFE_KEYS) < _MAX_TEMPLATES:
            _SAFE_KEYS[keys] = known
    return known


def _each(
    bufs: Sequence[bytes], k: int, hint: Hint, last: int, keys: tuple[str, ...]
) -> tuple[list[int], list[dict[str, Any]], list[int]]:
    """:func:`plain_headers` one update at a time: the checks are
    :func:`plan_like`'s and the plain-header ones, without a call and its
    tuples per update."""
    prefix = hint.prefix
    cut = 8 + len(prefix)
    need = hint.template.need
    checks = hint.template.byte_checks
    steps: list[int] = []
    metas: list[dict[str, Any]] = []
    starts: list[int] = []
    for j in range(k, len(bufs)):
        buf = bufs[j]
        if not buf.startswith(prefix, 8) or not buf.startswith(b"MRF1"):
            break
        end = 8 + _PREFIX.unpack_from(buf)[1]
        start = end + (-end & 7)
        if end <= cut or len(buf) - start < need or buf[cut] != _COMMA:
            break
        try:
            text = "{" + buf[cut + 1 : end].decode()
            rest, stop = _SCAN(text, 0)
        except (ValueError, RecursionError, StopIteration):
            break
        if stop != len(text) or type(rest) is not dict or len(rest) != 2:
            break
        step, meta = rest.get("step"), rest.get("meta")
        if type(step) is not int or not last < step <= _I64_MAX:
            break
        if type(meta) is not dict or tuple(meta) != keys:
            break
        if checks and not _bytes_ok(memoryview(buf)[start:], checks):
            break
        last = step
        steps.append(step)
        metas.append(meta)
        starts.append(start)
    return steps, metas, starts


_I64_MAX: Final = 2**63 - 1


#: The C scanner ``decode`` runs (typeshed types its argument as the scanner itself).
_SCAN: Final = json.scanner.make_scanner(_JSON)  # type: ignore[arg-type]
_COMMA: Final = ord(",")
_CLOSE: Final = ord("}")
#: Bytes that keep header rests from being parsed joined (see :func:`_joined`).
_UNSAFE: Final = b" \t\n\r[\\"
_KEY_UNSAFE: Final = frozenset('"\\[]{},:')
#: per-step key tuples -> whether :func:`_joined` may parse their headers joined
_SAFE_KEYS: dict[tuple[str, ...], bool] = {}


#: Distinct ``blocks`` texts kept per declaration (one per row count and layout).
_MAX_TEMPLATES: Final = 4096


def materialize(plan: UpdatePlan, buf: bytes, names: Iterable[str]) -> dict[str, Block]:
    """Blocks ``names`` of the update ``plan`` describes, viewing ``buf`` (read-only)."""
    out = {}
    start = plan.start
    for name in names:
        count, columns = plan.blocks[name]
        if name in plan.plain:
            out[name] = Block._trusted(
                {
                    c[0]: Column._trusted(np.frombuffer(buf, c[2], c[3], start + c[5]), c[1])
                    for c in columns
                },
                count,
            )
            continue
        decoded = {}
        for column, dtype, np_dtype, items, shape, at, mask_at in columns:
            values = np.frombuffer(buf, np_dtype, items, start + at)
            if shape is not None:
                values = values.reshape(shape)
            mask = None
            if mask_at is not None:
                mask = np.frombuffer(buf, np.bool_, count, start + mask_at)
            decoded[column] = Column._trusted(values, dtype, mask)
        out[name] = Block._trusted(decoded, count)
    return out
