"""Errors raised by mrecd, locally and (mapped back by the client) remotely.

Every class carries the HTTP ``status``, the problem-type ``slug`` and the
``title`` the service renders it with (RFC 9457 problem details, ``type``
``urn:mrecd:problem:<slug>``), so a caller catches the same class whether it
talks to a local store or to a server. Each class also inherits the builtin
a caller would catch (in parentheses)::

    class (builtin)                          status  slug                 title
    MrecdError                                  500  error                mrecd error
    ├── InvalidRecord (ValueError)              422  invalid-record       Invalid record
    │   ├── FrameBytesError                     400  invalid-frame-bytes  Invalid frame bytes
    │   ├── UnsupportedVersion                  422  unsupported-version  Unsupported version
    │   ├── StepOrderError                      409  step-order           Step out of order
    │   └── AmbiguousLookup                     422  ambiguous-lookup     Ambiguous lookup
    ├── NotFound (KeyError)                     404  not-found            Not found
    │   └── RecordOutOfRange (IndexError)       404  out-of-range         Ordinal out of range
    ├── AlreadyExists (FileExistsError)         409  already-exists       Already exists
    ├── PreconditionFailed                      412  precondition-failed  Precondition failed
    ├── ProducerFenced                          409  producer-fenced      Producer fenced
    ├── SequenceGap                             409  sequence-gap         Sequence gap
    ├── ReadOnlyError (PermissionError)         405  read-only            Read-only
    ├── PermissionDenied (PermissionError)      403  permission-denied    Permission denied
    └── RetryableError                          503  unavailable          Service unavailable
        ├── StoreUnavailable                    503  store-unavailable    Store unavailable
        └── WriterBusy                          409  writer-busy          Writer busy

When each is raised:

- ``InvalidRecord``: bad input, or a stored record that breaks a rule.
- ``FrameBytesError``: MRF1 bytes that cannot be decoded.
- ``UnsupportedVersion``: ``molrec_version`` / ``layout_version`` out of range.
- ``StepOrderError``: a trajectory step that repeats or decreases.
- ``AmbiguousLookup``: a force-field short lookup ``result[key]`` that several rows answer.
- ``NotFound``: no such record, collection, key or force-field lookup.
- ``RecordOutOfRange``: a record (or frame) ordinal outside ``0 <= i < len``.
- ``AlreadyExists``: creation of a name that exists.
- ``PreconditionFailed``: a conditional write on a stale state (``nstep``, ETag).
- ``ProducerFenced``: an idempotent producer's epoch is older than the one the trajectory holds.
- ``SequenceGap``: an idempotent producer skipped a sequence number (a batch is missing).
- ``ReadOnlyError``: a write to a packed or read-only store.
- ``PermissionDenied``: the object store refused the credentials.
- ``RetryableError``: transient (transport, 429, 503); the request may be sent again.
- ``StoreUnavailable``: the object store failed or could not be reached, after its retries.
- ``WriterBusy``: another writer holds the trajectory.

Messages name the field (``path``) and the rule broken.
:meth:`MrecdError.to_problem` renders an error as a problem document and
:meth:`MrecdError.from_problem` (with :func:`error_for_problem`) maps one
back to its class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

__all__ = [
    "AlreadyExists",
    "AmbiguousLookup",
    "FrameBytesError",
    "InvalidRecord",
    "MrecdError",
    "NotFound",
    "PermissionDenied",
    "PreconditionFailed",
    "ProducerFenced",
    "ReadOnlyError",
    "RecordOutOfRange",
    "RetryableError",
    "SequenceGap",
    "StepOrderError",
    "StoreUnavailable",
    "UnsupportedVersion",
    "WriterBusy",
    "error_for_problem",
]

_PROBLEM_BASE: Final = "urn:mrecd:problem:"

#: problem ``type`` URI -> class; filled as classes are defined
_BY_TYPE: dict[str, type[MrecdError]] = {}

#: RFC 9457 members every problem carries, plus our ``path``; the rest are extensions
_STANDARD_MEMBERS: Final = frozenset({"type", "title", "status", "detail", "instance", "path"})


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

    Notes
    -----
    Every subclass states its own ``slug`` and ``title`` (and ``status``
    unless its parent's fits); defining one without them, or with a slug
    already taken, raises ``TypeError``.
    """

    status: ClassVar[int] = 500
    slug: ClassVar[str] = "error"
    title: ClassVar[str] = "mrecd error"

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.message = message
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _register(cls)

    @classmethod
    def problem_type(cls) -> str:
        """The RFC 9457 ``type`` URI of this error class (``urn:mrecd:problem:<slug>``)."""
        return _PROBLEM_BASE + cls.slug

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def extensions(self) -> dict[str, Any]:
        """Members beyond ``path`` that this error carries (keyword arguments of its class).

        Returns
        -------
        dict
            JSON-ready ``{name: value}``; empty for most classes.
        """
        return {}

    def to_problem(self) -> dict[str, Any]:
        """The problem document (RFC 9457) the service renders this error as.

        Returns
        -------
        dict
            ``type``, ``title``, ``status``, ``detail`` (the message, without
            the path), ``path`` (``None`` when the error names none) and the
            class's extension members (``nstep`` for
            :class:`PreconditionFailed`). JSON-ready.
        """
        return {
            "type": self.problem_type(),
            "title": self.title,
            "status": self.status,
            "detail": self.message,
            "path": self.path,
            **self.extensions(),
        }

    @classmethod
    def from_problem(cls, problem: Mapping[str, Any]) -> MrecdError:
        """The error a problem document describes, as an instance of the class its type names.

        The class comes from ``problem["type"]`` (:func:`error_for_problem`),
        whichever class this is called on; an unknown type gives a
        :class:`MrecdError`.

        Parameters
        ----------
        problem
            A problem document, as :meth:`to_problem` makes it.

        Returns
        -------
        MrecdError
            Equal in class, message, ``path`` and extensions to the error rendered.

        Raises
        ------
        TypeError
            ``problem`` is not a mapping, or a member has the wrong type.
        """
        if not isinstance(problem, Mapping):
            raise TypeError(f"a problem document is a mapping, not {type(problem).__name__}")
        target = error_for_problem(_member(problem, "type", str) or "about:blank")
        detail = _member(problem, "detail", str)
        message = detail if detail is not None else _member(problem, "title", str) or ""
        extensions = {k: v for k, v in problem.items() if k not in _STANDARD_MEMBERS}
        return target._from_members(message, _member(problem, "path", str), extensions)

    @classmethod
    def _from_members(
        cls, message: str, path: str | None, extensions: Mapping[str, Any]
    ) -> MrecdError:
        """Rebuild from a message, path and extensions; unknown extensions are dropped."""
        return cls(message, path=path)

    def __reduce__(self) -> tuple[object, ...]:  # keep `path` and extensions across pickling
        return (_rebuild, (type(self), self.message, self.path, self.extensions()))


