"""Collections, sans I/O: every collection request is built here and every answer parsed here.

:class:`CollectionCore` turns calls on a remote collection into
:class:`httpx.Request` objects and answers into :class:`mrecd.Record`,
:class:`mrecd.Block` and :mod:`mrecd.errors` values, so that the sync
(:mod:`._sync_collections`) and async (:mod:`._async_collections`) shells
only send. Records travel as ``application/x-mrec-records`` (the codec of
:mod:`mrecd.codecs`, shared with the server) or as JSON with ``wire="json"``.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

import httpx
import numpy as np

from mrecd._record import Record
from mrecd.codecs import (
    RECORDS,
    RecordItem,
    RecordStreamDecoder,
    StoredFrames,
    SystemCache,
    decode_frame,
    encode_record,
)
from mrecd.errors import FrameBytesError, InvalidRecord
from mrecd.forcefield import ForceField
from mrecd.model import Block, Declaration, Frame, frame_input

from ._core import Core
from ._wire import FRAME, JSON, NDJSON

__all__ = [
    "BATCH_REQUEST",
    "CollectionCore",
    "CollectionSummary",
    "RecordsDecoder",
    "batch_orders",
    "check_ordinal",
    "chunks",
]

#: Most ordinals one batch request names (its query string stays well under 16 kB).
BATCH_REQUEST: Final = 1024
_RECORD_KEYS: Final = frozenset({"meta", "system", "trajectory"})


@dataclass(frozen=True)
class CollectionSummary:
    """A collection's summary: counts, document, declaration, index columns, read-only-ness."""

    name: str
    n_records: int
    n_frames: int
    meta: dict[str, Any]
    declaration: Declaration | None
    index_columns: dict[str, dict[str, Any]]
    forcefield: bool
    read_only: bool


def check_ordinal(r: object) -> int:
    """``r`` as a record ordinal; ``TypeError`` for anything but an integer (bool included)."""
    if isinstance(r, bool):
        raise TypeError("record ordinals are integers, not bool")
    try:
        return operator.index(r)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"record ordinals are integers, not {type(r).__name__}") from None


