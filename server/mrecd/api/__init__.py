"""The local API: records at a path, catalogs of records, packing and validation (sync).

:func:`create_record` / :func:`open_record` work on one record root at an
exact path; :func:`open` returns a :class:`Catalog` of many records in one
root. Every call here blocks the calling thread; an async skin for the
service comes later on top of the same code.
"""

from ._catalog import Catalog, check_record_name
from ._catalog import open_catalog as open
from ._record import StoredRecord, create_record, open_record, pack_record
from ._validate import validate_record
from ._violations import Violation

__all__ = [
    "Catalog",
    "StoredRecord",
    "Violation",
    "check_record_name",
    "create_record",
    "open",
    "open_record",
    "pack_record",
    "validate_record",
]
