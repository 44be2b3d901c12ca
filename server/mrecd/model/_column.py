"""``Column``: a typed N-d array, an optional validity mask and precision (frame.md §3, §6, §7)."""

from __future__ import annotations

import math
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
        array.setflags(write=False)  # (0.2 µs less than through .flags, per column per frame)
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

    __slots__ = ("_dtype", "_pending", "_precision", "_validity", "_values")

    _values: npt.NDArray[Any] | None
    _pending: tuple[list[str], tuple[int, ...]] | None
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
        self._pending = None
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
        column._pending = None
        column._dtype = dtype
        column._validity = None if validity is None or validity.all() else _readonly(validity)
        column._precision = precision
        return column

    @classmethod
    def _lazy_strings(
        cls,
        items: list[str],
        shape: tuple[int, ...],
        validity: npt.NDArray[np.bool_] | None = None,
    ) -> Column:
        """A string column a decoder has checked (``prod(shape)`` str items, C order).

        The numpy array is built on first access of :attr:`values`: a reader that
        forwards or skips the column never pays for it.
        """
        column = object.__new__(cls)
        column._values = None
        column._pending = (items, shape)
        column._dtype = "string"
        column._validity = None if validity is None or validity.all() else _readonly(validity)
        column._precision = None
        return column

    def _materialize(self) -> npt.NDArray[Any]:
        assert self._pending is not None
        items, shape = self._pending
        array = np.array(items, dtype=STRING_DTYPE).reshape(shape)
        array.flags.writeable = False
        self._values, self._pending = array, None
        return array

    # -- accessors ------------------------------------------------------------------------

    @property
    def values(self) -> npt.NDArray[Any]:
        """The stored values, shape ``[N, *trailing]`` (read-only)."""
        values = self._values
        return self._materialize() if values is None else values

    @property
    def dtype(self) -> str:
        """The column dtype name (``"f64"``, ``"u64"``, ``"string"``, ...)."""
        return self._dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """Full shape, ``(N, *trailing)``."""
        if self._pending is not None:
            return self._pending[1]
        return tuple(self.values.shape)

    @property
    def trailing(self) -> tuple[int, ...]:
        """Per-row shape after the leading axis (``()`` for one scalar per row)."""
        return self.shape[1:]

    @property
    def validity(self) -> npt.NDArray[np.bool_] | None:
        """The ``bool[N]`` mask, or ``None`` when every row holds a value."""
        return self._validity

    @property
    def precision(self) -> float | None:
        """The declared precision, or ``None``."""
        return self._precision

    def __len__(self) -> int:
        values = self._values
        return len(values) if values is not None else self.shape[0]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> npt.NDArray[Any]:
        if dtype is None and not copy:
            return self.values
        return np.array(self.values, dtype=dtype, copy=True)

    def replace(self, **changes: Any) -> Column:
        """A copy with ``values``, ``dtype``, ``validity`` or ``precision`` replaced."""
        fields: dict[str, Any] = {
            "values": self.values,
            "dtype": self._dtype,
            "validity": self._validity,
            "precision": self._precision,
        }
        unknown = set(changes) - set(fields)
        if unknown:
            raise InvalidRecord(f"a column has no field(s) {sorted(unknown)} to replace")
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
        return Column._trusted(self.values[start:stop], self._dtype, validity, self._precision)

    # -- equality -------------------------------------------------------------------------

    def same_values(self, other: Column) -> bool:
        """Bitwise equality of dtype, shape, mask and the values of valid rows.

        A repeated NaN is equal and ``-0.0`` differs from ``0.0``: the
        comparison trajectory writers use to decide whether a block changed.
        """
        a, b = self.values, other.values
        if self._dtype != other._dtype or a.shape != b.shape:
            return False
        a_mask, b_mask = self._validity, other._validity
        if a_mask is None and b_mask is None and self._dtype != "string":
            # (the carry-forward compare of every appended frame: the plain case first)
            if a is b:
                return True
            if len(a) > 4 and a[:4].tobytes() != b[:4].tobytes():
                return False  # a column that changed (coordinates) differs in its first rows
            return a.tobytes() == b.tobytes()  # C order, as ascontiguousarray below
        if (a_mask is None) != (b_mask is None):
            return False
        if a_mask is not None and b_mask is not None and not np.array_equal(a_mask, b_mask):
            return False
        if a_mask is not None:
            a, b = a[a_mask], b[a_mask]
        if self._dtype == "string":
            return bool(np.array_equal(a, b))
        # a column that changed (coordinates) differs in its first rows: look there before
        # copying the whole of both
        if len(a) > 4 and a[:4].tobytes() != b[:4].tobytes():
            return False
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
            "values": _values_to_json(self._dtype, self.values),
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
        dtype in ("i64", "u64")
        and (values.size == 0 or (int(values.min()) >= -(2**53) and int(values.max()) <= 2**53))
    ):
        return values.tolist()
    flat = [encode_element(dtype, v) for v in values.ravel().tolist()]
    return np.array(flat, dtype=object).reshape(values.shape).tolist() if values.ndim > 1 else flat


def _values_from_json(
    dtype: str, raw: Any, shape: tuple[int, ...], path: str | None
) -> npt.NDArray[Any]:
    target = numpy_dtype(dtype)
    if raw is None:  # absent values: the fill value, as a read-only view (no allocation)
        fill = np.array("" if dtype == "string" else 0, dtype=target)
        return np.broadcast_to(fill, shape)
    if not isinstance(raw, list):
        raise InvalidRecord("column values are a JSON array", path=path)
    items = _flat_items(dtype, raw, shape, path)
    flat = [decode_element(dtype, v, path=path) for v in items]
    return np.array(flat, dtype=target).reshape(shape)


def _flat_items(dtype: str, raw: list[Any], shape: tuple[int, ...], path: str | None) -> list[Any]:
    """The elements of ``raw`` in C order: flat (``prod(shape)`` items) or nested as ``shape``."""
    pairs = dtype in ("c64", "c128")  # a complex element is itself a [re, im] list

    def is_leaf(node: Any) -> bool:
        return not isinstance(node, list) or (pairs and _is_pair(node))

    size = math.prod(shape)
    if all(is_leaf(v) for v in raw):
        if len(raw) != size:
            raise InvalidRecord(
                f"{len(raw)} values do not fill shape {list(shape)} ({size} elements)", path=path
            )
        return raw
    items: list[Any] = []

    def walk(node: Any, depth: int) -> None:
        if depth == len(shape):
            if not is_leaf(node):
                raise InvalidRecord(f"values nest deeper than shape {list(shape)}", path=path)
            items.append(node)
            return
        if not isinstance(node, list) or len(node) != shape[depth]:
            raise InvalidRecord(
                f"nested values do not match shape {list(shape)} at axis {depth}", path=path
            )
        for item in node:
            walk(item, depth + 1)

    walk(raw, 0)
    return items


def _is_pair(node: list[Any]) -> bool:
    return len(node) == 2 and all(not isinstance(v, list) for v in node)
