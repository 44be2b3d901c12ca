"""Records read for sending: stored bytes where they can travel as they are.

The service's batch read (``GET /v1/collections/{name}/records``) sends each
record's trajectory updates as the file stores them when no block carries
forward (:func:`mrecd.bindings.lmdb.stored_updates`), instead of resolving
them into :class:`~mrecd.model.Frame` objects and encoding those again.
Every value is checked as :meth:`Collection.read_many` checks it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..bindings.lmdb import StoredUpdates, stored_updates
from ..model import Frame
from ._collection import Collection, _ordinal

__all__ = ["StoredParts", "read_stored"]


@dataclass(frozen=True, slots=True)
class StoredParts:
    """Record ``r`` as read for sending.

    Attributes
    ----------
    r
        The record's ordinal.
    meta
        Its ``meta`` document.
    system
        Its system's stored MRF1 bytes, or ``None``.
    updates
        Its trajectory's stored updates when every update restates every
        block; ``None`` otherwise (see ``frames``) or without a trajectory.
    frames
        Its resolved frames when ``updates`` is ``None`` and it has a
        trajectory; ``None`` otherwise.
    """

    r: int
    meta: dict[str, Any]
    system: bytes | None
    updates: StoredUpdates | None
    frames: Sequence[Frame] | None


def read_stored(collection: Collection, rs: Iterable[int]) -> list[StoredParts]:
    """Records ``rs`` (in that order) in one read transaction, as :class:`StoredParts`.

    Raises
    ------
    RecordOutOfRange
        An ordinal is out of range.
    InvalidRecord
        A stored record breaks a reader rule.
    """
    binding = collection._binding
    out = []
    with binding.reading(buffers=False) as txn:  # values as bytes: each is sent as stored
        state = binding.state(txn)
        for r in rs:
            k = _ordinal(r, state.meta.n_records, "record")
            parts, system = binding.record_stored(txn, state, k)
            updates, frames = None, None
            if parts.view is not None:
                got = stored_updates(binding, txn, parts.view)
                if isinstance(got, StoredUpdates):
                    updates = got
                else:
                    frames = got
            out.append(StoredParts(k, parts.meta, system, updates, frames))
    return out
