"""``Frame``: named blocks, a typed meta document and an optional box (frame.md §5, §10).

A frame that is a trajectory update also carries its ``step`` (i64) and,
when the run has times, its ``time`` (f64), as MRF1 frame bytes do.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InvalidRecord
from ._block import Block
from ._box import Box
from ._typed import (
    check_tag,
    coerce_element,
    coerce_meta,
    decode_element,
    decode_meta,
    encode_element,
    encode_meta,
    infer_tag,
    meta_equal,
    read_untagged,
)

__all__ = [
    "META_TYPES_KEY",
    "Frame",
    "check_block_targets",
    "check_frame_targets",
    "decode_meta_document",
]

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1

#: The reserved attribute that maps every meta key to its tag.
META_TYPES_KEY = "_meta_types"

BlocksLike = Mapping[str, "Block | Mapping[str, Any]"]


def _as_block(name: str, value: Any, path: str | None) -> Block:
    if type(value) is dict and type(name) is str and name and "/" not in name and name != "box":
        return Block(value, path=f"{path}/{name}" if path else name)  # the common input first
    where = f"{path}/{name}" if path else name
    if not isinstance(name, str) or not name or "/" in name:
        raise InvalidRecord(
            f"block name {name!r} must be a non-empty string without '/'", path=path
        )
    if name == "box":
        raise InvalidRecord(
            "'box' names the cell and cannot name a block (frame.md §5)", path=where
        )
    if isinstance(value, Block):
        return value
    if isinstance(value, Mapping):
        return Block(value, path=where)
    raise InvalidRecord(f"block {name!r} must be a Block or a mapping of columns", path=where)


def _as_box(value: Any, path: str | None) -> Box | None:
    if value is None or isinstance(value, Box):
        return value
    where = f"{path}/box" if path else "box"
    if isinstance(value, Mapping):
        return Box.from_dict(value, path=where)
    return Box(value, path=where)


def _mapping(value: Any, name: str, path: str | None) -> None:
    if value is not None and type(value) is not dict and not isinstance(value, Mapping):
        raise InvalidRecord(f"frame {name} is a mapping, not {type(value).__name__}", path=path)


def _typed_meta(
    meta: Mapping[str, Any] | None, meta_types: Mapping[str, str] | None, path: str | None
) -> tuple[dict[str, Any], dict[str, str]]:
    _mapping(meta, "meta", path)
    _mapping(meta_types, "meta_types", path)
    values: dict[str, Any] = {}
    tags: dict[str, str] = {}
    meta = meta or {}
    meta_types = meta_types or {}
    if META_TYPES_KEY in meta:
        raise InvalidRecord(
            f"{META_TYPES_KEY!r} is reserved and cannot be a meta key (frame.md §10.3)", path=path
        )
    stale = set(meta_types) - set(meta)
    if stale:
        raise InvalidRecord(
            f"meta_types names keys the meta document lacks: {sorted(stale)}", path=path
        )
    for key, value in meta.items():
        if not isinstance(key, str):
            raise InvalidRecord(f"meta key {key!r} is not a string", path=path)
        where = f"{path}.meta.{key}" if path else f"meta.{key}"
        tag = check_tag(meta_types[key], path=where) if key in meta_types else infer_tag(value)
        values[key] = coerce_meta(tag, value, path=where)
        tags[key] = tag
    return values, tags


class Frame(Mapping[str, Block]):
    """A snapshot: ``{name: Block}``, a typed ``meta`` document, an optional ``box``.

    Parameters
    ----------
    blocks
        ``{name: Block | {column: array}}``; ``"box"`` cannot name a block.
    meta
        The meta document. Each value is held exactly to its tag.
    meta_types
        ``{key: tag}`` for keys whose tag should not be inferred (``"i32"``,
        ``"f64x3"`` ...). Untagged keys infer theirs (frame.md §10.6).
    box
        A :class:`Box`, its JSON form, or just the 3x3 vectors.
    step, time
        On a trajectory update: the step number (i64) and the optional time (f64).

    Examples
    --------
    >>> import numpy as np, mrecd
    >>> f = mrecd.Frame({"atoms": {"x": np.zeros(3), "y": np.zeros(3), "z": np.zeros(3)}},
    ...                 meta={"pe": -1.0}, box=mrecd.Box(vectors=np.eye(3) * 20))
    >>> f["atoms"].count
    3
    """

    __slots__ = ("_blocks", "_box", "_meta", "_meta_types", "_step", "_time")

    def __init__(
        self,
        blocks: BlocksLike | None = None,
        *,
        meta: Mapping[str, Any] | None = None,
        meta_types: Mapping[str, str] | None = None,
        box: Box | Mapping[str, Any] | npt.ArrayLike | None = None,
        step: int | None = None,
        time: float | None = None,
        path: str | None = None,
    ) -> None:
        _mapping(blocks, "blocks", path)
        self._blocks = {
            name: _as_block(name, value, path) for name, value in (blocks or {}).items()
        }
        if meta is None and meta_types is None:
            self._meta: dict[str, Any] = {}
            self._meta_types: dict[str, str] = {}
        else:
            self._meta, self._meta_types = _typed_meta(meta, meta_types, path)
        self._box = _as_box(box, path)
        if type(step) is int and _I64_MIN <= step <= _I64_MAX:  # what coerce_element keeps
            self._step: int | None = step
        else:
            self._step = (
                None if step is None else coerce_element("i64", step, path=f"{path or ''}step")
            )
        self._time = None if time is None else coerce_element("f64", time, path=f"{path or ''}time")

    @classmethod
    def _trusted(
        cls,
        blocks: dict[str, Block],
        meta: dict[str, Any] | None = None,
        meta_types: dict[str, str] | None = None,
        box: Box | None = None,
        step: int | None = None,
        time: float | None = None,
    ) -> Frame:
        """Wrap parts a decoder has already validated."""
        frame = object.__new__(cls)
        frame._blocks = blocks
        frame._meta = meta or {}
        frame._meta_types = meta_types or {}
        frame._box = box
        frame._step = step
        frame._time = time
        return frame

    # -- Mapping --------------------------------------------------------------------------

    def __getitem__(self, name: str) -> Block:
        return self._blocks[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._blocks)

    def __len__(self) -> int:
        return len(self._blocks)

    # -- accessors ------------------------------------------------------------------------

    @property
    def blocks(self) -> dict[str, Block]:
        """``{name: Block}`` (a copy of the mapping)."""
        return dict(self._blocks)

    @property
    def meta(self) -> dict[str, Any]:
        """The meta document, each value held at its tag."""
        return dict(self._meta)

    @property
    def meta_types(self) -> dict[str, str]:
        """``{key: tag}`` for every meta key."""
        return dict(self._meta_types)

    @property
    def box(self) -> Box | None:
        """The cell, or ``None`` (open, non-periodic)."""
        return self._box

    @property
    def step(self) -> int | None:
        """The step number of a trajectory update, else ``None``."""
        return self._step

    @property
    def time(self) -> float | None:
        """The time of a trajectory update of a run with times, else ``None``."""
        return self._time

    def replace(self, **changes: Any) -> Frame:
        """A copy with ``blocks``, ``meta``, ``meta_types``, ``box``, ``step`` or ``time`` replaced.

        Replacing ``meta`` without ``meta_types`` keeps the tags of keys that stay.
        """
        fields: dict[str, Any] = {
            "blocks": self._blocks,
            "meta": self._meta,
            "meta_types": self._meta_types,
            "box": self._box,
            "step": self._step,
            "time": self._time,
        }
        if "meta" in changes and "meta_types" not in changes:
            changes["meta_types"] = {
                k: t for k, t in self._meta_types.items() if k in changes["meta"]
            }
        unknown = set(changes) - set(fields)
        if unknown:
            raise InvalidRecord(f"a frame has no field(s) {sorted(unknown)} to replace")
        fields.update(changes)
        return Frame(**fields)

    # -- rules ----------------------------------------------------------------------------

    def check_targets(self, sections: Mapping[str, Mapping[str, Block]] | None = None) -> None:
        """Refuse row references that do not resolve (frame.md §8): :func:`check_frame_targets`."""
        check_frame_targets(self._blocks, sections)

    # -- equality -------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Frame):
            return NotImplemented
        return (
            self._blocks == other._blocks
            and self._box == other._box
            and self._step == other._step
            and _same_real(self._time, other._time)
            and self._meta_types == other._meta_types
            and all(
                meta_equal(t, self._meta[k], other._meta[k]) for k, t in self._meta_types.items()
            )
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [", ".join(f"{n}: {b.count} rows" for n, b in self._blocks.items())]
        if self._meta:
            parts.append(f"meta={sorted(self._meta)}")
        if self._box is not None:
            parts.append("box")
        if self._step is not None:
            parts.append(f"step={self._step}")
        if self._time is not None:
            parts.append(f"time={self._time}")
        return f"Frame({'; '.join(parts)})"

    # -- JSON interchange form ------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """``{blocks, box?, meta, meta_types, step?, time?}`` with typed JSON meta values."""
        out: dict[str, Any] = {
            "blocks": {n: b.to_dict() for n, b in self._blocks.items()},
            "meta": {k: encode_meta(self._meta_types[k], v) for k, v in self._meta.items()},
            "meta_types": dict(self._meta_types),
        }
        if self._box is not None:
            out["box"] = self._box.to_dict()
        if self._step is not None:
            out["step"] = encode_element("i64", self._step)
        if self._time is not None:
            out["time"] = encode_element("f64", self._time)
        return out

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        meta_types: Mapping[str, str] | None = None,
        path: str | None = None,
    ) -> Frame:
        """Read the JSON form (frame.md §5.2). No keys beyond the form are allowed.

        Meta values decode under ``data["meta_types"]`` (else the ``meta_types``
        argument, e.g. a trajectory's declared tags), untagged ones by inference;
        a tag for a key the document lacks is ignored, as a reader does.
        """
        if not isinstance(data, Mapping):
            raise InvalidRecord("a frame is a JSON object", path=path)
        unknown = set(data) - {"blocks", "box", "meta", "meta_types", "step", "time"}
        if unknown:
            raise InvalidRecord(
                f"unknown frame keys {sorted(unknown)}; a frame has blocks, box, meta, meta_types"
                " (frame.md §5.2)",
                path=path,
            )
        raw_blocks = data.get("blocks", {})
        if not isinstance(raw_blocks, Mapping):
            raise InvalidRecord("frame blocks is an object {name: block}", path=path)
        blocks = {}
        for name, raw in raw_blocks.items():
            if name == "box":
                raise InvalidRecord("'box' cannot name a block (frame.md §5)", path=path)
            blocks[name] = Block.from_dict(raw, path=f"{path}/{name}" if path else name)
        raw_tags = data.get("meta_types")
        meta, tags = decode_meta_document(
            data.get("meta", {}), (meta_types or {}) if raw_tags is None else raw_tags, path=path
        )
        step = data.get("step")
        time = data.get("time")
        return cls(
            blocks,
            meta=meta,
            meta_types=tags,
            box=data.get("box"),
            step=None if step is None else decode_element("i64", step, path="step"),
            time=None if time is None else decode_element("f64", time, path="time"),
            path=path,
        )


def decode_meta_document(
    meta: Mapping[str, Any], meta_types: Mapping[str, Any], *, path: str | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """A reader's decoding of a typed meta document (frame.md §10.6).

    Tagged keys decode strictly under their tag; untagged keys infer theirs;
    tags whose key is absent are ignored. Returns ``(held values, tags)``.
    """
    if not isinstance(meta, Mapping):
        raise InvalidRecord("the meta document is a JSON object", path=path)
    if not isinstance(meta_types, Mapping):
        raise InvalidRecord(
            f"{META_TYPES_KEY} must be a JSON object of tags (frame.md §10.6)", path=path
        )
    for key, tag in meta_types.items():
        check_tag(tag, path=f"{META_TYPES_KEY}.{key}")
    if META_TYPES_KEY in meta:
        raise InvalidRecord(f"{META_TYPES_KEY!r} is reserved and cannot be a meta key", path=path)
    if not all(isinstance(key, str) for key in meta):
        raise InvalidRecord("meta keys are strings", path=path)
    values: dict[str, Any] = {}
    tags: dict[str, str] = {}
    for key, raw in meta.items():
        where = f"{path}.meta.{key}" if path else f"meta.{key}"
        if key in meta_types:
            tags[key] = meta_types[key]
            values[key] = decode_meta(tags[key], raw, path=where)
        else:
            tags[key], values[key] = read_untagged(raw, path=where)
    return values, tags


def check_frame_targets(
    blocks: Mapping[str, Block], sections: Mapping[str, Mapping[str, Block]] | None = None
) -> None:
    """Refuse row references that do not resolve in ``blocks`` (frame.md §8).

    Same-container targets must exist wherever the referencing block has rows
    and every non-null value must be below the target's row count. Absolute
    targets (``/system/atoms``) are checked the same way when ``sections``
    holds the named section; otherwise no check applies.
    """
    for name, block in blocks.items():
        check_block_targets(name, block, blocks, sections)


def check_block_targets(
    name: str,
    block: Block,
    blocks: Mapping[str, Block],
    sections: Mapping[str, Mapping[str, Block]] | None = None,
) -> None:
    """Refuse the unresolved references of one block ``name`` (see :func:`check_frame_targets`)."""
    targets = block.targets
    if not targets or block.count == 0:
        return
    for column, target in targets.items():
        where = f"{name}/{column}"
        if target.startswith("/"):
            _, section, target_block = target.split("/")
            if sections is None or section not in sections:
                continue
            rows = sections[section].get(target_block)
        else:
            rows = blocks.get(target)
        if rows is None:
            raise InvalidRecord(
                f"target {target!r} does not exist while {name!r} has rows (frame.md §8)",
                path=where,
            )
        col = block[column]
        values = col.values if col.validity is None else col.values[col.validity]
        if values.size and int(values.max()) >= rows.count:
            raise InvalidRecord(
                f"row reference {int(values.max())} is not below {target!r}'s {rows.count} rows"
                " (frame.md §8)",
                path=where,
            )


def _same_real(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return bool(np.float64(a).tobytes() == np.float64(b).tobytes())
