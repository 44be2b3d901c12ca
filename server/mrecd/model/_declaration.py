"""The pinned trajectory declaration, ``sequence_schema`` (trajectory.md §8).

``Declaration`` is what a trajectory (Zarr) or a collection (LMDB) fixes at
creation: blocks -> columns ``{dtype, trailing, nullable?, precision?}``,
``structural_shape?``, ``targets?``, ``aligned_with?``; per-step meta keys ->
``{dtype, fill?}``. It serializes exactly as the spec's JSON: optional keys
only when set.

:meth:`Declaration.conform` is the one place a presented frame is held to the
declaration, so the Zarr writer and the LMDB writer refuse the same frames.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    model_serializer,
    model_validator,
)

from ..errors import InvalidRecord
from ._block import Block, check_target
from ._column import Column
from ._dtypes import CANONICAL, CANONICAL_META, DTYPES, as_column_array, check_dtype_name
from ._frame import Frame
from ._precision import check_precision, quantize, quantize_rows
from ._typed import META_TAGS, check_tag, coerce_meta, decode_meta, encode_meta

__all__ = [
    "RESERVED_BLOCK_NAMES",
    "RESERVED_COLUMN_NAMES",
    "BlockSpec",
    "ColumnSpec",
    "Declaration",
    "MetaSpec",
    "Rounded",
]

#: Columns rounded ahead for a batch (:meth:`Declaration.round_batch`): the conformed
#: column of each presented one, by ``(id(column spec), id(presented column))``.
Rounded = dict[tuple[int, int], Column]

#: Children of ``trajectory/`` owned by the layout (trajectory.md §9).
RESERVED_BLOCK_NAMES = frozenset({"step", "time", "meta", "box"})
#: Children of a trajectory block group owned by the layout.
RESERVED_COLUMN_NAMES = frozenset({"offset", "step_index", "_validity"})

_FROZEN = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


def _invalid(exc: ValidationError, path: str | None) -> InvalidRecord:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    where = ".".join(p for p in (path, loc) if p) or None
    message = str(first["msg"]).removeprefix("Value error, ")
    ctx = first.get("ctx", {})
    if isinstance(ctx.get("error"), InvalidRecord):
        inner = ctx["error"]
        message = inner.message
        where = ".".join(p for p in (where, inner.path) if p) or None
    return InvalidRecord(message, path=where)


class _Spec(BaseModel):
    """A part of the declaration: strict JSON in, :class:`InvalidRecord` on bad input.

    Fields are strict (``"yes"`` is not ``true``, ``"3"`` is not ``3``): the
    declaration is pinned JSON, and a lax reading would pin something the
    producer did not write.
    """

    model_config = _FROZEN

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _invalid(exc, None) from None

    @classmethod
    def from_dict(cls, data: Any, *, path: str | None = None) -> Self:
        """Read the JSON form, raising :class:`InvalidRecord` naming the field."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise InvalidRecord(f"a {cls.__name__} is a JSON object", path=path)
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise _invalid(exc, path) from None

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON, optional keys only when set."""
        out: dict[str, Any] = self.model_dump()
        return out


class ColumnSpec(_Spec):
    """One declared column: ``{dtype, trailing, nullable?, precision?}``."""

    dtype: StrictStr = Field(
        description="One of the thirteen column dtypes.", json_schema_extra={"enum": list(DTYPES)}
    )
    trailing: tuple[StrictInt, ...] = Field(
        default=(), description="Per-row shape after the leading axis."
    )
    nullable: StrictBool = Field(default=False, description="Written only when true.")
    precision: StrictFloat | StrictInt | None = Field(
        default=None, description="Declared precision; f64 only."
    )

    @model_validator(mode="after")
    def _check(self) -> ColumnSpec:
        check_dtype_name(self.dtype, path="dtype")
        if any(n < 0 for n in self.trailing):
            raise InvalidRecord("trailing is a list of non-negative integers", path="trailing")
        if self.precision is not None:
            check_precision(self.precision, path="precision")
            if self.dtype != "f64":
                raise InvalidRecord(
                    f"precision is declared only on f64 columns, not {self.dtype} (frame.md §7.2)",
                    path="precision",
                )
        return self

    @model_serializer
    def _dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dtype": self.dtype, "trailing": list(self.trailing)}
        if self.nullable:
            out["nullable"] = True
        if self.precision is not None:
            out["precision"] = self.precision
        return out


class BlockSpec(_Spec):
    """One declared block: ``{columns, structural_shape?, targets?, aligned_with?}``."""

    columns: dict[StrictStr, ColumnSpec] = Field(default_factory=dict)
    structural_shape: tuple[StrictInt, ...] | None = None
    targets: dict[StrictStr, StrictStr] | None = None
    aligned_with: StrictStr | None = None

    @model_validator(mode="after")
    def _check(self) -> BlockSpec:
        for name, spec in self.columns.items():
            if name in RESERVED_COLUMN_NAMES:
                raise InvalidRecord(
                    f"column name {name!r} is reserved in a trajectory block (trajectory.md §9)",
                    path=f"columns.{name}",
                )
            if not name or "/" in name:
                raise InvalidRecord(f"column name {name!r} is not a valid name", path="columns")
            want = CANONICAL.get(name)
            if want is not None and (spec.dtype != want or spec.trailing):
                raise InvalidRecord(
                    f"canonical key {name!r} is {want}[N], not"
                    f" {spec.dtype}{list(spec.trailing) or ''}"
                    " (conventions.md §2)",
                    path=f"columns.{name}",
                )
        if self.structural_shape is not None and any(n < 0 for n in self.structural_shape):
            raise InvalidRecord(
                "structural_shape is a list of non-negative integers", path="structural_shape"
            )
        for column, target in (self.targets or {}).items():
            where = f"targets.{column}"
            if column not in self.columns:
                raise InvalidRecord(f"targets names {column!r}, not a declared column", path=where)
            spec = self.columns[column]
            if spec.dtype != "u64" or spec.trailing:
                raise InvalidRecord(
                    f"a row reference is u64[N]; {column!r} is {spec.dtype}", path=where
                )
            check_target(target, path=where)
        if self.aligned_with is not None and self.structural_shape is not None:
            raise InvalidRecord(
                "an aligned block declares no structural_shape (trajectory.md §7.2)",
                path="aligned_with",
            )
        return self

    @model_serializer
    def _dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {"columns": {n: c._dump() for n, c in self.columns.items()}}
        if self.structural_shape is not None:
            out["structural_shape"] = list(self.structural_shape)
        if self.targets:
            out["targets"] = dict(self.targets)
        if self.aligned_with is not None:
            out["aligned_with"] = self.aligned_with
        return out

    @classmethod
    def of_block(cls, block: Block) -> BlockSpec:
        """The declaration a presented block implies (masks make a column nullable)."""
        return cls(
            columns={
                n: ColumnSpec(
                    dtype=c.dtype,
                    trailing=c.trailing,
                    nullable=c.validity is not None,
                    precision=c.precision,
                )
                for n, c in block.items()
            },
            structural_shape=block.structural_shape,
            targets=block.targets,
        )


class MetaSpec(_Spec):
    """One declared per-step meta key: ``{dtype, fill?}``.

    ``fill`` absent declares no fill; a present ``fill`` is a value of the tag
    (``"NaN"`` or ``float("nan")`` under ``f64``); ``None`` is the JSON
    document ``null`` and valid only under ``json``.
    """

    dtype: StrictStr = Field(
        description="One of the sixteen meta tags.", json_schema_extra={"enum": list(META_TAGS)}
    )
    fill: Any = Field(
        default=None, description="Typed JSON value written when a frame omits the key."
    )
    _fill: Any = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self) -> MetaSpec:
        check_tag(self.dtype, path="dtype")
        if self.has_fill:
            try:
                held = decode_meta(self.dtype, self.fill, path="fill")
            except InvalidRecord as decode_error:
                try:
                    held = coerce_meta(self.dtype, self.fill, path="fill")
                except InvalidRecord:
                    raise decode_error from None
            self._fill = held
        return self

    @property
    def has_fill(self) -> bool:
        """Whether a fill was declared (``fill: null`` counts under ``json``)."""
        return "fill" in self.model_fields_set

    @property
    def fill_value(self) -> Any:
        """The held fill value (``float('nan')`` for ``"NaN"``)."""
        return self._fill

    @model_serializer
    def _dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dtype": self.dtype}
        if self.has_fill:
            out["fill"] = encode_meta(self.dtype, self._fill)
        return out


class Declaration(_Spec):
    """The pinned ``sequence_schema``: declared blocks and per-step meta keys.

    Refuses at declaration: reserved block or column names, dtypes outside
    the set, precision off ``f64``, malformed or trajectory targets, canonical
    keys at another dtype, a broken ``aligned_with`` (unknown, self, chained,
    with ``structural_shape``, sharing a column name), a fill not of its tag.
    """

    blocks: dict[StrictStr, BlockSpec] = Field(default_factory=dict)
    meta: dict[StrictStr, MetaSpec] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> Declaration:
        for name, spec in self.blocks.items():
            where = f"blocks.{name}"
            if name in RESERVED_BLOCK_NAMES:
                raise InvalidRecord(
                    f"block name {name!r} is reserved under trajectory/ (trajectory.md §9)",
                    path=where,
                )
            if not name or "/" in name:
                raise InvalidRecord(f"block name {name!r} is not a valid name", path=where)
            for column, target in (spec.targets or {}).items():
                if not target.startswith("/") and target not in self.blocks:
                    raise InvalidRecord(
                        f"target {target!r} is not a declared block, so the reference could never"
                        " resolve",
                        path=f"{where}.targets.{column}",
                    )
            self._check_alignment(name, spec, where)
        for key, meta in self.meta.items():
            want = CANONICAL_META.get(key)
            if want is not None and meta.dtype != want:
                raise InvalidRecord(
                    f"per-step key {key!r} is canonical {want}, not {meta.dtype}"
                    " (conventions.md §2)",
                    path=f"meta.{key}",
                )
        return self

    def _check_alignment(self, name: str, spec: BlockSpec, where: str) -> None:
        target = spec.aligned_with
        if target is None:
            return
        if target == name:
            raise InvalidRecord(
                "a block cannot be aligned with itself", path=f"{where}.aligned_with"
            )
        if target not in self.blocks:
            raise InvalidRecord(
                f"aligned_with {target!r} is not a declared block", path=f"{where}.aligned_with"
            )
        if self.blocks[target].aligned_with is not None:
            raise InvalidRecord(
                f"aligned_with {target!r}, which is itself aligned: no chains (trajectory.md §7.2)",
                path=f"{where}.aligned_with",
            )
        shared = set(spec.columns) & set(self.blocks[target].columns)
        if shared:
            raise InvalidRecord(
                f"an aligned block shares no column with its target; both have {sorted(shared)}",
                path=f"{where}.columns",
            )

    @model_serializer
    def _dump(self) -> dict[str, Any]:
        return {
            "blocks": {n: b._dump() for n, b in self.blocks.items()},
            "meta": {k: m._dump() for k, m in self.meta.items()},
        }

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any, *, path: str | None = "sequence_schema") -> Self:
        """Read ``{blocks, meta}``, raising :class:`InvalidRecord` naming the field."""
        return super().from_dict(data, path=path)

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON: ``{"blocks": {...}, "meta": {...}}`` with omit-when-default keys."""
        return self._dump()

    @classmethod
    def from_frames(cls, frames: Iterable[Frame]) -> Declaration:
        """Derive a declaration from representative frames.

        Blocks are the union of the blocks presented; a column's dtype and
        trailing shape must agree across frames; it is nullable if any frame
        masks it and takes the first declared precision. Meta keys are the
        union of the keys with their tags, which must agree. No fills.
        """
        blocks: dict[str, dict[str, Any]] = {}
        meta: dict[str, str] = {}
        for frame in frames:
            for name, block in frame.items():
                entry = blocks.setdefault(
                    name,
                    {
                        "columns": {},
                        "structural_shape": block.structural_shape,
                        "targets": block.targets,
                    },
                )
                for column, col in block.items():
                    spec = entry["columns"].get(column)
                    if spec is None:
                        entry["columns"][column] = {
                            "dtype": col.dtype,
                            "trailing": col.trailing,
                            "nullable": col.validity is not None,
                            "precision": col.precision,
                        }
                        continue
                    if (spec["dtype"], tuple(spec["trailing"])) != (col.dtype, col.trailing):
                        raise InvalidRecord(
                            f"frames disagree on column {name}/{column}: {spec['dtype']}"
                            f"{list(spec['trailing'])} vs {col.dtype}{list(col.trailing)}"
                        )
                    spec["nullable"] = spec["nullable"] or col.validity is not None
                    spec["precision"] = (
                        spec["precision"] if spec["precision"] is not None else col.precision
                    )
            for key, tag in frame.meta_types.items():
                if meta.setdefault(key, tag) != tag:
                    raise InvalidRecord(
                        f"frames disagree on the tag of meta key {key!r}: {meta[key]} vs {tag}"
                    )
        return cls.from_dict(
            {
                "blocks": {
                    n: {k: v for k, v in e.items() if v is not None} for n, e in blocks.items()
                },
                "meta": {k: {"dtype": t} for k, t in meta.items()},
            },
            path=None,
        )

    # -- holding frames to the declaration ------------------------------------------------

    def round_batch(self, frames: Sequence[Frame]) -> Rounded:
        """Round the declared-precision columns of ``frames`` at once, for :meth:`conform`.

        Takes only plain columns (of the declared dtype and trailing shape, unmasked,
        without their own precision): the ones :meth:`conform` would only round. Checks
        nothing; :meth:`conform` still holds each frame to the declaration and takes a
        column's rounding from here. Valid while ``frames`` are alive (keys are ids).
        """
        groups: dict[int, tuple[ColumnSpec, list[Column]]] = {}
        for frame in frames:
            for name, block in frame._blocks.items():
                spec = self.blocks.get(name)
                if spec is None:
                    continue
                for column_name, column in block._columns.items():
                    column_spec = spec.columns.get(column_name)
                    if (
                        column_spec is not None
                        and column_spec.precision is not None
                        and _plain(column, column_spec)
                    ):
                        groups.setdefault(id(column_spec), (column_spec, []))[1].append(column)
        rounded: Rounded = {}
        for key, (column_spec, columns) in groups.items():
            assert column_spec.precision is not None
            values = [c._values for c in columns]
            if any(v.shape != values[0].shape for v in values):  # type: ignore[union-attr]
                continue  # rows of different lengths: conform rounds them one by one
            # read-only rows made here: no producer holds them (see _owned)
            stacked = quantize_rows(values, column_spec.precision)  # type: ignore[arg-type]
            for column, row in zip(columns, stacked, strict=True):
                rounded[key, id(column)] = Column._trusted(row, "f64")
        return rounded

    def conform(
        self, frame: Frame, *, path: str | None = None, rounded: Rounded | None = None
    ) -> Frame:
        """Hold one presented trajectory frame to this declaration.

        Returns the frame as it is stored: columns converted exactly to their
        declared dtype and rounded to their declared precision (the columns then
        carry no precision of their own: the declaration is its one home), every
        declared meta key held to its tag, omitted keys filled. Refuses an
        undeclared block, column or key, a block missing a declared column, a
        mask on a non-nullable column, a wrong trailing or structural shape, a
        conflicting precision or targets, and an omitted key without a fill.
        ``step``, ``time`` and ``box`` pass through unchanged. ``rounded`` (from
        :meth:`round_batch` of a batch holding ``frame``) supplies the rounding.
        """
        if not isinstance(frame, Frame):
            raise InvalidRecord(f"conform takes a Frame, not {type(frame).__name__}", path=path)
        blocks = {
            name: self._conform_block(name, block, path, rounded)
            for name, block in frame._blocks.items()
        }
        if not self.meta and not frame._meta:  # the common run without per-step meta
            return Frame._trusted(blocks, {}, {}, frame.box, frame.step, frame.time)
        meta = frame.meta
        values: dict[str, Any] = {}
        for key in meta:
            if key not in self.meta:
                raise InvalidRecord(
                    f"meta key {key!r} is not declared; declared: {sorted(self.meta)}"
                    " (trajectory.md §8)",
                    path=f"{path}.meta.{key}" if path else f"meta.{key}",
                )
        for key, spec in self.meta.items():
            where = f"{path}.meta.{key}" if path else f"meta.{key}"
            if key in meta:
                values[key] = coerce_meta(spec.dtype, meta[key], path=where)
            elif spec.has_fill:
                values[key] = spec.fill_value
            else:
                raise InvalidRecord(
                    f"the frame omits declared meta key {key!r}, which has no fill (there is no"
                    " implicit NaN, trajectory.md §3.3)",
                    path=where,
                )
        tags = {k: s.dtype for k, s in self.meta.items()}
        return Frame._trusted(blocks, values, tags, frame.box, frame.step, frame.time)

    def _conform_block(
        self, name: str, block: Block, path: str | None, rounded: Rounded | None
    ) -> Block:
        where = f"{path}/{name}" if path else name
        spec = self.blocks.get(name)
        if spec is None:
            raise InvalidRecord(
                f"block {name!r} is not declared; declared: {sorted(self.blocks)}"
                " (trajectory.md §8)",
                path=where,
            )
        presented = block._columns
        if presented.keys() != spec.columns.keys():
            _refuse_columns(name, presented.keys(), spec, where)
        if spec.structural_shape is not None:
            want = 1
            for n in spec.structural_shape:
                want *= n
            if block._count != want:
                raise InvalidRecord(
                    f"block {name!r} declares structural_shape {list(spec.structural_shape)}: every"
                    f" update holds {want} rows, not {block._count} (trajectory.md §5.2)",
                    path=where,
                )
        if block._structural_shape is not None and block._structural_shape != spec.structural_shape:
            raise InvalidRecord(
                f"structural_shape {list(block._structural_shape)} differs from the declared"
                f" {spec.structural_shape}",
                path=where,
            )
        if block._targets and block._targets != (spec.targets or {}):
            raise InvalidRecord(
                f"targets {block.targets} differ from the declared {spec.targets}", path=where
            )
        columns = {
            column_name: _conform_column(
                presented[column_name], column_spec, where, column_name, rounded
            )
            for column_name, column_spec in spec.columns.items()
        }
        return Block._trusted(columns, block._count, spec.structural_shape, spec.targets, None)