def chunks[T](items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """``items`` cut into runs of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def batch_orders(
    n: int, size: int, *, shuffle: bool, seed: int | None, drop_last: bool
) -> Iterator[list[int]]:
    """The ordinals of each batch of an epoch over ``n`` records, as the local API draws them.

    The same seed gives the same batches locally and remotely (one numpy
    permutation of ``range(n)``).
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size is a positive integer, not {size!r}")
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    stop = n - n % size if drop_last else n
    for start in range(0, stop, size):
        yield order[start : start + size].tolist()


def _jsonable(value: Any) -> Any:
    """Index values as JSON: numpy scalars and arrays as Python numbers and lists."""
    if isinstance(value, Mapping):
        return {k: _jsonable(v) for k, v in value.items()}
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _parts(record: Any, path: str) -> tuple[dict[str, Any], Frame | None, list[Frame] | None]:
    """``(meta, system, frames)`` of a record as :meth:`Collection.append` takes it."""
    meta: Any
    if isinstance(record, Record):
        foreign = [n for n in ("frame", "forcefield", "status", "method") if getattr(record, n)]
        meta, system, trajectory = record.meta, record.system, record.trajectory
    elif isinstance(record, Mapping):
        foreign = sorted(set(record) - _RECORD_KEYS)
        meta, system = record.get("meta"), record.get("system")
        trajectory = record.get("trajectory")
    else:
        raise InvalidRecord(
            f"a record is a mrecd.Record or a mapping, not {type(record).__name__}", path=path
        )
    if foreign:
        raise InvalidRecord(
            f"a collection record holds only meta, system and trajectory; it carries {foreign}"
            " (collection.md §2.5, lmdb.md §7; the force field is the collection's)",
            path=path,
        )
    if meta is not None and not isinstance(meta, Mapping):
        raise InvalidRecord("a record's meta is a JSON object", path=f"{path}.meta")
    if isinstance(trajectory, (str, bytes)) or (
        trajectory is not None and not isinstance(trajectory, Iterable)
    ):
        raise InvalidRecord("a trajectory is a sequence of frames", path=f"{path}.trajectory")
    frames = (
        None
        if trajectory is None
        else [
            frame_input(f, f"{path}.trajectory[{k}]", update=True) for k, f in enumerate(trajectory)
        ]
    )
    sys_frame = None if system is None else frame_input(system, f"{path}.system", update=False)
    return dict(meta or {}), sys_frame, frames


def _record(item: RecordItem) -> Record:
    """The record of a decoded stream item, without :class:`Record`'s checks of
    its parts: the decoder built them (a JSON object, a frame, frames)."""
    record = object.__new__(Record)
    record.meta, record.system = item.meta, item.system
    frames = item.frames
    # Frames that travelled as stored updates are built on first use, as a
    # local read_many's are: Record would build them all to copy them into a list.
    trajectory = frames if frames is None or isinstance(frames, StoredFrames) else list(frames)
    record.trajectory = trajectory  # type: ignore[assignment]
    record.frame = record.forcefield = record.declaration = None
    record.status = record.method = None
    record.sections = {}
    return record


def _json_record(doc: Mapping[str, Any], where: str) -> Record:
    system, frames = doc.get("system"), doc.get("trajectory")
    return Record(
        doc.get("meta") or {},
        system=None if system is None else Frame.from_dict(system, path=f"{where}.system"),
        trajectory=None
        if frames is None
        else [Frame.from_dict(f, path=f"{where}.trajectory[{k}]") for k, f in enumerate(frames)],
    )


class RecordsDecoder:
    """Records of a streamed batch read as its bytes arrive (x-mrec-records or JSON lines)."""

    def __init__(self, content_type: str, systems: SystemCache | None = None) -> None:
        self._lines = content_type == NDJSON
        self._stream = RecordStreamDecoder(systems)
        self._buffer = bytearray()
        self._count = 0

    def feed(self, chunk: bytes) -> list[Record]:
        """Records completed by ``chunk``, in order."""
        if not self._lines:
            return [_record(item) for item in self._stream.feed(chunk)]
        self._buffer += chunk
        out: list[Record] = []
        while (newline := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:newline])
            del self._buffer[: newline + 1]
            if line.strip():
                out.append(_json_record(json.loads(line), f"records[{self._count}]"))
                self._count += 1
        return out

    def close(self) -> None:
        """Refuse a stream that ended inside a record (:class:`~mrecd.FrameBytesError`)."""
        if not self._lines:
            self._stream.close()
        elif self._buffer.strip():
            raise FrameBytesError("the record stream ended inside a record", path="body")


