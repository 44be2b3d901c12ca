"""The closed column dtype set (frame.md §2) and the canonical keys (conventions.md §2).

numpy is the in-memory form: every numeric dtype is its little-endian numpy
type, ``string`` is numpy's variable-width ``StringDType`` (what zarr-python
hands back for a Zarr ``string`` array).
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

import numpy as np
import numpy.typing as npt

from ..errors import InvalidRecord

Dtype = Literal[
    "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool", "string", "c64", "c128"
]
DTYPES: Final[tuple[str, ...]] = get_args(Dtype)

STRING_DTYPE: Final = np.dtypes.StringDType()

_NUMPY: Final[dict[str, np.dtype[Any]]] = {
    "f64": np.dtype("<f8"),
    "i8": np.dtype("i1"),
    "i16": np.dtype("<i2"),
    "i32": np.dtype("<i4"),
    "i64": np.dtype("<i8"),
    "u8": np.dtype("u1"),
    "u16": np.dtype("<u2"),
    "u32": np.dtype("<u4"),
    "u64": np.dtype("<u8"),
    "bool": np.dtype("?"),
    "c64": np.dtype("<c8"),
    "c128": np.dtype("<c16"),
    "string": STRING_DTYPE,
}

#: The column dtype of a numpy dtype that holds it as is (every numeric dtype, this byte order).
NATIVE_DTYPES: Final[dict[np.dtype[Any], str]] = {
    d: n for n, d in _NUMPY.items() if n != "string" and d.isnative
}

#: Zarr V3 ``data_type`` of each column dtype (storage.md §6).
ZARR_DATA_TYPE: Final[dict[str, str]] = {
    "f64": "float64",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "bool": "bool",
    "string": "string",
    "c64": "complex64",
    "c128": "complex128",
}
DTYPE_OF_ZARR: Final[dict[str, str]] = {v: k for k, v in ZARR_DATA_TYPE.items()}

_KIND_SIZE: Final[dict[tuple[str, int], str]] = {
    ("f", 8): "f64",
    ("i", 1): "i8",
    ("i", 2): "i16",
    ("i", 4): "i32",
    ("i", 8): "i64",
    ("u", 1): "u8",
    ("u", 2): "u16",
    ("u", 4): "u32",
    ("u", 8): "u64",
    ("b", 1): "bool",
    ("c", 8): "c64",
    ("c", 16): "c128",
}

#: Canonical column keys and their one dtype (conventions.md §2). Always ``<dtype>[N]``.
CANONICAL: Final[dict[str, str]] = {
    **dict.fromkeys(("x", "y", "z", "vx", "vy", "vz", "fx", "fy", "fz", "charge", "mass"), "f64"),
    **dict.fromkeys(("quatw", "quati", "quatj", "quatk", "mux", "muy", "muz"), "f64"),
    **dict.fromkeys(("axis_x", "axis_y", "axis_z", "occupancy", "b_factor"), "f64"),
    **dict.fromkeys(("id", "atomic_number", "type_id", "mol_id", "res_id", "atom_map"), "u64"),
    **dict.fromkeys(
        ("atomi", "atomj", "atomk", "atoml", "atomm", "ibead", "bond_type", "bond_number"), "u64"
    ),
    "formal_charge": "i64",
    **dict.fromkeys(("ix", "iy", "iz"), "i32"),
    **dict.fromkeys(("free", "is_14", "exclude_14"), "bool"),
    **dict.fromkeys(
        ("element", "type", "name", "res_name", "bead_type", "chain", "icode", "altloc", "style"),
        "string",
    ),
}

#: Per-step scalar keys whose tag is fixed (conventions.md §6).
CANONICAL_META: Final[dict[str, str]] = dict.fromkeys(
    ("pe", "ke", "etotal", "temp", "press", "volume"), "f64"
)

_UNSIGNED_WIDENING: Final = frozenset({"u8", "u16", "u32"})


def numpy_dtype(dtype: str) -> np.dtype[Any]:
    """The numpy dtype that holds column dtype ``dtype`` in memory."""
    return _NUMPY[check_dtype_name(dtype)]


def check_dtype_name(dtype: object, *, path: str | None = None) -> str:
    """Return ``dtype`` when it names one of the thirteen column dtypes, else refuse."""
    if not isinstance(dtype, str) or dtype not in _NUMPY:
        raise InvalidRecord(
            f"dtype {dtype!r} is not a column dtype; the closed set is {', '.join(DTYPES)}"
            " (width-free names such as 'float' are invalid, frame.md §2)",
            path=path,
        )
    return dtype


def dtype_of(array: npt.NDArray[Any], *, path: str | None = None) -> str:
    """The column dtype of a numpy array, refusing anything outside the set.

    ``float16``/``float32`` are refused rather than widened (frame.md §2); raw
    bytes (``S``) and object arrays holding anything but ``str`` are refused.
    """
    kind = array.dtype.kind
    if kind in "TU":
        return "string"
    if kind == "O":
        if all(isinstance(v, str) for v in array.flat):
            return "string"
        raise InvalidRecord("object array holding non-str values is not a column", path=path)
    name = _KIND_SIZE.get((kind, array.dtype.itemsize))
    if name is None:
        if kind == "f":
            raise InvalidRecord(
                f"{array.dtype} is not a column dtype: f64 is the only real dtype and a narrower"
                " float is refused, never widened (frame.md §2)",
                path=path,
            )
        raise InvalidRecord(f"numpy dtype {array.dtype} is not a column dtype", path=path)
    return name


def _exactly_castable(array: npt.NDArray[Any], target: str) -> bool:
    src = array.dtype
    dst = _NUMPY[target]
    if src.kind not in "biufc":  # strings, objects, raw bytes, dates, records
        return False
    if (src.kind == "b") != (dst.kind == "b"):  # a boolean is not a number (frame.md §10.5)
        return False
    if src.kind == "f" and src.itemsize < 8:  # f16/f32 are refused, never widened (frame.md §2)
        return False
    if src.kind in "iu" and dst.kind in "fc":  # integers become reals when every value is exact
        return array.size == 0 or (int(array.min()) >= -(2**53) and int(array.max()) <= 2**53)
    if np.can_cast(src, dst, casting="safe"):
        return True
    if dst.kind in "iu" and src.kind in "iu":  # exact when every value fits the narrower type
        if array.size == 0:
            return True
        info = np.iinfo(dst)
        return int(array.min()) >= info.min and int(array.max()) <= info.max
    return False


def as_column_array(
    values: Any, dtype: str | None = None, *, path: str | None = None
) -> tuple[npt.NDArray[Any], str]:
    """Turn producer data into ``(array, dtype)``, converting only where exact.

    Without ``dtype`` the dtype follows the values (a Python ``float`` list is
    ``f64``, ``int`` is ``i64``). With one, values convert to it only when no
    value changes (``[1, 2]`` to ``f64``; a ``u32`` array to ``u64``); any
    lossy conversion is refused.
    """
    if dtype is not None:
        check_dtype_name(dtype, path=path)
    if isinstance(values, np.ndarray):
        array = values
    else:
        try:
            array = np.asarray(values)
        except (ValueError, TypeError) as exc:
            raise InvalidRecord(f"values are not a rectangular array: {exc}", path=path) from None
        if array.dtype.kind == "U":  # numpy turns [1, "a"] into strings: only all-str is string
            _all_str(values, path)
    if array.ndim == 0:
        raise InvalidRecord(
            "a column has a leading axis; a 0-d value is not a column (frame.md §3)", path=path
        )
    if dtype is None:
        if array.dtype.kind == "f" and array.dtype.itemsize == 8 and not array.dtype.isnative:
            return array.astype(np.float64), "f64"
        dtype = dtype_of(array, path=path)
    target = _NUMPY[dtype]
    if array.dtype == target:
        return array, dtype
    if array.size == 0 and not isinstance(values, np.ndarray):  # [] is any dtype's empty list
        return np.empty(array.shape, dtype=target), dtype
    if dtype == "string" or array.dtype.kind in "TUO":
        if dtype != "string" or dtype_of(array, path=path) != "string":
            raise InvalidRecord(
                f"values of numpy dtype {array.dtype} are not {dtype}: text converts to and from"
                " nothing else",
                path=path,
            )
        return array.astype(STRING_DTYPE), dtype
    if array.dtype.newbyteorder("=") == target.newbyteorder("="):  # other byte order only
        return array.astype(target), dtype
    if not _exactly_castable(array, dtype):
        raise InvalidRecord(
            f"values of numpy dtype {array.dtype} do not convert exactly to {dtype}", path=path
        )
    return array.astype(target), dtype


def _all_str(values: Any, path: str | None) -> None:
    if not all(isinstance(v, str) for v in np.asarray(values, dtype=object).flat):
        raise InvalidRecord(
            "values mix text with other types; a string column holds only str", path=path
        )


def canonical_dtype(
    name: str, array: npt.NDArray[Any], dtype: str, *, coerce: bool, path: str | None
) -> tuple[npt.NDArray[Any], str]:
    """Hold a canonical key to its one dtype and shape (conventions.md §2).

    With ``coerce`` (the writer's side) a narrower unsigned array under a
    ``u64`` key is widened, and integers under an ``f64`` key become reals, when
    exact; without it (the reader's side) any other dtype is refused.
    """
    want = CANONICAL.get(name)
    if want is None:
        return array, dtype
    if array.ndim != 1:
        raise InvalidRecord(
            f"canonical key {name!r} is one value per row ({want}[N]); got shape"
            f" {list(array.shape)} (conventions.md §2)",
            path=path,
        )
    if dtype == want:
        return array, dtype
    if coerce and (
        (want == "u64" and dtype in _UNSIGNED_WIDENING)
        or (want == "f64" and dtype in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"))
    ):
        return as_column_array(array, want, path=path)
    raise InvalidRecord(
        f"canonical key {name!r} must be {want}, not {dtype} (conventions.md §2)", path=path
    )
