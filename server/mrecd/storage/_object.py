"""Object storage (S3, GCS, Azure, obstore's ``MemoryStore``) through obstore.

Every write is a whole-object PUT; ``create`` and :class:`IfMatch` map to
obstore's conditional put modes, which S3 honours with ``If-None-Match`` and
``If-Match``. There are no positional writes and no atomic renames. Reads
are ranged GETs; a large :meth:`ObjectStore.put_file` is a multipart upload.
The only module importing obstore.

obstore's errors become mrecd's: a missing object reads as ``None``;
refused credentials raise :class:`~mrecd.errors.PermissionDenied`; anything
else that survives obstore's own retries raises
:class:`~mrecd.errors.StoreUnavailable` (a :class:`~mrecd.errors.RetryableError`).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import IO, Any, Final
from urllib.parse import urlsplit, urlunsplit

import obstore
from obstore.exceptions import (
    AlreadyExistsError,
    BaseError,
    InvalidPathError,
    NotFoundError,
    NotModifiedError,
    PermissionDeniedError,
    PreconditionError,
    UnauthenticatedError,
)

from ..errors import (
    InvalidRecord,
    MrecdError,
    NotFound,
    PermissionDenied,
    ReadOnlyError,
    StoreUnavailable,
)
from ._base import (
    ByteRange,
    ByteRequest,
    IfMatch,
    ObjectInfo,
    Offset,
    PutMode,
    Revalidated,
    Store,
    Suffix,
    check_key,
    check_request,
    join_key,
    precondition_failed,
)

__all__ = ["DEFAULT_CLIENT_OPTIONS", "DEFAULT_RETRY_CONFIG", "ObjectStore"]

_MISSING = (NotFoundError, FileNotFoundError)

#: Timeouts for every request: a dead endpoint fails in seconds, and a part of
#: a multipart upload (:attr:`ObjectStore.part_size`) still fits a slow link.
DEFAULT_CLIENT_OPTIONS: Final[Mapping[str, Any]] = {
    "connect_timeout": timedelta(seconds=10),
    "timeout": timedelta(minutes=5),
    "pool_idle_timeout": timedelta(seconds=60),
}

#: obstore retries 5xx, dropped connections and timeouts of safe requests
#: itself; a bounded total keeps a dead store from hanging a CLI for minutes.
DEFAULT_RETRY_CONFIG: Final[Mapping[str, Any]] = {
    "max_retries": 5,
    "retry_timeout": timedelta(minutes=2),
    "backoff": {
        "init_backoff": timedelta(milliseconds=100),
        "max_backoff": timedelta(seconds=10),
        "base": 2,
    },
}

# Schemes whose URL host is the bucket (container): the store is rooted there
# and the URL path is our key prefix, so one client serves every record under it.
_BUCKET_SCHEMES: Final = {
    "s3": "AWS",
    "s3a": "AWS",
    "gs": "GOOGLE",
    "az": "AZURE",
    "azure": "AZURE",
    "abfs": "AZURE",
    "abfss": "AZURE",
    "adl": "AZURE",
}

# Client options obstore would read from the environment, but does not once
# ``client_options`` is passed at all: read under the same names here.
_ENV_CLIENT_OPTIONS: Final = (
    "allow_http",
    "allow_invalid_certificates",
    "connect_timeout",
    "timeout",
    "proxy_url",
    "proxy_ca_certificate",
    "proxy_excludes",
)

_STATUS: Final = re.compile(r"non-2xx status code: (\d{3})")

_SECRET_WORDS: Final = ("secret", "key", "token", "password", "sas", "credential", "signature")


class ObjectStore(Store):
    """The objects of an obstore store under ``prefix``.

    Parameters
    ----------
    store
        An obstore store (``obstore.store.S3Store``, ``MemoryStore`` …).
    url
        The URL it stands for (what :attr:`url` answers).
    prefix
        Keys are relative to this prefix inside the bucket.
    read_only
        Refuse every write.
    """

    positional_writes = False
    conditional_put = True
    atomic_rename = False
    #: :meth:`put_file` uploads a file at least this large in parts of this size.
    #: S3 refuses parts under 5 MiB (but the last).
    part_size: int = 8 << 20
    #: Parts of one multipart upload in flight at once.
    part_concurrency: int = 4

    def __init__(self, store: Any, url: str, prefix: str = "", *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self._store = store
        self._url = url
        self.prefix = prefix.strip("/")

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        read_only: bool = False,
        client_options: Mapping[str, Any] | None = None,
        retry_config: Mapping[str, Any] | None = None,
        **config: Any,
    ) -> ObjectStore:
        """Open ``s3://bucket/prefix``, ``gs://bucket/prefix`` or ``az://container/prefix``.

        Credentials, region and endpoint come from the environment as obstore
        reads them (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``), overridden by
        ``config``. Nothing is sent over the network.

        Parameters
        ----------
        url
            The store URL; its path is the key prefix.
        read_only
            Refuse every write.
        client_options
            obstore client options, over :data:`DEFAULT_CLIENT_OPTIONS` and
            the environment's ``<PREFIX>_ALLOW_HTTP`` and friends.
        retry_config
            obstore retry configuration, over :data:`DEFAULT_RETRY_CONFIG`.
        **config
            Store configuration (``region``, ``endpoint``, ``account_name`` …).

        Raises
        ------
        InvalidRecord
            obstore cannot build a store from the URL and configuration (an
            unknown scheme or key, an Azure URL without an account), or a
            client option is passed as a store key.
        """
        from obstore.store import from_url

        misplaced = sorted(set(config) & set(_ENV_CLIENT_OPTIONS))
        if misplaced:  # obstore panics (not raises) on a client option among store keys
            raise InvalidRecord(
                f"{', '.join(misplaced)} belong in client_options, not the store configuration",
                path=_redact(url),
            )
        build: Any = from_url
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        env_prefix = _BUCKET_SCHEMES.get(scheme)
        root, prefix = (f"{scheme}://{parts.netloc}", parts.path) if env_prefix else (url, "")
        options = {**DEFAULT_CLIENT_OPTIONS, **_env_options(env_prefix), **(client_options or {})}
        retry = {**DEFAULT_RETRY_CONFIG, **(retry_config or {})}
        try:
            store = build(root, client_options=options, retry_config=retry, **config)
        except (BaseError, ValueError, TypeError) as exc:
            raise InvalidRecord(
                f"cannot open the object store: {_first_line(exc)}", path=_redact(url)
            ) from None
        return cls(store, url.rstrip("/"), prefix.strip("/"), read_only=read_only)

    @property
    def url(self) -> str:
        return self._url

    def info(self) -> dict[str, Any]:
        """What this store is, without secrets: URL, backend, bucket configuration, prefix.

        Keys and tokens (any configuration key naming a secret, key, token,
        password, SAS or credential) are left out, and so are a URL's user
        information and query.
        """
        return {
            "url": _redact(self._url),
            "backend": type(self._store).__name__,
            "prefix": self.prefix,
            "read_only": self.read_only,
            "config": _public(getattr(self._store, "config", None)),
            "client_options": _public(getattr(self._store, "client_options", None)),
            "retry_config": _public(getattr(self._store, "retry_config", None)),
        }

    def __repr__(self) -> str:
        backend = type(self._store).__name__
        return f"ObjectStore({_redact(self._url)!r}, backend={backend}, read_only={self.read_only})"

    def child(self, prefix: str) -> Store:
        if not prefix:
            return self
        return ObjectStore(
            self._store,
            f"{self._url}/{check_key(prefix)}",
            join_key(self.prefix, prefix),
            read_only=self.read_only,
        )

    def _k(self, key: str) -> str:
        return join_key(self.prefix, check_key(key))

    def _writable(self, key: str) -> str:
        if self.read_only:
            raise ReadOnlyError("the store is open read-only", path=key)
        return self._k(key)

    # -- reading -------------------------------------------------------------------------------

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        check_request(byte_range, key)
        if _empty_request(byte_range):
            return b"" if self.exists(key) else None
        options = {"range": _native_range(byte_range)} if byte_range is not None else None
        try:
            with _translated(key, "read"):
                result = obstore.get(self._store, self._k(key), options=options)  # type: ignore[arg-type]
                return bytes(result.bytes())
        except _MISSING:
            return None
        except StoreUnavailable as exc:
            if _range_past_end(exc):
                return b""
            raise

    def head(self, key: str) -> ObjectInfo | None:
        try:
            with _translated(key, "head"):
                meta = obstore.head(self._store, self._k(key))
        except _MISSING:
            return None
        return _info(meta)

    def get_if_none_match(self, key: str, etag: str | None) -> Revalidated | None:
        options = {"if_none_match": etag} if etag else None
        try:
            with _translated(key, "read"):
                result = obstore.get(self._store, self._k(key), options=options)  # type: ignore[arg-type]
                data = bytes(result.bytes())
        except NotModifiedError:
            return Revalidated(None, etag or "")
        except _MISSING:
            return None
        return Revalidated(data, _info(result.meta).etag)

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        full = self._k(prefix) if prefix else self.prefix
        with _translated(prefix, "list"):
            listing = obstore.list_with_delimiter(self._store, f"{full}/" if full else None)
        cut = len(full) + 1 if full else 0
        dirs = sorted(p.rstrip("/")[cut:] for p in listing["common_prefixes"])
        files = sorted(o["path"][cut:] for o in listing["objects"])
        return dirs, files

    def keys(self, prefix: str = "") -> Iterator[str]:
        return iter(self.list_info(prefix))

    def list_info(self, prefix: str = "") -> dict[str, ObjectInfo]:
        full = self._k(prefix) if prefix else self.prefix
        cut = len(self.prefix) + 1 if self.prefix else 0
        found: dict[str, ObjectInfo] = {}
        with _translated(prefix, "list"):
            for batch in obstore.list(self._store, f"{full}/" if full else None):
                found.update((o["path"][cut:], _info(o)) for o in batch)
        return dict(sorted(found.items()))

    # -- writing -------------------------------------------------------------------------------

    def put(
        self,
        key: str,
        data: bytes | bytearray | memoryview,
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        path = self._writable(key)
        native: Any = {"e_tag": mode.etag} if isinstance(mode, IfMatch) else mode
        try:
            with _translated(key, "write"):
                result = obstore.put(
                    self._store, path, bytes(data), mode=native, use_multipart=False
                )
        except (AlreadyExistsError, PreconditionError):
            raise precondition_failed(key, mode) from None
        except _MISSING:
            raise NotFound("the bucket (container) does not exist", path=key) from None
        etag = result.get("e_tag")
        if etag is None:  # a backend that answers no ETag on put: ask
            info = self.head(key)
            etag = "" if info is None else info.etag
        return str(etag)

    def put_file(
        self,
        key: str,
        source: IO[bytes],
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        """Upload the rest of ``source``: one PUT when small, a multipart upload when large.

        A multipart upload appears whole when it completes and is aborted when
        ``source`` raises, so no reader sees part of an object. Conditional
        modes have no multipart form: the file is read whole and PUT once.
        """
        path = self._writable(key)
        first = _read_full(source, self.part_size)
        if mode != "overwrite" or len(first) < self.part_size:
            return self.put(key, first + source.read(), mode=mode)
        try:
            with (
                _translated(key, "write"),
                obstore.open_writer(
                    self._store,
                    path,
                    buffer_size=self.part_size,
                    max_concurrency=self.part_concurrency,
                ) as out,
            ):
                chunk = first
                while chunk:
                    out.write(chunk)
                    chunk = _read_full(source, self.part_size)
        except _MISSING:
            raise NotFound("the bucket (container) does not exist", path=key) from None
        info = self.head(key)
        return "" if info is None else info.etag

    def delete(self, key: str) -> None:
        path = self._writable(key)
        with contextlib.suppress(*_MISSING), _translated(key, "delete"):
            obstore.delete(self._store, path)

    def copy(self, source: str, dest: str) -> None:
        path = self._writable(dest)
        with contextlib.suppress(*_MISSING), _translated(dest, "copy"):
            obstore.copy(self._store, self._k(source), path)


@contextlib.contextmanager
def _translated(key: str, verb: str) -> Iterator[None]:
    """Turn obstore's errors (other than the ones the caller handles) into mrecd's."""
    try:
        yield
    except (*_MISSING, AlreadyExistsError, PreconditionError, NotModifiedError):
        raise
    except BaseError as exc:
        raise _error(exc, key, verb) from exc


def _error(exc: BaseError, key: str, verb: str) -> MrecdError:
    """The mrecd error for an obstore error (obstore has already retried what it retries)."""
    reason = _first_line(exc)
    status = _status(reason)
    if isinstance(exc, PermissionDeniedError | UnauthenticatedError) or status in (401, 403):
        return PermissionDenied(
            f"the object store refused the {verb} ({reason}); check the credentials", path=key
        )
    if isinstance(exc, InvalidPathError):
        return InvalidRecord(f"the object store refused the key: {reason}", path=key)
    if "NoSuchBucket" in str(exc) or status == 404:
        return NotFound(f"the bucket (container) does not exist: {reason}", path=key)
    return StoreUnavailable(f"object store {verb} failed: {reason}", path=key)


def _status(reason: str) -> int | None:
    """The HTTP status in an error obstore raises as generic (listings report 403 so)."""
    found = _STATUS.search(reason)
    return int(found.group(1)) if found else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _range_past_end(exc: MrecdError) -> bool:
    text = exc.message
    return "416" in text or ("Range" in text and "not satisfiable" in text.lower())


def _empty_request(request: ByteRequest | None) -> bool:
    if isinstance(request, ByteRange):
        return request.end == request.start
    return isinstance(request, Suffix) and request.length == 0


def _native_range(request: ByteRequest) -> Any:
    if isinstance(request, ByteRange):
        return (request.start, request.end)
    if isinstance(request, Offset):
        return {"offset": request.offset}
    return {"suffix": request.length}


def _info(meta: Mapping[str, Any]) -> ObjectInfo:
    modified = meta.get("last_modified")
    return ObjectInfo(
        int(meta["size"]),
        str(meta.get("e_tag") or meta.get("version") or ""),
        None if modified is None else modified.timestamp(),
    )


def _read_full(source: IO[bytes], size: int) -> bytes:
    """Up to ``size`` bytes, short only at the end (a raw file may answer short reads)."""
    parts: list[bytes] = []
    wanted = size
    while wanted:
        data = source.read(wanted)
        if not data:
            break
        parts.append(data)
        wanted -= len(data)
    return b"".join(parts)


def _env_options(prefix: str | None) -> dict[str, str]:
    if prefix is None:
        return {}
    found = {name: os.environ.get(f"{prefix}_{name.upper()}") for name in _ENV_CLIENT_OPTIONS}
    return {name: value for name, value in found.items() if value}


def _public(options: Mapping[str, Any] | None) -> dict[str, Any]:
    if not options:
        return {}
    return {
        k: v for k, v in options.items() if not any(word in k.lower() for word in _SECRET_WORDS)
    }


def _redact(url: str) -> str:
    """``url`` without a password or query (where SAS tokens and keys would sit)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username}:***@{netloc.rpartition('@')[2]}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