@dataclass
class CollectionCore:
    """Builds the collection requests and parses their answers (no I/O).

    Parameters
    ----------
    core
        The client's :class:`~mrecd_client._core.Core` (URL, token, timeout, wire).
    systems
        The systems of the collection's records decoded so far (by their
        bytes: a record read again shares its system, as locally).
    """

    core: Core
    systems: SystemCache = field(default_factory=SystemCache)

    @staticmethod
    def path(name: str) -> str:
        """``/collections/{name}`` with ``name`` escaped (the server validates it)."""
        return f"/collections/{quote(name, safe='')}"

    # -- building ------------------------------------------------------------------------------

    def create(
        self,
        name: str,
        *,
        meta: Mapping[str, Any],
        declaration: Declaration | Mapping[str, Any] | None,
        index_columns: Mapping[str, Mapping[str, Any]] | None,
        forcefield: ForceField | Mapping[str, Any] | None,
    ) -> httpx.Request:
        """``PUT /collections/{name}``."""
        if not isinstance(meta, Mapping):
            raise InvalidRecord("the collection document is a mapping", path="meta")
        for column, entry in (index_columns or {}).items():
            if isinstance(entry, Mapping) and entry.get("derive") is not None:
                raise InvalidRecord(
                    "derive is a Python callable and cannot travel over HTTP; pass each"
                    " record's index values to append/extend instead",
                    path=f"index_columns.{column}.derive",
                )
        body: dict[str, Any] = {"meta": _jsonable(dict(meta))}
        if declaration is not None:
            body["declaration"] = (
                declaration.to_dict() if isinstance(declaration, Declaration) else declaration
            )
        if index_columns is not None:
            body["index_columns"] = {k: _jsonable(dict(v)) for k, v in index_columns.items()}
        if forcefield is not None:
            body["forcefield"] = (
                forcefield.to_dict() if isinstance(forcefield, ForceField) else forcefield
            )
        return self.core.request("PUT", self.path(name), json_body=body)

    def listing(self, prefix: str | None) -> httpx.Request:
        """The collection names starting with ``prefix``."""
        return self.core.request("GET", "/collections", params={"prefix": prefix})

    def summary(self, name: str) -> httpx.Request:
        """The collection summary."""
        return self.core.request("GET", self.path(name))

    def append(
        self,
        name: str,
        records: Sequence[Any],
        rows: Sequence[Mapping[str, Any] | None],
    ) -> httpx.Request:
        """``POST /collections/{name}/records``: every record in one request (one transaction)."""
        parts = [_parts(record, f"batch[{k}]") for k, record in enumerate(records)]
        if self.core.wire == "json":
            items = []
            for (meta, system, frames), row in zip(parts, rows, strict=True):
                item: dict[str, Any] = {
                    "meta": meta,
                    "system": None if system is None else system.to_dict(),
                    "trajectory": None if frames is None else [f.to_dict() for f in frames],
                }
                if row is not None:
                    item["index"] = _jsonable(dict(row))
                items.append(item)
            return self.core.request("POST", f"{self.path(name)}/records", json_body=items)
        body = b"".join(
            encode_record(meta, system, frames, None if row is None else {"index": _jsonable(row)})
            for (meta, system, frames), row in zip(parts, rows, strict=True)
        )
        return self.core.request(
            "POST",
            f"{self.path(name)}/records",
            headers={"Content-Type": RECORDS},
            content=body,
        )

    def record(self, name: str, r: int) -> httpx.Request:
        """Record ``r`` (negative counts from the end)."""
        accept = JSON if self.core.wire == "json" else RECORDS
        return self.core.request(
            "GET", f"{self.path(name)}/records/{r}", headers={"Accept": accept}
        )

    def batch(self, name: str, ordinals: Sequence[int]) -> httpx.Request:
        """One streamed batch read of ``ordinals`` (in that order)."""
        accept = NDJSON if self.core.wire == "json" else RECORDS
        return self.core.request(
            "GET",
            f"{self.path(name)}/records",
            params={"r": ",".join(str(r) for r in ordinals)},
            headers={"Accept": accept},
        )

    def index(self, name: str) -> httpx.Request:
        """The index block, as MRF1 (JSON with ``wire="json"``)."""
        accept = JSON if self.core.wire == "json" else FRAME
        return self.core.request("GET", f"{self.path(name)}/index", headers={"Accept": accept})

    # -- parsing -------------------------------------------------------------------------------

    def names(self, response: httpx.Response) -> list[str]:
        """The names of a collection listing."""
        return list(self.core.json(response)["collections"])

    def parse_summary(self, response: httpx.Response) -> CollectionSummary:
        """The collection summary."""
        doc = self.core.json(response)
        raw = doc.get("declaration")
        return CollectionSummary(
            name=doc["name"],
            n_records=int(doc["n_records"]),
            n_frames=int(doc["n_frames"]),
            meta=dict(doc["meta"]),
            declaration=None if raw is None else Declaration.from_dict(raw),
            index_columns=dict(doc.get("index_columns") or {}),
            forcefield=bool(doc.get("forcefield", False)),
            read_only=bool(doc.get("read_only", False)),
        )

    def appended(self, response: httpx.Response) -> range:
        """The ordinals of the appended records."""
        doc = self.core.json(response)
        first, count = int(doc["first"]), int(doc["count"])
        return range(first, first + count)

    def one_record(self, response: httpx.Response) -> Record:
        """The record a successful ``response`` carries."""
        self.core.check(response)
        kind = response.headers.get("content-type", RECORDS).split(";")[0].strip()
        if kind == JSON:
            return _json_record(json.loads(response.content), "record")
        decoder = RecordStreamDecoder(self.systems)
        items = decoder.feed(response.content)
        decoder.close()
        if len(items) != 1:
            raise FrameBytesError(f"expected one record, got {len(items)}", path="body")
        return _record(items[0])

    def parse_index(self, response: httpx.Response) -> Block:
        """The index block ``records``."""
        self.core.check(response)
        kind = response.headers.get("content-type", FRAME).split(";")[0].strip()
        if kind == JSON:
            return Block.from_dict(json.loads(response.content), path="records")
        return decode_frame(response.content, copy=True)["records"]

    @staticmethod
    def stream_kind(response: httpx.Response) -> str:
        """The media type of a streamed batch answer."""
        return str(response.headers.get("content-type", RECORDS)).split(";")[0].strip()
