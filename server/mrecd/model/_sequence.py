"""The writer's view of a trajectory: which presented blocks are updates, and the rules
that hold on resolved frames (trajectory.md §1, §6, §7; lmdb.md §5).

Both the Zarr trajectory writer and the LMDB collection writer hold frames to
the same rules through :class:`SequenceState`, so the two refuse the same
frames and store the same sparse updates.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, KeysView, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InvalidRecord, StepOrderError
from ._block import Block
from ._box import Box
from ._column import Column
from ._declaration import Declaration, Rounded
from ._frame import Frame, check_block_targets

__all__ = ["SequenceState", "Update", "check_system_alignment"]


@dataclass(frozen=True, slots=True)
class Update:
    """What one appended frame stores.

    ``blocks`` holds only the blocks that changed (bitwise, after precision
    rounding) or that appear for the first time; ``box`` is set only where the
    cell changes. ``meta`` holds every declared key (fills materialized).
    """

    ordinal: int
    step: int
    time: float | None
    meta: dict[str, Any]
    blocks: dict[str, Block]
    box: Box | None
    frame: Frame = field(repr=False)  #: the conformed frame as presented


def check_system_alignment(declaration: Declaration, system: Mapping[str, Block] | None) -> None:
    """Refuse a declaration that cannot align with ``system`` (trajectory.md §1.5, §7.2).

    An aligned trajectory block may not share a name with a system block; a
    block with a ``structural_shape`` that shares one must hold its row count.
    """
    if not system:
        return
    for name, spec in declaration.blocks.items():
        if name not in system:
            continue
        if spec.aligned_with is not None:
            raise InvalidRecord(
                f"aligned block {name!r} shares its name with a system block (trajectory.md §7.2)",
                path=f"sequence_schema.blocks.{name}",
            )
        if (
            spec.structural_shape is not None
            and int(np.prod(spec.structural_shape)) != system[name].count
        ):
            raise InvalidRecord(
                f"block {name!r} declares {int(np.prod(spec.structural_shape))} rows per update but"
                f" system/{name} has {system[name].count}",
                path=f"sequence_schema.blocks.{name}",
            )


class SequenceState:
    """The resolved state after the frames written so far, and the rules for the next one.

    Parameters
    ----------
    declaration
        The pinned ``sequence_schema`` (a :class:`Declaration` or its JSON form).
    system
        The record's ``system`` blocks: a same-named trajectory block holds
        their row count in every update (and equal ``id`` values).
    sections
        Frame-shaped sections an absolute target may name (``{"system":
        {...}, "frame": {...}}``).

    :meth:`admit` checks a frame and advances the state; to keep a batch
    all-or-nothing, admit into :meth:`copy` and keep the copy on success.
    """

    def __init__(
        self,
        declaration: Declaration | Mapping[str, Any],
        *,
        system: Mapping[str, Block] | None = None,
        sections: Mapping[str, Mapping[str, Block]] | None = None,
    ) -> None:
        pinned = Declaration.from_dict(declaration)  # a Declaration passes through
        check_system_alignment(pinned, system)
        self.declaration = pinned
        self.system: dict[str, Block] = dict(system or {})
        self.sections: dict[str, Mapping[str, Block]] = dict(sections or {})
        if system is not None:
            self.sections.setdefault("system", self.system)
        #: (block, target) of every aligned block, checked on each frame
        self._aligned = [
            (name, spec.aligned_with)
            for name, spec in pinned.blocks.items()
            if spec.aligned_with is not None
        ]
        self.nstep = 0
        self.last_step: int | None = None
        self.has_time: bool | None = None
        self.current: dict[str, Block] = {}
        self.box: Box | None = None

    def copy(self) -> SequenceState:
        """An independent state to admit a batch into (shallow: blocks are immutable)."""
        other = copy.copy(self)
        other.current = dict(self.current)
        return other

    def restore(
        self,
        *,
        nstep: int,
        last_step: int | None,
        has_time: bool | None,
        current: Mapping[str, Block],
        box: Box | None,
    ) -> None:
        """Set the state a reopened store resolves to at its last committed frame."""
        self.nstep = nstep
        self.last_step = last_step
        self.has_time = has_time
        self.current = dict(current)
        self.box = box

    # -- the rules ------------------------------------------------------------------------

    def admit_many(self, frames: Iterable[Frame], *, first: int | None = None) -> list[Update]:
        """:meth:`admit` each of ``frames`` in turn, the batch's rounding done at once.

        Frame ``i`` is checked as ``admit(frame, path=f"frame {first + i}")`` would
        check it (``first`` defaults to :attr:`nstep`) and refused with the same
        error; frames before a refused one stay admitted, so admit a batch that must
        be all-or-nothing into :meth:`copy`.
        """
        batch = list(frames)
        start = self.nstep if first is None else first
        rounded = self.declaration.round_batch(batch) if len(batch) > 1 else None
        seen: dict[str, Block] = {}
        return [
            self._admit(frame, f"frame {start + i}", rounded, seen) for i, frame in enumerate(batch)
        ]

    def admit(
        self, frame: Frame, *, path: str | None = None, rounded: Rounded | None = None
    ) -> Update:
        """Check ``frame`` as the next frame and return what it stores.

        Refuses (nothing changes): a missing, repeated or decreasing step
        (:class:`~mrecd.errors.StepOrderError`), a time where frame 0 had none
        or none where it had one, anything the declaration refuses, a block
        whose row count breaks its system block or its aligned target, an
        unresolved row reference, a cell whose ``cell_defined`` differs from the
        run's. ``rounded``: the batch's rounding, from :meth:`Declaration.round_batch`.
        """
        return self._admit(frame, path or f"frame {self.nstep}", rounded, None)

    def _admit(
        self, frame: Frame, where: str, rounded: Rounded | None, seen: dict[str, Block] | None
    ) -> Update:
        """:meth:`admit`; ``seen``: the blocks the batch's frames before presented, by name."""
        if not isinstance(frame, Frame):
            raise InvalidRecord(f"admit takes a Frame, not {type(frame).__name__}", path=where)
        step = frame.step
        if step is None:
            raise InvalidRecord("a trajectory frame carries its step number", path=f"{where}.step")
        if self.last_step is not None and step <= self.last_step:
            raise StepOrderError(
                f"step {step} is not above the previous step {self.last_step}: steps are strictly"
                " increasing (trajectory.md §1.1)",
                path=f"{where}.step",
            )
        has_time = frame.time is not None
        if self.has_time is not None and has_time != self.has_time:
            raise InvalidRecord(
                "time is all-or-nothing: frame 0 "
                + (
                    "had a time, this frame has none"
                    if self.has_time
                    else "had none, this frame has one"
                )
                + " (trajectory.md §1.2)",
                path=f"{where}.time",
            )
        conformed = self.declaration.conform(frame, path=where, rounded=rounded)
        changed: dict[str, Block] = {}
        current = self.current
        resolved = dict(current)
        for name, block in conformed._blocks.items():
            if self.system:
                self._check_system_rows(name, block, where)
            if seen is not None:
                last, seen[name] = seen.get(name), block
                if last is not None and _same_memory(last, block):
                    # what the frame before presented, and it resolved to these bytes
                    continue
            previous = current.get(name)
            if previous is None or not previous.same_content(block):
                block = _owned(block)
                changed[name] = block
                resolved[name] = block
        if self._aligned:
            self._check_aligned(resolved, where)
        self._check_targets(resolved, changed.keys(), where)
        box_update = self._box_update(frame.box, where)
        update = Update(
            ordinal=self.nstep,
            step=step,
            time=frame.time,
            meta=conformed.meta,
            blocks=changed,
            box=box_update,
            frame=conformed,
        )
        self.nstep += 1
        self.last_step = step
        self.has_time = has_time
        self.current = resolved
        if box_update is not None:
            self.box = box_update
        return update

    def _check_system_rows(self, name: str, block: Block, where: str) -> None:
        system_block = self.system.get(name)
        if system_block is None:
            return
        if block.count != system_block.count:
            raise InvalidRecord(
                f"trajectory block {name!r} holds {block.count} rows but system/{name} has"
                f" {system_block.count}: same-named blocks align 1:1 (trajectory.md §1.5)",
                path=f"{where}/{name}",
            )
        if (
            "id" in block
            and "id" in system_block
            and not block["id"].same_values(system_block["id"])
        ):
            raise InvalidRecord(
                f"trajectory {name}/id differs from system/{name}/id row for row"
                " (trajectory.md §1.5)",
                path=f"{where}/{name}/id",
            )

    def _check_aligned(self, resolved: Mapping[str, Block], where: str) -> None:
        for name, target in self._aligned:
            if name not in resolved:
                continue
            if target not in resolved:
                raise InvalidRecord(
                    f"aligned block {name!r} is present while its target {target!r} is absent"
                    " (trajectory.md §7.2)",
                    path=f"{where}/{name}",
                )
            if resolved[name].count != resolved[target].count:
                raise InvalidRecord(
                    f"aligned block {name!r} has {resolved[name].count} rows but its target"
                    f" {target!r} has {resolved[target].count}: restate it when the target's row"
                    " count changes (trajectory.md §7.2)",
                    path=f"{where}/{name}",
                )

    def _check_targets(
        self, resolved: Mapping[str, Block], touched: KeysView[str], where: str
    ) -> None:
        """Range-check the references of blocks that changed or whose target changed."""
        for name, block in resolved.items():
            targets = block._targets
            if not targets or not (name in touched or touched & set(targets.values())):
                continue
            try:
                check_block_targets(name, block, resolved, self.sections)
            except InvalidRecord as exc:
                raise InvalidRecord(exc.message, path=f"{where}/{exc.path}") from None

    def _box_update(self, box: Box | None, where: str) -> Box | None:
        if box is None or box == self.box:
            return None
        if self.box is not None and box.cell_defined != self.box.cell_defined:
            raise InvalidRecord(
                "cell_defined is one flag for the whole run; this cell changes it"
                " (trajectory.md §4)",
                path=f"{where}/box",
            )
        return box