def _refuse_columns(name: str, presented: Any, spec: BlockSpec, where: str) -> None:
    """Refuse a block whose columns are not exactly the declared ones."""
    extra = presented - spec.columns.keys()
    if extra:
        raise InvalidRecord(
            f"columns {sorted(extra)} are not declared for block {name!r}", path=where
        )
    missing = spec.columns.keys() - presented
    raise InvalidRecord(
        f"a presented block carries every declared column; {name!r} lacks {sorted(missing)}"
        " (all columns share the update's rows)",
        path=where,
    )


def _plain(column: Column, spec: ColumnSpec) -> bool:
    """Whether ``column`` is already what ``spec`` stores, but for the rounding.

    A plain column of the declared dtype (what a producer presents each frame):
    every check of :func:`_conform_checked` passes on it.
    """
    values = column._values
    return (
        values is not None
        and column._dtype == spec.dtype
        and column._validity is None
        and column._precision is None
        and values.shape[1:] == spec.trailing
    )


def _conform_column(
    column: Column, spec: ColumnSpec, block_path: str, name: str, done: Rounded | None
) -> Column:
    values = column._values
    if (  # _plain, inline: this runs for every column of every appended frame
        values is not None
        and column._dtype == spec.dtype
        and column._validity is None
        and column._precision is None
        and values.shape[1:] == spec.trailing
    ):
        if spec.precision is None:
            return column
        if done is not None and (ahead := done.get((id(spec), id(column)))) is not None:
            return ahead
        rounded = quantize(values, spec.precision)
        rounded.flags.writeable = False  # made here: no producer holds it (see _owned)
        return Column._trusted(rounded, spec.dtype, None, None)
    return _conform_checked(column, spec, f"{block_path}/{name}")


def _conform_checked(column: Column, spec: ColumnSpec, where: str) -> Column:
    values = column.values
    if column.dtype != spec.dtype:
        values, _ = as_column_array(values, spec.dtype, path=where)
    if tuple(values.shape[1:]) != spec.trailing:
        raise InvalidRecord(
            f"trailing shape {list(values.shape[1:])} differs from the declared"
            f" {list(spec.trailing)}",
            path=where,
        )
    if column.validity is not None and not spec.nullable:
        raise InvalidRecord(
            "the column is masked but not declared nullable: its values would land without the"
            " mask (trajectory.md §5.3)",
            path=where,
        )
    if (
        column.precision is not None
        and spec.precision is not None
        and column.precision != spec.precision
    ):
        raise InvalidRecord(
            f"precision {column.precision} differs from the declared {spec.precision}", path=where
        )
    if spec.precision is not None and column.precision != spec.precision:
        values = quantize(values, spec.precision)
    if values is not column.values:
        values.flags.writeable = False  # made here: no producer holds it (see _owned)
    # Otherwise values may view the producer's array: SequenceState.admit copies
    # the blocks it keeps (the ones that changed), not every presented block.
    return Column._trusted(values, spec.dtype, column.validity, None)