def _rebuild(
    cls: type[MrecdError],
    message: str,
    path: str | None,
    extensions: Mapping[str, Any] | None = None,  # absent in pickles of earlier versions
) -> MrecdError:
    return cls._from_members(message, path, extensions or {})


def _member(problem: Mapping[str, Any], name: str, kind: type[Any]) -> Any:
    value = problem.get(name)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise TypeError(f"problem member {name!r} is a {kind.__name__}, not {value!r}")
    return value


def _register(cls: type[MrecdError]) -> None:
    missing = [name for name in ("slug", "title") if name not in cls.__dict__]
    if missing:
        raise TypeError(f"{cls.__name__} must state its own {' and '.join(missing)}")
    taken = _BY_TYPE.get(cls.problem_type())
    if taken is not None:
        raise TypeError(f"{cls.__name__}: slug {cls.slug!r} is taken by {taken.__name__}")
    _BY_TYPE[cls.problem_type()] = cls


def error_for_problem(type_uri: str) -> type[MrecdError]:
    """The error class whose problem ``type`` is ``type_uri``.

    Parameters
    ----------
    type_uri
        A problem document's ``type`` (``urn:mrecd:problem:<slug>``).

    Returns
    -------
    type of MrecdError
        The class with that type; :class:`MrecdError` for any other URI
        (``about:blank``, another service's types), so a client still raises
        something every caller catches.
    """
    return _BY_TYPE.get(type_uri, MrecdError)


