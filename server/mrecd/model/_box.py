"""``Box``: the simulation cell of a frame (frame.md §9), defaults filled normatively."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InvalidRecord
from ._typed import decode_element, encode_element

__all__ = ["Box"]

_IDENTITY = np.eye(3)
_ALL_TRUE = np.ones(3, dtype=bool)
_ALL_FALSE = np.zeros(3, dtype=bool)


def _real(
    value: Any, shape: tuple[int, ...], name: str, path: str | None
) -> npt.NDArray[np.float64]:
    if not isinstance(value, np.ndarray):  # JSON form may spell non-finite reals as strings
        value = _decode_strings(value, path)
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):
        raise InvalidRecord(
            f"box {name} must be a numeric array of shape {list(shape)}", path=path
        ) from None
    if array.shape != shape:
        raise InvalidRecord(
            f"box {name} must have shape {list(shape)}, got {list(array.shape)} (the contract is"
            " three-dimensional, frame.md §9)",
            path=path,
        )
    if array.dtype.kind in "iu":  # integers convert exactly to f64
        if array.size and int(np.abs(array).max()) > 2**53:
            raise InvalidRecord(f"box {name} integers do not convert exactly to f64", path=path)
        return array.astype(np.float64)
    if array.dtype != np.float64:
        raise InvalidRecord(f"box {name} must be f64 (or integers), not {array.dtype}", path=path)
    return array.astype(np.float64, copy=True)


def _decode_strings(value: Any, path: str | None) -> Any:
    if isinstance(value, str):
        return decode_element("f64", value, path=path)
    if isinstance(value, (list, tuple)):
        return [_decode_strings(v, path) for v in value]
    return value


def _flags(value: Any, path: str | None) -> npt.NDArray[np.bool_]:
    array = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    if array.shape != (3,) or not all(isinstance(v, (bool, np.bool_)) for v in array.tolist()):
        raise InvalidRecord(
            f"box boundary must be exactly 3 booleans, got {value!r} (frame.md §9)", path=path
        )
    return np.array(array.tolist(), dtype=bool)


class Box:
    """The cell: lattice ``vectors`` (columns), ``origin``, periodic ``boundary`` flags.

    Parameters
    ----------
    vectors
        ``f64[3][3]``; the **columns** are the lattice vectors. Ignored (held as
        the identity) for an undefined cell.
    origin
        ``f64[3]``, default ``[0, 0, 0]``.
    boundary
        ``bool[3]``, ``True`` where the axis wraps; default all ``True`` for a
        defined cell, all ``False`` for an undefined one.
    cell_defined
        ``False`` for a system with an origin but no cell (a molecule in vacuum);
        a ``True`` boundary flag is then refused.
    """

    __slots__ = ("_boundary", "_cell_defined", "_origin", "_vectors")

    def __init__(
        self,
        vectors: npt.ArrayLike | None = None,
        *,
        origin: npt.ArrayLike | None = None,
        boundary: npt.ArrayLike | None = None,
        cell_defined: bool = True,
        path: str | None = None,
    ) -> None:
        if not isinstance(cell_defined, (bool, np.bool_)):
            raise InvalidRecord(
                f"box cell_defined must be a boolean, not {cell_defined!r}", path=path
            )
        self._cell_defined = bool(cell_defined)
        if self._cell_defined:
            if vectors is None:
                raise InvalidRecord("a defined cell needs vectors (frame.md §9)", path=path)
            self._vectors = _real(vectors, (3, 3), "vectors", path)
        else:
            if vectors is not None:
                _real(vectors, (3, 3), "vectors", path)  # shape still checked; content ignored
            self._vectors = _IDENTITY.copy()
        self._origin = np.zeros(3) if origin is None else _real(origin, (3,), "origin", path)
        if boundary is None:
            self._boundary = (_ALL_TRUE if self._cell_defined else _ALL_FALSE).copy()
        else:
            self._boundary = _flags(boundary, path)
            if not self._cell_defined and self._boundary.any():
                raise InvalidRecord(
                    "an undefined cell (cell_defined false) is periodic on no axis: a true"
                    " boundary flag is refused (frame.md §9.1)",
                    path=path,
                )
        for array in (self._vectors, self._origin, self._boundary):
            array.flags.writeable = False

    @property
    def vectors(self) -> npt.NDArray[np.float64]:
        """``f64[3][3]``, lattice vectors as columns (identity for an undefined cell)."""
        return self._vectors

    @property
    def origin(self) -> npt.NDArray[np.float64]:
        """``f64[3]`` anchor of the cell."""
        return self._origin

    @property
    def boundary(self) -> npt.NDArray[np.bool_]:
        """``bool[3]`` per-axis periodic flags."""
        return self._boundary

    @property
    def cell_defined(self) -> bool:
        """Whether a cell exists at all."""
        return self._cell_defined

    @property
    def origin_is_default(self) -> bool:
        """Whether ``origin`` is ``[0, 0, 0]`` (bitwise; ``-0.0`` is not default)."""
        return self._origin.tobytes() == np.zeros(3).tobytes()

    @property
    def boundary_is_default(self) -> bool:
        """Whether ``boundary`` is what an omitted array reads as."""
        return bool((self._boundary == self._cell_defined).all())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Box):
            return NotImplemented
        return (
            self._cell_defined == other._cell_defined
            and self._vectors.tobytes() == other._vectors.tobytes()
            and self._origin.tobytes() == other._origin.tobytes()
            and bool((self._boundary == other._boundary).all())
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if not self._cell_defined:
            return f"Box(cell_defined=False, origin={self._origin.tolist()})"
        return f"Box({self._vectors.tolist()}, origin={self._origin.tolist()}, boundary={self._boundary.tolist()})"

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{vectors, origin, boundary, cell_defined}`` (all four, as the reference writes)."""
        return {
            "vectors": [[encode_element("f64", v) for v in row] for row in self._vectors.tolist()],
            "origin": [encode_element("f64", v) for v in self._origin.tolist()],
            "boundary": self._boundary.tolist(),
            "cell_defined": self._cell_defined,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, path: str | None = None) -> Box:
        """Read the JSON form; ``origin``/``boundary``/``cell_defined`` may be absent or null."""
        if not isinstance(data, Mapping):
            raise InvalidRecord("a box is a JSON object", path=path)
        unknown = set(data) - {"vectors", "origin", "boundary", "cell_defined"}
        if unknown:
            raise InvalidRecord(f"unknown box keys {sorted(unknown)}", path=path)
        cell_defined = data.get("cell_defined")
        return cls(
            data.get("vectors"),
            origin=data.get("origin"),
            boundary=data.get("boundary"),
            cell_defined=True if cell_defined is None else cell_defined,
            path=path,
        )
