"""Errors raised by mrecd, locally and (mapped back by the client) remotely.

Every class carries the HTTP ``status`` and the problem ``type`` (RFC 9457)
the service renders it as, so a caller catches the same class whether it
talks to a local store or to a server::

    MrecdError
    ├── InvalidRecord (ValueError)            422  bad input or a store that breaks a rule
    │   ├── FrameBytesError                   400  MRF1 bytes that cannot be decoded
    │   ├── UnsupportedVersion                422  molrec_version / layout_version out of range
    │   └── StepOrderError                    409  a step that repeats or decreases
    ├── NotFound (KeyError)                   404  no such record, collection, key or lookup
    ├── AlreadyExists (FileExistsError)       409  create of a name that exists
    ├── PreconditionFailed                    412  If-Match on a stale nstep
    ├── ReadOnlyError (PermissionError)       405  write to a packed or foreign read-only store
    ├── PermissionDenied (PermissionError)    403  the object store refused the credentials
    └── RetryableError                        503  transient: transport, 429, 503; safe to retry
        ├── StoreUnavailable                  503  the object store failed or could not be reached
        └── WriterBusy                        409  another writer holds the trajectory

Messages name the field (``path``) and the rule broken.
"""

from __future__ import annotations

__all__ = [
    "AlreadyExists",
    "FrameBytesError",
    "InvalidRecord",
    "MrecdError",
    "NotFound",
    "PermissionDenied",
    "PreconditionFailed",
    "ReadOnlyError",
    "RetryableError",
    "StepOrderError",
    "StoreUnavailable",
    "UnsupportedVersion",
    "WriterBusy",
]

_PROBLEM_BASE = "urn:mrecd:problem:"


class MrecdError(Exception):
    """Root of every error mrecd raises on purpose.

    Parameters
    ----------
    message
        What went wrong, naming the rule broken.
    path
        Where: an array path (``frame/atoms/x``), a JSON field
        (``sequence_schema.blocks.atoms``) or a resource name. Prefixed to
        the message when given.
    """

    status: int = 500
    slug: str = "error"
    title: str = "mrecd error"

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.message = message
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)

    @classmethod
    def problem_type(cls) -> str:
        """The RFC 9457 ``type`` URI of this error class."""
        return _PROBLEM_BASE + cls.slug

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def __reduce__(self) -> tuple[object, ...]:  # keep `path` across pickling
        return (_rebuild, (type(self), self.message, self.path))


def _rebuild(cls: type[MrecdError], message: str, path: str | None) -> MrecdError:
    return cls(message, path=path)


class InvalidRecord(MrecdError, ValueError):
    """Input or a stored record breaks a rule of the molrec contract."""

    status = 422
    slug = "invalid-record"
    title = "Invalid record"


class FrameBytesError(InvalidRecord):
    """MRF1 frame bytes that cannot be decoded (lmdb.md §6)."""

    status = 400
    slug = "invalid-frame-bytes"
    title = "Invalid frame bytes"


class UnsupportedVersion(InvalidRecord):
    """A ``molrec_version`` (or ``layout_version``) this reader does not accept."""

    slug = "unsupported-version"
    title = "Unsupported version"


class StepOrderError(InvalidRecord):
    """A trajectory step number that equals or is below the previous one."""

    status = 409
    slug = "step-order"
    title = "Step out of order"


class NotFound(MrecdError, KeyError):
    """No record, collection, section, key or force-field entry of that name."""

    status = 404
    slug = "not-found"
    title = "Not found"

    def __str__(self) -> str:  # KeyError would quote the message
        return MrecdError.__str__(self)


class AlreadyExists(MrecdError, FileExistsError):
    """Creation of a record or collection whose name is taken."""

    status = 409
    slug = "already-exists"
    title = "Already exists"


class PreconditionFailed(MrecdError):
    """A conditional append whose expected ``nstep`` is not the current one."""

    status = 412
    slug = "precondition-failed"
    title = "Precondition failed"

    def __init__(self, message: str, *, path: str | None = None, nstep: int | None = None) -> None:
        super().__init__(message, path=path)
        self.nstep = nstep


class ReadOnlyError(MrecdError, PermissionError):
    """A write to a store that is read-only (packed, object storage, version 1)."""

    status = 405
    slug = "read-only"
    title = "Read-only"


class PermissionDenied(MrecdError, PermissionError):
    """The object store refused the request: missing, wrong or insufficient credentials."""

    status = 403
    slug = "permission-denied"
    title = "Permission denied"


class RetryableError(MrecdError):
    """A transient failure; the same request may be sent again."""

    status = 503
    slug = "unavailable"
    title = "Service unavailable"


class WriterBusy(RetryableError):
    """Another writer holds the trajectory (lock file or lost conditional write)."""

    status = 409
    slug = "writer-busy"
    title = "Writer busy"


class StoreUnavailable(RetryableError):
    """The object store failed (5xx, dropped connection, timeout) after its own retries."""

    slug = "store-unavailable"
    title = "Store unavailable"
