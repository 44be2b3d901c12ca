"""Untyped documents: the record ``meta`` (record.md §4), ``status``, ``method``,
and the collection document with its ``units`` (collection.md §2.1).

Documents are plain finite JSON: unknown keys are preserved verbatim, ``null``
included. Writers stamp ``molrec_version: 2``; readers accept 1 and 2.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Mapping
from typing import Any, Final

from ..errors import InvalidRecord, UnsupportedVersion
from ._typed import finite_json

__all__ = [
    "MOLREC_VERSION",
    "check_collection_meta",
    "check_method",
    "check_molrec_version",
    "check_record_meta",
    "check_status",
    "check_units",
    "stamp_meta",
]

#: The contract version this package writes and the newest it reads.
MOLREC_VERSION: Final = 2
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_STATES: Final = frozenset({"pending", "running", "succeeded", "failed", "cancelled", "skipped"})


def _document(doc: Any, name: str) -> dict[str, Any]:
    if not isinstance(doc, Mapping):
        raise InvalidRecord(f"the {name} document is a JSON object", path=name)
    out: dict[str, Any] = finite_json(doc, path=name)
    return out


def check_molrec_version(value: Any, *, path: str = "meta.molrec_version") -> int:
    """A reader's check of a present ``molrec_version``: an integer in ``1..=2``.

    ``null``, ``0``, negatives, strings, floats (even ``2.0``), booleans and
    newer versions are refused (record.md §4.1).
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise UnsupportedVersion(
            f"molrec_version must be a JSON integer in 1..{MOLREC_VERSION}, not {value!r}",
            path=path,
        )
    if not 1 <= value <= MOLREC_VERSION:
        raise UnsupportedVersion(
            f"molrec_version {value} is outside 1..{MOLREC_VERSION} (this reader's newest is"
            f" {MOLREC_VERSION})",
            path=path,
        )
    return value


def _timestamp(value: Any, path: str) -> None:
    if not isinstance(value, str) or not _RFC3339.match(value):
        raise InvalidRecord(
            f"{value!r} is not an RFC 3339 timestamp with date, time and an explicit offset"
            " (Z or ±hh:mm)",
            path=path,
        )
    try:
        dt.datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        raise InvalidRecord(f"{value!r} is not a valid date and time", path=path) from None


def _named(doc: Mapping[str, Any], key: str, *, optional: tuple[str, ...], path: str) -> None:
    value = doc.get(key)
    if key not in doc:
        return
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        raise InvalidRecord(f"{key} must be an object with a string name", path=f"{path}.{key}")
    for opt in optional:
        if opt in value and not isinstance(value[opt], str):
            raise InvalidRecord(f"{key}.{opt} must be a string", path=f"{path}.{key}.{opt}")


def check_record_meta(doc: Any, *, path: str = "meta") -> dict[str, Any]:
    """Validate a record's ``meta`` document as a reader; return it unchanged (a copy).

    ``molrec_version`` is validated when present; ``creator``/``author`` need
    a ``name``; ``created_at`` is RFC 3339 with an offset; each module under
    ``modules`` has a ``[major, minor]`` version. Unknown keys pass through.
    """
    meta = _document(doc, path)
    if "molrec_version" in meta:
        check_molrec_version(meta["molrec_version"], path=f"{path}.molrec_version")
    for key in ("record_id", "content_hash", "source"):
        if key in meta and not isinstance(meta[key], str):
            raise InvalidRecord(f"{key} must be a string", path=f"{path}.{key}")
    _named(meta, "creator", optional=("version",), path=path)
    _named(meta, "author", optional=("email",), path=path)
    if "created_at" in meta:
        _timestamp(meta["created_at"], f"{path}.created_at")
    if "modules" in meta:
        modules = meta["modules"]
        if not isinstance(modules, Mapping):
            raise InvalidRecord(
                "modules is an object {name: {version: [major, minor]}}", path=f"{path}.modules"
            )
        for name, module in modules.items():
            if not isinstance(module, Mapping):
                raise InvalidRecord(
                    "a module entry is an object (record.md §4.2)", path=f"{path}.modules.{name}"
                )
            if "version" not in module:
                # Other writers keep modules with only `spec` and their own keys: the
                # version is checked when present, the entry preserved (record.md §4.3).
                continue
            version = module["version"]
            if not (
                isinstance(version, list)
                and len(version) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in version)
            ):
                raise InvalidRecord(
                    "a module's version is [major, minor] (record.md §4.2)",
                    path=f"{path}.modules.{name}.version",
                )
    return meta


