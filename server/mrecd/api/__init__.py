"""The local API (minimal: created on the ``lmdb`` branch for collections)."""

from ._collection import (
    Collection,
    CollectionTrajectory,
    RecordOutOfRange,
    create_collection,
    load_collection,
    open_collection,
)

__all__ = [
    "Collection",
    "CollectionTrajectory",
    "RecordOutOfRange",
    "create_collection",
    "load_collection",
    "open_collection",
]
