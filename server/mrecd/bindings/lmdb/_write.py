"""The writer's side: a record as appended, held to the collection's rules
and encoded into the values it stores (lmdb.md §2, §5; collection.md §2-§3).

Everything here runs before any key is written, so a refused record leaves
the file untouched; the caller writes the encoded values in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy.typing as npt

from ...codecs import encode_frame
from ...errors import InvalidRecord, MrecdError
from ...model import (
    Block,
    Declaration,
    Frame,
    Record,
    SequenceState,
    check_record_meta,
    dumps_strict,
    frame_input,
)
from ._index import IndexColumnSpec, IndexRow

__all__ = [
    "Incoming",
    "Prepared",
    "derive_declaration",
    "incoming",
    "index_values",
    "prepare",
    "shared_columns",
]

_RECORD_KEYS: Final = frozenset({"meta", "system", "trajectory"})
#: Sections a collection record may not carry (lmdb.md §7, collection.md §2.5).
_FOREIGN_SECTIONS: Final = ("frame", "forcefield", "status", "method", "metrics", "observables")


@dataclass(frozen=True, slots=True)
class Incoming:
    """A record as handed in, normalized: ``meta``, ``system``, trajectory frames."""

    meta: dict[str, Any]
    system: Frame | None
    frames: list[Frame] | None
    declaration: Declaration | None  #: the record's own trajectory declaration, if it carries one
    record: Record  #: what a ``derive`` callable sees


@dataclass(frozen=True, slots=True)
class Prepared:
    """One record's encoded values and its index row."""

    meta: bytes
    system: bytes | None
    frames: list[bytes]
    row: IndexRow


def _trajectory(
    value: Any, path: str, declaration: Any = None
) -> tuple[list[Frame] | None, Declaration | None]:
    """Frames and the carried declaration of a trajectory given as a list, a
    ``{"declaration", "frames"}`` mapping, or an object with ``.declaration``;
    ``declaration`` is the one its record states (it wins when given)."""
    if value is None:
        return None, None
    frames: Any = value
    if isinstance(value, Mapping):
        unknown = set(value) - {"declaration", "frames"}
        if unknown:
            raise InvalidRecord(
                f"a trajectory mapping holds declaration and frames, not {sorted(unknown)}",
                path=path,
            )
        declaration, frames = value.get("declaration"), value.get("frames") or []
    elif declaration is None and hasattr(value, "declaration"):
        declaration = value.declaration
    if isinstance(frames, (str, bytes)) or not isinstance(frames, Iterable):
        raise InvalidRecord("a trajectory is a sequence of frames", path=path)
    out = [frame_input(f, f"{path}[{k}]", update=True) for k, f in enumerate(frames)]
    if declaration is not None and not isinstance(declaration, Declaration):
        declaration = Declaration.from_dict(declaration, path=f"{path}.declaration")
    return out, declaration


def incoming(value: Any, path: str) -> Incoming:
    """Normalize a :class:`~mrecd.Record` or mapping ``{meta, system, trajectory}``."""
    meta: Any
    stated: Declaration | None = None
    if isinstance(value, Record):
        sections = {name: getattr(value, name) for name in ("frame", "forcefield")}
        meta, system, trajectory = value.meta, value.system, value.trajectory
        stated = value.declaration
    elif isinstance(value, Mapping):
        sections = {name: value.get(name) for name in _FOREIGN_SECTIONS}
        unknown = set(value) - _RECORD_KEYS - set(_FOREIGN_SECTIONS)
        if unknown:
            raise InvalidRecord(f"unknown record keys {sorted(unknown)}", path=path)
        meta, system, trajectory = value.get("meta"), value.get("system"), value.get("trajectory")
    else:
        raise InvalidRecord(
            f"a record is a mrecd.Record or a mapping, not {type(value).__name__}", path=path
        )
    present = [name for name, section in sections.items() if section is not None]
    if present:
        raise InvalidRecord(
            f"a collection record holds only meta, system and trajectory; it carries {present}"
            " (collection.md §2.5, lmdb.md §7; the force field is the collection's)",
            path=path,
        )
    system_frame = None if system is None else frame_input(system, f"{path}.system", update=False)
    frames, declaration = _trajectory(trajectory, f"{path}.trajectory", stated)
    if meta is not None and not isinstance(meta, Mapping):
        raise InvalidRecord("a record's meta is a JSON object", path=f"{path}.meta")
    record = Record(meta, system=system_frame, trajectory=frames)
    return Incoming(dict(meta or {}), system_frame, frames, declaration, record)