def stamp_meta(doc: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``meta`` document a writer stores: validated, ``molrec_version`` set to 2.

    The stamp overwrites any version the producer put there (record.md §4.1).
    """
    meta = dict(doc or {})
    meta.pop("molrec_version", None)
    checked = check_record_meta(meta)
    checked["molrec_version"] = MOLREC_VERSION
    return checked


def check_status(doc: Any, *, path: str = "status") -> dict[str, Any]:
    """Validate a ``status`` document (run-surface.md §2); unknown keys and states pass."""
    status = _document(doc, path)
    if not isinstance(status.get("state"), str):
        raise InvalidRecord("status needs a string state", path=f"{path}.state")
    for key in ("stage", "message"):
        if key in status and not isinstance(status[key], str):
            raise InvalidRecord(f"{key} must be a string", path=f"{path}.{key}")
    for key in ("epoch", "global_step"):
        if key in status and (
            isinstance(status[key], bool) or not isinstance(status[key], int) or status[key] < 0
        ):
            raise InvalidRecord(f"{key} must be a non-negative integer", path=f"{path}.{key}")
    for key in ("started_at", "updated_at", "finished_at"):
        if key in status:
            _timestamp(status[key], f"{path}.{key}")
    if status["state"] == "failed":
        error = status.get("error")
        if not isinstance(error, Mapping) or not isinstance(error.get("message"), str):
            raise InvalidRecord("a failed status carries error.message", path=f"{path}.error")
    return status


def check_method(doc: Any, *, path: str = "method") -> dict[str, Any]:
    """Validate a ``method`` document: ``type``, ``description``, ``engine.name`` required."""
    method = _document(doc, path)
    for key in ("type", "description"):
        if not isinstance(method.get(key), str):
            raise InvalidRecord(f"method needs a string {key}", path=f"{path}.{key}")
    engine = method.get("engine")
    if not isinstance(engine, Mapping) or not isinstance(engine.get("name"), str):
        raise InvalidRecord("method needs engine.name (a string)", path=f"{path}.engine.name")
    if "version" in engine and not isinstance(engine["version"], str):
        raise InvalidRecord("engine.version must be a string", path=f"{path}.engine.version")
    return method


@functools.cache
def _unit_registry() -> Any:
    import pint  # deferred: pint takes a noticeable time to import

    return pint.UnitRegistry()


def parse_unit(text: str) -> Any:
    """Parse a unit string with pint; :class:`InvalidRecord` when pint cannot."""
    try:
        return _unit_registry().parse_units(text)
    except Exception as exc:  # pint raises several unrelated error classes
        raise InvalidRecord(f"unit {text!r} is not a unit pint can parse: {exc}") from None


def check_units(units: Any, *, path: str = "units") -> dict[str, str]:
    """A collection's ``units``: ``{quantity: unit string}``, every string pint-parseable."""
    if not isinstance(units, Mapping):
        raise InvalidRecord("units is an object {quantity: unit string}", path=path)
    out: dict[str, str] = {}
    for quantity, unit in units.items():
        where = f"{path}.{quantity}"
        if not isinstance(unit, str) or not unit:
            raise InvalidRecord(f"unit of {quantity!r} must be a non-empty string", path=where)
        try:
            parse_unit(unit)
        except InvalidRecord as exc:
            raise InvalidRecord(exc.message, path=where) from None
        out[quantity] = unit
    return out


def check_collection_meta(doc: Any, *, path: str = "meta") -> dict[str, Any]:
    """A collection document: ``units`` required and parseable; version checked when present."""
    meta = _document(doc, path)
    if "units" not in meta:
        raise InvalidRecord(
            "a collection document must carry units (collection.md §2.1)", path=f"{path}.units"
        )
    check_units(meta["units"], path=f"{path}.units")
    if "molrec_version" in meta:
        check_molrec_version(meta["molrec_version"], path=f"{path}.molrec_version")
    return meta