def _owned(block: Block) -> Block:
    """``block`` with arrays it owns.

    A presented column may view its producer's array; a simulation that
    updates that array in place after appending must not change an update
    that is queued, or the carried state the next frame is compared with.
    """
    held = block._columns
    if all(
        _frozen(c._values) and (c._validity is None or _frozen(c._validity)) for c in held.values()
    ):
        return block  # rounded or converted here (the common case): nothing to copy
    columns = {
        name: Column._trusted(
            column.values if _frozen(column.values) else column.values.copy(),
            column.dtype,
            None if column.validity is None else column.validity.copy(),
            column.precision,
        )
        for name, column in block.items()
    }
    return Block._trusted(
        columns, block.count, block.structural_shape, block.targets, block.attributes
    )


def _same_memory(a: Block, b: Block) -> bool:
    """Whether ``b``'s columns are ``a``'s arrays (bitwise equal without reading them).

    Two views of the whole of one contiguous array with its shape, strides and dtype
    hold the same bytes at the same time: the common case of a producer presenting
    one unchanging array (bonds, ids) in every frame of a batch.
    """
    if a._count != b._count or a._columns.keys() != b._columns.keys():
        return False
    for name, column in a._columns.items():
        other = b._columns[name]
        x, y = column._values, other._values
        if column._validity is not None or other._validity is not None or x is None or y is None:
            return False
        if x is y:
            continue
        base = x.base
        if (
            base is None
            or base is not y.base
            or type(base) is not np.ndarray
            or not (base.flags.c_contiguous or base.flags.f_contiguous)
            or x.dtype != base.dtype
            or y.dtype != base.dtype
            or x.shape != base.shape
            or y.shape != base.shape
            or x.strides != base.strides
            or y.strides != base.strides
        ):
            return False
    return True


def _frozen(array: np.ndarray[Any, Any] | None) -> bool:
    """Whether nobody can change ``array``'s memory: its owner is a read-only array.

    Arrays the writer made itself (rounded, converted) are frozen when made;
    a producer's array is writeable at its owner, so it gets copied.
    """
    owner: Any = array
    while isinstance(owner, np.ndarray) and owner.base is not None:
        owner = owner.base
    return isinstance(owner, np.ndarray) and not owner.flags.writeable
