"""A record's trajectory as stored, for a server that sends it without re-encoding.

When every update of a record restates every block (no block carry-forward,
lmdb.md §5), the stored update values *are* the frames: a server can send
them as they are (``application/x-mrec-records``, :mod:`mrecd.codecs`) and a
client builds each frame from them. The values are checked first, as a
reader checks them (:meth:`LmdbCollection.frames`), once per record per
process: records never change once committed, so a record whose cached
layout says every frame was checked is not checked again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...model import Frame
from ._read import HeldFrames, RecordView, copies
from ._store import LmdbCollection

__all__ = ["StoredUpdates", "stored_updates"]


@dataclass(frozen=True, slots=True)
class StoredUpdates:
    """A record's stored trajectory updates, each restating every block.

    Attributes
    ----------
    values
        The ``f`` values in frame order, as stored (MRF1 bytes, lmdb.md §6).
    meta_types
        The per-step meta tags (``sequence_schema.meta``) the values' meta is typed by.
    boxes
        The ordinals of the updates carrying a cell (carried forward from there).
    """

    values: list[bytes]
    meta_types: dict[str, str]
    boxes: list[int]


def stored_updates(
    binding: LmdbCollection, txn: Any, view: RecordView
) -> StoredUpdates | Sequence[Frame]:
    """Record ``view``'s checked stored updates; its resolved frames (as
    :meth:`LmdbCollection.frames`) when a block carries forward.

    Reads in ``txn``; checks every update (and caches the layout) unless this
    process has checked them all before. The values a check read are the ones
    returned (not read again).
    """
    n = view.n_frames
    layout = view.caches.layout(view.r)
    frames = None
    if layout is None or layout.known < n or len(layout.checked) < n:
        frames = binding.frames(txn, view)  # every update read and checked; the layout cached
        layout = binding.layout(txn, view)
    if any(len(ordinals) != n for ordinals, _ in layout.updates.values()):
        return binding.frames(txn, view) if frames is None else frames
    values = frames.bufs if isinstance(frames, HeldFrames) else copies(txn, view)
    return StoredUpdates(values, dict(view.expect.tags), list(layout.boxes[0]))
