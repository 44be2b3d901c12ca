"""The ``meta`` value (lmdb.md §3): layout tag and version, the collection
document, ``sequence_schema`` and the counts. Written last in every commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ...errors import InvalidRecord, UnsupportedVersion
from ...model import Declaration, check_collection_meta, dumps_strict, loads_strict

__all__ = [
    "INDEX_PAGES",
    "LAYOUT",
    "LAYOUT_VERSION",
    "PAGE_ROWS",
    "MetaValue",
    "decode_meta",
    "meta_encoder",
]

LAYOUT: Final = "mrec-lmdb"
#: The byte layout this package writes and the newest it reads.
LAYOUT_VERSION: Final = 1
#: mrecd's extension key: the index is split in pages of this many rows (README).
INDEX_PAGES: Final = "mrecd_index_pages"
#: Rows per index page mrecd writes; a collection of at most this many records
#: keeps the one ``index`` value of lmdb.md §4.
PAGE_ROWS: Final = 512
_MAX_PAGE_ROWS: Final = 2**24
_KEYS: Final = (
    "layout",
    "layout_version",
    "collection",
    "sequence_schema",
    "n_records",
    "n_frames",
    INDEX_PAGES,
)
#: Keys a reader accepts missing (lmdb.md §8, §3 (ref)).
_OPTIONAL: Final = frozenset({"layout_version", "sequence_schema", INDEX_PAGES})
_EMPTY_SCHEMA: Final[dict[str, Any]] = {"blocks": {}, "meta": {}}


@dataclass(frozen=True, slots=True)
class MetaValue:
    """A decoded, checked ``meta`` value."""

    collection: dict[str, Any]
    declaration: Declaration | None
    n_records: int
    n_frames: int
    #: rows per index page when the index is paged (mrecd's extension), else ``None``
    page_rows: int | None = None

    @property
    def molrec_version(self) -> int | None:
        """The collection's contract version; ``None`` when unstamped (read as current)."""
        version = self.collection.get("molrec_version")
        return None if version is None else int(version)


def meta_encoder(
    collection: dict[str, Any], declaration: Declaration | None, page_rows: int | None = None
) -> Any:
    """A function ``(n_records, n_frames) -> bytes`` for the fixed parts given.

    The document and the schema are serialized once; a commit only adds its
    counts. ``page_rows`` marks a paged index (the key is left out otherwise,
    so a one-value index keeps lmdb.md §3's six keys).
    """
    schema = _EMPTY_SCHEMA if declaration is None else declaration.to_dict()
    head = (
        f'{{"layout":{dumps_strict(LAYOUT)},"layout_version":{LAYOUT_VERSION},'
        f'"collection":{dumps_strict(collection)},"sequence_schema":{dumps_strict(schema)},'
    )
    if page_rows is not None:
        head += f'"{INDEX_PAGES}":{page_rows},'

    def encode(n_records: int, n_frames: int) -> bytes:
        return f'{head}"n_records":{n_records},"n_frames":{n_frames}}}'.encode()

    return encode


def _page_rows(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_PAGE_ROWS:
        raise InvalidRecord(
            f"{INDEX_PAGES} is the index's rows per page, an integer in 1..{_MAX_PAGE_ROWS},"
            f" not {value!r}",
            path=f"meta.{INDEX_PAGES}",
        )
    return value


def _count(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise InvalidRecord(
            f"{key} must be a non-negative JSON integer, not {value!r}", path=f"meta.{key}"
        )
    return value


def _layout_version(meta: dict[str, Any]) -> None:
    if "layout_version" not in meta:
        # lmdb.md §8: writers of the reference 0.2.0 line and the later upstream
        # revision write no layout_version; their byte layout is layout 1.
        return
    version = meta["layout_version"]
    if (
        isinstance(version, bool)
        or not isinstance(version, int)
        or not 1 <= version <= LAYOUT_VERSION
    ):
        raise UnsupportedVersion(
            f"layout_version must be an integer in 1..{LAYOUT_VERSION}, not {version!r}"
            " (lmdb.md §3)",
            path="meta.layout_version",
        )


def _declaration(schema: Any) -> Declaration | None:
    if schema is None:
        return None  # (ref) alternative: "no declaration" written as null or left out
    declaration = Declaration.from_dict(schema, path="meta.sequence_schema")
    # (ref) {"blocks": {}, "meta": {}} is how "no declaration" is written.
    return None if not declaration.blocks and not declaration.meta else declaration


def decode_meta(raw: bytes | memoryview) -> MetaValue:
    """Read and check a ``meta`` value as a reader (lmdb.md §3).

    Refuses: not a JSON object; ``layout`` other than ``"mrec-lmdb"``;
    a ``layout_version`` outside ``1..=1`` (``"1"`` and ``null`` included; a
    missing one is 1, as lmdb.md §8's writers leave it out); a
    collection document without ``units``, with unparseable units or with a
    ``molrec_version`` that is ``null``, newer than 2 or not an integer; a
    malformed ``sequence_schema``; counts that are not non-negative integers.
    Every other key of the value is required except ``sequence_schema``
    (absent or ``null``: no declaration), and no other key is allowed
    (chosen: an unknown key could change what the file means, as in frame
    headers) but mrecd's own ``mrecd_index_pages`` (the index is paged; a
    positive integer, rows per page).
    """
    try:
        meta = loads_strict(bytes(raw))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise InvalidRecord(f"meta is not UTF-8 JSON: {exc}", path="meta") from None
    if not isinstance(meta, dict):
        raise InvalidRecord("meta is a JSON object (lmdb.md §3)", path="meta")
    if meta.get("layout") != LAYOUT:
        raise InvalidRecord(
            f"layout must be {LAYOUT!r}, not {meta.get('layout')!r}: not a collection file"
            " (lmdb.md §3)",
            path="meta.layout",
        )
    _layout_version(meta)
    unknown = set(meta) - set(_KEYS)
    if unknown:
        raise InvalidRecord(f"unknown meta keys {sorted(unknown)} (lmdb.md §3)", path="meta")
    missing = [k for k in _KEYS if k not in meta and k not in _OPTIONAL]
    if missing:
        raise InvalidRecord(f"meta lacks {missing} (lmdb.md §3)", path="meta")
    collection = check_collection_meta(meta["collection"], path="meta.collection")
    return MetaValue(
        collection=collection,
        declaration=_declaration(meta.get("sequence_schema")),
        n_records=_count(meta["n_records"], "n_records"),
        n_frames=_count(meta["n_frames"], "n_frames"),
        page_rows=_page_rows(meta[INDEX_PAGES]) if INDEX_PAGES in meta else None,
    )