_BY_TYPE[MrecdError.problem_type()] = MrecdError


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


class AmbiguousLookup(InvalidRecord):
    """The short form ``result[key]`` asked of an answer where several rows state ``key``.

    The detailed form (``rows``, ``terms``, ``matches``) still holds every
    answer; name a ``style`` in the lookup to get one.
    """

    slug = "ambiguous-lookup"
    title = "Ambiguous lookup"


class NotFound(MrecdError, KeyError):
    """No record, collection, section, key or force-field entry of that name."""

    status = 404
    slug = "not-found"
    title = "Not found"

    def __str__(self) -> str:  # KeyError would quote the message
        return MrecdError.__str__(self)


class RecordOutOfRange(NotFound, IndexError):
    """A record (or frame) ordinal outside ``0 <= i < len``.

    Both a :class:`NotFound` and an ``IndexError``, so that lookup-style and
    sequence-style callers both catch it.
    """

    slug = "out-of-range"
    title = "Ordinal out of range"


class AlreadyExists(MrecdError, FileExistsError):
    """Creation of a record or collection whose name is taken."""

    status = 409
    slug = "already-exists"
    title = "Already exists"


class PreconditionFailed(MrecdError):
    """A conditional write whose expected state (``nstep``, ETag) is not the current one.

    Parameters
    ----------
    message, path
        As for :class:`MrecdError`.
    nstep
        The current number of committed frames, when known, so that the
        caller can resume from it.
    """

    status = 412
    slug = "precondition-failed"
    title = "Precondition failed"

    def __init__(self, message: str, *, path: str | None = None, nstep: int | None = None) -> None:
        super().__init__(message, path=path)
        self.nstep = nstep

    def extensions(self) -> dict[str, Any]:
        """``{"nstep": nstep}``: the current frame count (``None`` when unknown)."""
        return {"nstep": self.nstep}

    @classmethod
    def _from_members(
        cls, message: str, path: str | None, extensions: Mapping[str, Any]
    ) -> MrecdError:
        nstep = _member(extensions, "nstep", int)
        return cls(message, path=path, nstep=nstep)


class ProducerFenced(MrecdError):
    """An idempotent producer's epoch is older than the trajectory's for that producer id.

    A restarted job claims its producer id with a higher epoch; from then on
    the old epoch is fenced, so a zombie of the old job can land nothing.

    Parameters
    ----------
    message, path
        As for :class:`MrecdError`.
    epoch
        The epoch the trajectory holds for the producer, when known.
    """

    status = 409
    slug = "producer-fenced"
    title = "Producer fenced"

    def __init__(self, message: str, *, path: str | None = None, epoch: int | None = None) -> None:
        super().__init__(message, path=path)
        self.epoch = epoch

    def extensions(self) -> dict[str, Any]:
        """``{"epoch": epoch}``: the producer's current epoch (``None`` when unknown)."""
        return {"epoch": self.epoch}

    @classmethod
    def _from_members(
        cls, message: str, path: str | None, extensions: Mapping[str, Any]
    ) -> MrecdError:
        return cls(message, path=path, epoch=_member(extensions, "epoch", int))


class SequenceGap(MrecdError):
    """An idempotent producer's sequence number skips one not yet committed.

    Parameters
    ----------
    message, path
        As for :class:`MrecdError`.
    expected
        The sequence number the trajectory expects next from the producer, when known.
    """

    status = 409
    slug = "sequence-gap"
    title = "Sequence gap"

    def __init__(
        self, message: str, *, path: str | None = None, expected: int | None = None
    ) -> None:
        super().__init__(message, path=path)
        self.expected = expected

    def extensions(self) -> dict[str, Any]:
        """``{"expected": expected}``: the next sequence number the trajectory accepts."""
        return {"expected": self.expected}

    @classmethod
    def _from_members(
        cls, message: str, path: str | None, extensions: Mapping[str, Any]
    ) -> MrecdError:
        return cls(message, path=path, expected=_member(extensions, "expected", int))


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
