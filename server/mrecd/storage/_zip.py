"""A packed ``*.mrec.zip`` read in place, as a read-only store over another store's object.

The central directory is parsed once (a few ranged reads); a stored member
is a contiguous range of the archive, so a member read is one ranged read of
the archive object (chunking.md §7). Compressed members are read whole.
"""

from __future__ import annotations

import io
import struct
import threading
import zipfile
from collections.abc import Iterator

from ..errors import InvalidRecord, ReadOnlyError
from ._base import (
    ByteRange,
    ByteRequest,
    ObjectInfo,
    Offset,
    PutMode,
    RangeReader,
    Store,
    Suffix,
    check_request,
    slice_range,
)

__all__ = ["ZipStore"]


class _ArchiveFile(io.RawIOBase):
    """A seekable read-only file over a :class:`RangeReader` (what :mod:`zipfile` wants)."""

    def __init__(self, source: RangeReader) -> None:
        self._source = source
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._source.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._source.pread(self._pos, len(buffer))
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)


class _MemberReader(RangeReader):
    """A stored member: a window of the archive's reader."""

    def __init__(self, source: RangeReader, start: int, size: int) -> None:
        self._source = source
        self._start = start
        self.size = size

    def pread(self, offset: int, size: int) -> bytes:
        size = self.clip(offset, size)
        return self._source.pread(self._start + offset, size) if size else b""


class _BytesReader(RangeReader):
    def __init__(self, data: bytes) -> None:
        self._data = data
        self.size = len(data)

    def pread(self, offset: int, size: int) -> bytes:
        return self._data[offset : offset + size]


class ZipStore(Store):
    """The members of the zip archive at ``key`` of ``parent``, read-only.

    Raises
    ------
    NotFound-like ``InvalidRecord``
        The object is not a readable zip archive.
    """

    conditional_put = False

    def __init__(self, parent: Store, key: str) -> None:
        super().__init__(read_only=True)
        self.parent = parent
        self.key = key
        source = parent.open_reader(key)
        if source is None:
            raise InvalidRecord("no archive at this key", path=key)
        self._source = source
        try:
            self._zip = zipfile.ZipFile(io.BufferedReader(_ArchiveFile(source), 1 << 16))
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            source.close()
            raise InvalidRecord(
                f"not a readable zip archive: {exc} (chunking.md §7)", path=key
            ) from None
        self._infos = {i.filename: i for i in self._zip.infolist() if not i.filename.endswith("/")}
        self._starts: dict[str, int] = {}
        self._lock = threading.Lock()  # zipfile's shared file position

    @property
    def url(self) -> str:
        return f"{self.parent.url.rstrip('/')}/{self.key}"

    def infos(self) -> list[zipfile.ZipInfo]:
        """The archive's entry records (compression method, sizes), for packing checks."""
        return self._zip.infolist()

    def _start(self, info: zipfile.ZipInfo) -> int:
        start = self._starts.get(info.filename)
        if start is None:
            header = self._source.pread(info.header_offset, 30)
            if len(header) != 30 or header[:4] != b"PK\x03\x04":
                raise InvalidRecord("corrupt local header in the zip archive", path=info.filename)
            name_length, extra_length = struct.unpack_from("<HH", header, 26)
            start = info.header_offset + 30 + name_length + extra_length
            self._starts[info.filename] = start
        return start

    def open_reader(self, key: str) -> RangeReader | None:
        info = self._infos.get(key)
        if info is None:
            return None
        if info.compress_type != zipfile.ZIP_STORED:
            with self._lock:
                return _BytesReader(self._zip.read(key))
        return _MemberReader(self._source, self._start(info), info.file_size)

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        check_request(byte_range, key)
        reader = self.open_reader(key)
        if reader is None:
            return None
        if isinstance(reader, _BytesReader) or byte_range is None:
            return slice_range(reader.pread(0, reader.size), byte_range)
        if isinstance(byte_range, ByteRange):
            return reader.pread(byte_range.start, byte_range.end - byte_range.start)
        if isinstance(byte_range, Offset):
            return reader.pread(byte_range.offset, reader.size)
        assert isinstance(byte_range, Suffix)
        length = min(byte_range.length, reader.size)
        return reader.pread(reader.size - length, length)

    def head(self, key: str) -> ObjectInfo | None:
        info = self._infos.get(key)
        return None if info is None else ObjectInfo(info.file_size, f'"z{info.CRC:08x}"')

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        start = f"{prefix}/" if prefix else ""
        dirs: set[str] = set()
        files: set[str] = set()
        for name in self._infos:
            if name.startswith(start):
                head, sep, _ = name[len(start) :].partition("/")
                (dirs if sep else files).add(head)
        return sorted(dirs), sorted(files)

    def keys(self, prefix: str = "") -> Iterator[str]:
        start = f"{prefix}/" if prefix else ""
        return iter(sorted(n for n in self._infos if n.startswith(start)))

    def put(
        self,
        key: str,
        data: bytes | bytearray | memoryview,
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        raise ReadOnlyError("a packed *.mrec.zip is read-only (chunking.md §7)", path=key)

    def delete(self, key: str) -> None:
        raise ReadOnlyError("a packed *.mrec.zip is read-only (chunking.md §7)", path=key)

    def close(self) -> None:
        self._zip.close()
        self._source.close()
