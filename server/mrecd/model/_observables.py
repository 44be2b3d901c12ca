"""Observables: a named data array paired with its metadata document (run-surface.md §5).

Pure values and checks; the binding lays them out as ``observables/<name>``
(the array) and ``observables/meta/<name>`` (a group whose attributes are
the document).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ..errors import InvalidRecord
from ._dtypes import dtype_of
from ._typed import finite_json

__all__ = ["OBSERVABLE_KINDS", "Observable", "check_observable_meta", "check_observable_name"]

#: The kinds the spec defines; any other kind is carried through unchanged (§5).
OBSERVABLE_KINDS: Final = frozenset({"scalar", "vector"})
_OPTIONAL_TEXT: Final = ("unit", "sampling", "domain", "target")


def check_observable_name(name: Any) -> str:
    """Return ``name`` when it can name an observable, else refuse it.

    Raises
    ------
    InvalidRecord
        Empty, holding ``/``, ``.``/``..``, a leading ``__``, or ``meta`` (§5).
    """
    if (
        not isinstance(name, str)
        or name in ("", ".", "..", "meta", "zarr.json")
        or "/" in name
        or "\x00" in name
        or name.startswith("__")
    ):
        raise InvalidRecord(
            f"observable name {name!r} is refused: non-empty, no '/', not '.', '..' or 'meta',"
            " no leading '__' (run-surface.md §5)",
            path=f"observables/{name}",
        )
    return name


def _require(doc: Mapping[str, Any], key: str, kind: type, where: str) -> None:
    value = doc.get(key)
    if key not in doc or not isinstance(value, kind) or (kind is str and not value):
        raise InvalidRecord(
            f"{key} is required and a {kind.__name__} (run-surface.md §5)", path=f"{where}.{key}"
        )


def _check_optional(doc: Mapping[str, Any], where: str) -> None:
    for key in _OPTIONAL_TEXT:
        if key in doc and not isinstance(doc[key], str):
            raise InvalidRecord(f"{key} is a string (run-surface.md §5)", path=f"{where}.{key}")
    axes = doc.get("axes")
    if "axes" in doc and not (isinstance(axes, list) and all(isinstance(a, str) for a in axes)):
        raise InvalidRecord(
            "axes is a list of axis names (run-surface.md §5)", path=f"{where}.axes"
        )


def check_observable_meta(doc: Any, *, path: str) -> dict[str, Any]:
    """Validate an observable's metadata document; return a copy, unknown keys kept verbatim.

    ``kind`` (string), ``description`` (string) and ``time_dependent`` (bool)
    are required; an unknown ``kind`` is kept as it is.

    Raises
    ------
    InvalidRecord
        A required key is missing or mistyped, or the document is not finite JSON.
    """
    if not isinstance(doc, Mapping):
        raise InvalidRecord("observable metadata is a JSON object (run-surface.md §5)", path=path)
    document: dict[str, Any] = finite_json(dict(doc), path=path)
    _require(document, "kind", str, path)
    _require(document, "description", str, path)
    _require(document, "time_dependent", bool, path)
    _check_optional(document, path)
    return document


def check_observable_shape(document: Mapping[str, Any], shape: tuple[int, ...], path: str) -> None:
    """A time-dependent observable has a leading (frame) axis: at least one axis (§5)."""
    if document.get("time_dependent") is True and not shape:
        raise InvalidRecord(
            "a time_dependent observable has the frame axis as its leading axis; a 0-d array"
            " has none (run-surface.md §5)",
            path=path,
        )
    axes = document.get("axes")
    if isinstance(axes, list) and len(axes) > len(shape):
        raise InvalidRecord(
            f"axes names {len(axes)} axes but the array has {len(shape)} (run-surface.md §5)",
            path=path,
        )


@dataclass(frozen=True, slots=True, eq=False)
class Observable:
    """One observable: its metadata document and its data array.

    Attributes
    ----------
    document
        The metadata document (``kind``, ``description``, ``time_dependent``
        and any other key, verbatim).
    data
        The values, any shape (0-d allowed), any column dtype.
    """

    document: dict[str, Any]
    data: npt.NDArray[Any]

    @classmethod
    def build(cls, name: str, data: Any, document: Mapping[str, Any]) -> Observable:
        """A checked observable named ``name`` (name, document, dtype and shape rules)."""
        check_observable_name(name)
        doc = check_observable_meta(document, path=f"observables/meta/{name}")
        array = data if isinstance(data, np.ndarray) else np.asarray(data)
        dtype_of(array, path=f"observables/{name}")
        check_observable_shape(doc, tuple(array.shape), f"observables/{name}")
        return cls(doc, array)

    @property
    def kind(self) -> str:
        """``scalar``, ``vector`` or a producer's kind (carried unchanged)."""
        kind: str = self.document["kind"]
        return kind

    @property
    def description(self) -> str:
        """Free text describing the observable."""
        text: str = self.document["description"]
        return text

    @property
    def time_dependent(self) -> bool:
        """Whether the leading axis is the trajectory's frame axis."""
        return bool(self.document["time_dependent"])

    @property
    def unit(self) -> str | None:
        """The unit string, or ``None``."""
        unit = self.document.get("unit")
        return unit if isinstance(unit, str) else None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Observable):
            return NotImplemented
        return (
            self.document == other.document
            and self.data.shape == other.data.shape
            and self.data.dtype == other.data.dtype
            and bool(np.array_equal(self.data, other.data))
        )

    __hash__ = None  # type: ignore[assignment]
