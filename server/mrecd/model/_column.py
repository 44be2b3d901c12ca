"""``Column``: a typed N-d array with an optional validity mask and precision (frame.md §3, §6, §7)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InvalidRecord
from ._dtypes import STRING_DTYPE, as_column_array, check_dtype_name, numpy_dtype
from ._precision import check_precision, quantize
from ._typed import decode_element, encode_element

__all__ = ["Column"]


def _readonly(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


def _mask(validity: Any, rows: int, path: str | None) -> npt.NDArray[np.bool_] | None:
    if validity is None:
        return None
    mask = np.asarray(validity)
    if mask.dtype != np.bool_:
        raise InvalidRecord(
            f"validity mask must be bool, not {mask.dtype} (frame.md §6)", path=path
        )
    if mask.shape != (rows,):
        raise InvalidRecord(
            f"validity mask must have one flag per row, shape [{rows}]; got {list(mask.shape)}"
            " (frame.md §6)",
            path=path,
        )
    if mask.all():  # "no nulls" has two spellings that are one value
        return None
    return _readonly(mask)


class Column:
    """One column of a block: values of shape ``[N, *trailing]`` and one dtype.

    Parameters
    ----------
    values
        Array-like; converted to ``dtype`` only when exact (ints to ``f64``,
        ``u32`` to ``u64``). Strings become numpy ``StringDType``.
    dtype
        One of the thirteen column dtypes; inferred from ``values`` when omitted.
    validity
        Optional ``bool[N]`` mask, ``True`` where a row holds a value. An
        all-``True`` mask is the same as none and is dropped.
    precision
        Optional declared precision (``f64`` only). The column then holds the
        stored (rounded) values of frame.md §7.1.

    The column is immutable: ``values`` and ``validity`` are read-only views.
    """

    __slots__ = ("_dtype", "_precision", "_validity", "_values")

    _values: npt.NDArray[Any]
    _dtype: str
    _validity: npt.NDArray[np.bool_] | None
    _precision: float | None

    def __init__(
        self,
        values: npt.ArrayLike,
        dtype: str | None = None,
        *,
        validity: npt.ArrayLike | None = None,
        precision: float | None = None,
        path: str | None = None,
    ) -> None:
        array, name = as_column_array(values, dtype, path=path)
        if precision is not None:
            precision = check_precision(precision, path=path)
            if name != "f64":
                raise InvalidRecord(
                    f"precision is declared only on f64 columns, not {name} (frame.md §7.2)",
                    path=path,
                )
            array = quantize(array, precision)
        self._values = _readonly(array)
        self._dtype = name
        self._validity = _mask(validity, array.shape[0], path)
        self._precision = precision

    @classmethod
    def _trusted(
        cls,
        values: npt.NDArray[Any],
        dtype: str,
        validity: npt.NDArray[np.bool_] | None = None,
        precision: float | None = None,
    ) -> Column:
        """Wrap arrays a decoder has already checked (dtype, shape, mask), skipping validation."""
        column = object.__new__(cls)
        column._values = _readonly(values)
        column._dtype = dtype
        column._validity = None if validity is None or validity.all() else _readonly(validity)
        column._precision = precision
        return column

    # -- accessors ------------------------------------------------------------------------

    @property
    def values(self) -> npt.NDArray[Any]:
        """The stored values, shape ``[N, *trailing]`` (read-only)."""
        return self._values

    @property
    def dtype(self) -> str:
        """The column dtype name (``"f64"``, ``"u64"``, ``"string"``, ...)."""
        return self._dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """Full shape, ``(N, *trailing)``."""
        return tuple(self._values.shape)

    @property
    def trailing(self) -> tuple[int, ...]:
        """Per-row shape after the leading axis (``()`` for one scalar per row)."""
        return tuple(self._values.shape[1:])

    @property
    def validity(self) -> npt.NDArray[np.bool_] | None:
        """The ``bool[N]`` mask, or ``None`` when every row holds a value."""
        return self._validity

    @property
    def precision(self) -> float | None:
        """The declared precision, or ``None``."""
        return self._precision

    def __len__(self) -> int:
        return int(self._values.shape[0])

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> npt.NDArray[Any]:
        if dtype is None and not copy:
            return self._values
        return np.array(self._values, dtype=dtype, copy=True)

    def replace(self, **changes: Any) -> Column:
        """A copy with ``values``, ``dtype``, ``validity`` or ``precision`` replaced."""
        fields = {
            "values": self._values,
            "dtype": self._dtype,
            "validity": self._validity,
            "precision": self._precision,
        }
        fields.update(changes)
        return Column(
            fields["values"],
            fields["dtype"],
            validity=fields["validity"],
            precision=fields["precision"],
        )

    def rows(self, start: int, stop: int) -> Column:
        """Rows ``[start, stop)`` as a column (views, no copy)."""
        validity = None if self._validity is None else self._validity[start:stop]
        return Column._trusted(self._values[start:stop], self._dtype, validity, self._precision)

    # -- equality -------------------------------------------------------------------------

    def same_values(self, other: Column) -> bool:
        """Bitwise equality of dtype, shape, mask and the values of valid rows.

        A repeated NaN is equal and ``-0.0`` differs from ``0.0``: the
        comparison trajectory writers use to decide whether a block changed.
        """
        if self._dtype != other._dtype or self._values.shape != other._values.shape:
            return False
        a_mask, b_mask = self._validity, other._validity
        if (a_mask is None) != (b_mask is None):
            return False
        if a_mask is not None and b_mask is not None and not np.array_equal(a_mask, b_mask):
            return False
        a, b = self._values, other._values
        if a_mask is not None:
            a, b = a[a_mask], b[a_mask]
        if self._dtype == "string":
            return bool(np.array_equal(a, b))
        return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Column):
            return NotImplemented
        return self._precision == other._precision and self.same_values(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        extra = ""
        if self._validity is not None:
            extra += f", nulls={int((~self._validity).sum())}"
        if self._precision is not None:
            extra += f", precision={self._precision!r}"
        return f"Column({self._dtype}{list(self.shape)}{extra})"

    # -- JSON interchange form (frame.md §5.2) --------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The logical JSON form: ``{dtype, shape, values, validity?, precision?}``.

        Values are nested lists in C order, each element in its typed JSON form.
        """
        out: dict[str, Any] = {
            "dtype": self._dtype,
            "shape": list(self.shape),
            "values": _values_to_json(self._dtype, self._values),
        }
        if self._validity is not None:
            out["validity"] = self._validity.tolist()
        if self._precision is not None:
            out["precision"] = self._precision
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, path: str | None = None) -> Column:
        """Build a column from its JSON form; refuses a missing or malformed ``shape``.

        ``values`` may be nested or flat (C order); absent values are the fill
        value (zeros, empty strings).
        """
        if not isinstance(data, Mapping):
            raise InvalidRecord("a column is a JSON object", path=path)
        unknown = set(data) - {"dtype", "shape", "values", "validity", "precision"}
        if unknown:
            raise InvalidRecord(f"unknown column keys {sorted(unknown)}", path=path)
        dtype = check_dtype_name(data.get("dtype"), path=path)
        shape = data.get("shape")
        if (
            not isinstance(shape, list)
            or not shape
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
        ):
            raise InvalidRecord(
                "a column has a shape: a non-empty list of non-negative integers (frame.md §3)",
                path=path,
            )
        values = _values_from_json(dtype, data.get("values"), tuple(shape), path)
        return cls(
            values, dtype, validity=data.get("validity"), precision=data.get("precision"), path=path
        )