# -- index values ---------------------------------------------------------------------------


def index_values(
    item: Incoming, given: Mapping[str, Any] | None, specs: Mapping[str, IndexColumnSpec], path: str
) -> dict[str, npt.NDArray[Any] | None]:
    """The record's own index row: ``given`` values, else each column's ``derive``."""
    given = {} if given is None else given
    if not isinstance(given, Mapping):
        raise InvalidRecord("index values are a mapping {column: value}", path=f"{path}.index")
    unknown = set(given) - set(specs)
    if unknown:
        raise InvalidRecord(
            f"index columns {sorted(unknown)} are not declared; declared: {sorted(specs)}",
            path=f"{path}.index",
        )
    row: dict[str, npt.NDArray[Any] | None] = {}
    for name, spec in specs.items():
        if name in given:
            value = given[name]
        elif spec.derive is not None:
            try:
                value = spec.derive(item.record)
            except MrecdError:
                raise
            except Exception as exc:
                raise InvalidRecord(
                    f"derive of index column {name!r} failed: {exc!r}", path=f"{path}.index.{name}"
                ) from exc
        else:
            raise InvalidRecord(
                f"no value for index column {name!r} and no derive declared for it",
                path=f"{path}.index.{name}",
            )
        row[name] = spec.convert(value, name)
    return row


# -- declaration ----------------------------------------------------------------------------


def derive_declaration(items: Sequence[Incoming]) -> Declaration | None:
    """The declaration a first batch implies when the collection was created without one.

    Declarations the records carry win (their blocks united, shared blocks
    identical, per-step meta identical); otherwise the union of the presented
    frames (collection.md §2.2). ``None`` when the batch has no frame at all.
    """
    carried = [item.declaration for item in items if item.declaration is not None]
    if carried:
        blocks = dict(carried[0].blocks)
        for k, other in enumerate(carried[1:], 1):
            if _dumped(other.meta) != _dumped(carried[0].meta):
                raise InvalidRecord(
                    "records declare different per-step meta; a collection has one"
                    " (collection.md §2.2)",
                    path=f"records[{k}].trajectory.declaration.meta",
                )
            for name, spec in other.blocks.items():
                if blocks.setdefault(name, spec).model_dump() != spec.model_dump():
                    raise InvalidRecord(
                        f"records disagree on the declaration of block {name!r}"
                        " (collection.md §2.2)",
                        path=f"records[{k}].trajectory.declaration.blocks.{name}",
                    )
        return Declaration(blocks=blocks, meta=dict(carried[0].meta))
    frames = [frame for item in items for frame in item.frames or ()]
    if not frames:
        return None
    return Declaration.from_frames(frames)


def _dumped(specs: Mapping[str, Any]) -> dict[str, Any]:
    # Compare declarations in their JSON form: a NaN fill equals itself there,
    # and a json key's "fill": null differs from no fill.
    return {name: spec.model_dump() for name, spec in specs.items()}


def _check_carried(
    carried: Declaration, declaration: Declaration, frames: Sequence[Frame], path: str
) -> None:
    """Refuse a record whose own declaration is not the collection's (collection.md §2.2):
    per-step meta equal exactly, every declared block declared identically, and no
    frame presenting a block its own declaration leaves out."""
    mine, theirs = _dumped(carried.meta), _dumped(declaration.meta)
    if mine != theirs:
        raise InvalidRecord(
            f"the record declares per-step meta {mine}; the collection declares {theirs}: they"
            " must be equal exactly (collection.md §2.2)",
            path=f"{path}.declaration.meta",
        )
    for name, spec in carried.blocks.items():
        if name not in declaration.blocks:
            raise InvalidRecord(
                f"the record declares block {name!r}, which the collection does not"
                " (collection.md §2.2)",
                path=f"{path}.declaration.blocks.{name}",
            )
        if spec.model_dump() != declaration.blocks[name].model_dump():
            raise InvalidRecord(
                f"the record declares block {name!r} as {spec.model_dump()}, the collection as"
                f" {declaration.blocks[name].model_dump()} (collection.md §2.2)",
                path=f"{path}.declaration.blocks.{name}",
            )
    for k, frame in enumerate(frames):
        extra = [name for name in frame.blocks if name not in carried.blocks]
        if extra:
            raise InvalidRecord(
                f"the frame presents blocks {extra}, which the record's own declaration does"
                f" not declare; it declares {sorted(carried.blocks)} (trajectory.md §8)",
                path=f"{path}[{k}]/{extra[0]}",
            )


