"""The LMDB collection binding (lmdb.md): one ``*.mrec.lmdb`` file, many records.

The only package that imports ``lmdb``. :class:`LmdbCollection` is the
binding object the local API's :class:`~mrecd.api.Collection` wraps.
"""

from ._index import RESERVED, IndexColumnSpec
from ._interchange import collection_from_dict, collection_to_dict
from ._keys import FF, INDEX, META, frame_key, record_key, system_key
from ._meta import LAYOUT, LAYOUT_VERSION
from ._read import RecordView, join, quick_frame, replay
from ._store import SUFFIX, LmdbCollection, RecordParts
from ._stored import StoredUpdates, stored_updates
from ._write import incoming, index_values

__all__ = [
    "FF",
    "INDEX",
    "LAYOUT",
    "LAYOUT_VERSION",
    "META",
    "RESERVED",
    "SUFFIX",
    "IndexColumnSpec",
    "LmdbCollection",
    "RecordParts",
    "RecordView",
    "StoredUpdates",
    "collection_from_dict",
    "collection_to_dict",
    "frame_key",
    "incoming",
    "index_values",
    "join",
    "quick_frame",
    "record_key",
    "replay",
    "stored_updates",
    "system_key",
]