def _values_to_json(dtype: str, values: npt.NDArray[Any]) -> Any:
    if dtype == "string":
        return values.astype(object).tolist()
    if dtype == "bool":
        return values.tolist()
    if dtype == "f64" and bool(np.isfinite(values).all()):
        return values.tolist()
    if dtype in ("i8", "i16", "i32", "u8", "u16", "u32") or (
        dtype in ("i64", "u64") and (values.size == 0 or int(np.abs(values).max()) <= 2**53)
    ):
        return values.tolist()
    flat = [encode_element(dtype, v) for v in values.ravel().tolist()]
    return np.array(flat, dtype=object).reshape(values.shape).tolist() if values.ndim > 1 else flat


def _values_from_json(
    dtype: str, raw: Any, shape: tuple[int, ...], path: str | None
) -> npt.NDArray[Any]:
    target = numpy_dtype(dtype)
    size = int(np.prod(shape))
    if raw is None:
        return (
            np.zeros(shape, dtype=target)
            if dtype != "string"
            else np.full(shape, "", dtype=STRING_DTYPE)
        )
    flat: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, list) and not (dtype in ("c64", "c128") and _is_pair(node)):
            for item in node:
                walk(item)
        else:
            flat.append(decode_element(dtype, node, path=path))

    walk(raw)
    if len(flat) != size:
        raise InvalidRecord(
            f"{len(flat)} values do not fill shape {list(shape)} ({size} elements)", path=path
        )
    return np.array(flat, dtype=target).reshape(shape)


def _is_pair(node: list[Any]) -> bool:
    return len(node) == 2 and all(not isinstance(v, list) for v in node)