def shared_columns(declaration: Declaration, system: Mapping[str, Block], path: str) -> None:
    """Refuse a column declared in a trajectory block and present in the same-named
    system block (collection.md §3).

    Chosen: ``id`` may be in both (trajectory.md §1.5 lets both carry it, with
    equal values, which :class:`~mrecd.model.SequenceState` checks per update).
    """
    for name, spec in declaration.blocks.items():
        block = system.get(name)
        if block is None:
            continue
        shared = (set(spec.columns) & set(block)) - {"id"}
        if shared:
            raise InvalidRecord(
                f"columns {sorted(shared)} are in both system/{name} and the trajectory block"
                f" {name!r}; a column lives in one of them (collection.md §3)",
                path=f"{path}.system/{name}",
            )


# -- encoding -------------------------------------------------------------------------------


def _n_atoms(system: Frame | None, first_atoms: int | None) -> int:
    # lmdb.md §4: the system's atoms (even 0 rows), else the first trajectory
    # update of atoms, else 0.
    if system is not None and "atoms" in system:
        return system["atoms"].count
    return 0 if first_atoms is None else first_atoms


def _encode_trajectory(
    item: Incoming, declaration: Declaration, path: str
) -> tuple[list[bytes], int | None]:
    system = item.system
    if item.declaration is not None:
        _check_carried(item.declaration, declaration, item.frames or (), f"{path}.trajectory")
    if system is not None:
        shared_columns(declaration, system, path)
    blocks = None if system is None else system.blocks
    # A fresh state per record: carry-forward never crosses a record (lmdb.md §5).
    state = SequenceState(
        declaration, system=blocks, sections=None if blocks is None else {"system": blocks}
    )
    tags = {key: spec.dtype for key, spec in declaration.meta.items()}
    values: list[bytes] = []
    first_atoms: int | None = None
    for k, frame in enumerate(item.frames or ()):
        update = state.admit(frame, path=f"{path}.trajectory[{k}]")
        if first_atoms is None and "atoms" in update.blocks:
            first_atoms = update.blocks["atoms"].count
        stored = Frame._trusted(
            update.blocks, update.meta, tags, update.box, update.step, update.time
        )
        values.append(encode_frame(stored))
    return values, first_atoms


def _encode_system(system: Frame, path: str) -> bytes:
    if system.step is not None or system.time is not None:
        raise InvalidRecord(
            "a system is not a trajectory update: no step or time", path=f"{path}.system"
        )
    blocks = system.blocks
    system.check_targets({"system": blocks})
    return encode_frame(system)


def prepare(
    item: Incoming,
    declaration: Declaration | None,
    own: dict[str, npt.NDArray[Any] | None],
    path: str,
) -> Prepared:
    """Check one record against the collection and encode its values.

    Refuses a record with neither system nor trajectory, a record meta that is
    not a valid record document, anything :class:`SequenceState` refuses
    (undeclared blocks, columns or keys, step order, time, row counts beside
    the system or an aligned target, cell_defined), a carried declaration
    that differs from the collection's, and a column in both a system block
    and its trajectory block.
    """
    if item.system is None and item.frames is None:
        raise InvalidRecord(
            "a record holds a system, a trajectory or both; this one has neither"
            " (collection.md §2.5)",
            path=path,
        )
    meta = check_record_meta(item.meta, path=f"{path}.meta")
    # A record in a collection carries no version of its own (lmdb.md §3): the
    # collection's molrec_version covers it. Chosen: a stamped one is dropped.
    meta.pop("molrec_version", None)
    system = None if item.system is None else _encode_system(item.system, path)
    frames: list[bytes] = []
    first_atoms = None
    if item.frames is not None:
        frames, first_atoms = _encode_trajectory(item, declaration or Declaration(), path)
    row = IndexRow(
        n_frames=len(frames),
        n_atoms=_n_atoms(item.system, first_atoms),
        has_trajectory=item.frames is not None,
        own=own,
    )
    return Prepared(dumps_strict(meta).encode(), system, frames, row)
