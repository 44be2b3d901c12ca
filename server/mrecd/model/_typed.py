"""Typed meta values: the sixteen tags and their one JSON spelling each.

Three directions, three functions (frame.md §10, conventions.md §8):

- :func:`coerce_meta` -- the writer's side: a producer value held exactly to
  its tag (``3`` under ``f64`` becomes ``3.0``; ``1.0`` under ``i64`` is refused);
- :func:`encode_meta` -- a held value to its typed JSON form (``NaN`` as
  ``"NaN"``, integers beyond 2^53 as decimal strings);
- :func:`decode_meta` -- the reader's side: only the typed JSON forms pass.

Held values are plain Python: ``bool``, ``int``, ``float``, ``str``, a JSON
document for ``json``, and a tuple of elements for the vector tags.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, get_args

import numpy as np

from ..errors import InvalidRecord

MetaTag = Literal[
    "bool",
    "i32",
    "i64",
    "u32",
    "u64",
    "f64",
    "string",
    "json",
    "bool3",
    "i32x3",
    "i64x3",
    "u32x3",
    "u64x3",
    "f64x3",
    "f64x6",
    "f64x9",
]
META_TAGS: Final[tuple[str, ...]] = get_args(MetaTag)

#: tag -> (element dtype, width or None for a scalar)
TAG_LAYOUT: Final[dict[str, tuple[str, int | None]]] = {
    "bool": ("bool", None),
    "i32": ("i32", None),
    "i64": ("i64", None),
    "u32": ("u32", None),
    "u64": ("u64", None),
    "f64": ("f64", None),
    "string": ("string", None),
    "json": ("json", None),
    "bool3": ("bool", 3),
    "i32x3": ("i32", 3),
    "i64x3": ("i64", 3),
    "u32x3": ("u32", 3),
    "u64x3": ("u64", 3),
    "f64x3": ("f64", 3),
    "f64x6": ("f64", 6),
    "f64x9": ("f64", 9),
}

_INT_RANGE: Final[dict[str, tuple[int, int]]] = {
    "i8": (-(2**7), 2**7 - 1),
    "i16": (-(2**15), 2**15 - 1),
    "i32": (-(2**31), 2**31 - 1),
    "i64": (-(2**63), 2**63 - 1),
    "u8": (0, 2**8 - 1),
    "u16": (0, 2**16 - 1),
    "u32": (0, 2**32 - 1),
    "u64": (0, 2**64 - 1),
}
_SAFE_INT: Final = 2**53
_NONFINITE: Final[dict[str, float]] = {
    "NaN": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
}


def check_tag(tag: object, *, path: str | None = None) -> str:
    """Return ``tag`` when it is one of the sixteen meta tags, else refuse."""
    if not isinstance(tag, str) or tag not in TAG_LAYOUT:
        raise InvalidRecord(
            f"meta tag {tag!r} is not one of the sixteen tags ({', '.join(META_TAGS)});"
            " there is no f32, complex or narrow-integer tag (frame.md §10.2)",
            path=path,
        )
    return tag


# -- element level --------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def coerce_element(dtype: str, value: Any, *, path: str | None = None) -> Any:
    """Hold one producer value exactly to element dtype ``dtype`` (writer coercion)."""
    if dtype == "f64":
        if isinstance(value, (bool, np.bool_)):
            raise InvalidRecord(f"a boolean is not a real (f64): {value!r}", path=path)
        if isinstance(value, (float, np.floating)):
            return float(value)
        if _is_int(value):
            as_float = float(value)
            if abs(int(value)) > _SAFE_INT and int(as_float) != int(value):
                raise InvalidRecord(f"integer {value} is not exactly an f64", path=path)
            return as_float
        raise InvalidRecord(f"{value!r} is not a real (f64)", path=path)
    if dtype in _INT_RANGE:
        if not _is_int(value):
            raise InvalidRecord(
                f"{value!r} is not an integer; a real is never rounded to {dtype}", path=path
            )
        lo, hi = _INT_RANGE[dtype]
        v = int(value)
        if not lo <= v <= hi:
            raise InvalidRecord(f"{v} is outside the range of {dtype} [{lo}, {hi}]", path=path)
        return v
    if dtype == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise InvalidRecord(f"{value!r} is not a boolean", path=path)
        return bool(value)
    if dtype == "string":
        if not isinstance(value, str):
            raise InvalidRecord(f"{value!r} is not a string", path=path)
        return value
    if dtype in ("c64", "c128"):
        if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (complex, float, int, np.number)
        ):
            raise InvalidRecord(f"{value!r} is not a complex number", path=path)
        return complex(value)
    raise InvalidRecord(f"no element dtype {dtype!r}", path=path)


def encode_element(dtype: str, value: Any) -> Any:
    """The typed JSON form of one held element value."""
    if dtype == "f64":
        v = float(value)
        if math.isfinite(v):
            return v
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if dtype in _INT_RANGE:
        v = int(value)
        return v if -_SAFE_INT <= v <= _SAFE_INT else str(v)
    if dtype in ("c64", "c128"):
        c = complex(value)
        return [encode_element("f64", c.real), encode_element("f64", c.imag)]
    if dtype == "bool":
        return bool(value)
    return value


def decode_element(dtype: str, value: Any, *, path: str | None = None) -> Any:
    """Read one typed JSON element; anything but its one spelling is refused."""
    if dtype == "f64":
        if isinstance(value, bool) or value is None:
            raise InvalidRecord(
                f"{value!r} is not a real: null is not NaN (frame.md §10.4)", path=path
            )
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str) and value in _NONFINITE:
            return _NONFINITE[value]
        raise InvalidRecord(
            f"{value!r} is not an f64 in typed JSON form (a number, or 'NaN', 'Infinity',"
            " '-Infinity')",
            path=path,
        )
    if dtype in _INT_RANGE:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise InvalidRecord(
                f"{value!r} is not an integer in typed JSON form (a real is not rounded)", path=path
            )
        if isinstance(value, str):
            try:
                v = int(value, 10)
            except ValueError:
                raise InvalidRecord(f"{value!r} is not a decimal integer", path=path) from None
            if str(v) != value or abs(v) <= _SAFE_INT:
                raise InvalidRecord(
                    f"{value!r}: only integers beyond 2^53 are spelled as decimal strings",
                    path=path,
                )
        else:
            v = value
        lo, hi = _INT_RANGE[dtype]
        if not lo <= v <= hi:
            raise InvalidRecord(f"{v} is outside the range of {dtype} [{lo}, {hi}]", path=path)
        return v
    if dtype == "bool":
        if not isinstance(value, bool):
            raise InvalidRecord(f"{value!r} is not a boolean", path=path)
        return value
    if dtype == "string":
        if not isinstance(value, str):
            raise InvalidRecord(f"{value!r} is not a string", path=path)
        return value
    if dtype in ("c64", "c128"):
        if not isinstance(value, list) or len(value) != 2:
            raise InvalidRecord(f"{value!r} is not a complex [re, im] pair", path=path)
        return complex(
            decode_element("f64", value[0], path=path), decode_element("f64", value[1], path=path)
        )
    raise InvalidRecord(f"no element dtype {dtype!r}", path=path)


# -- json documents -------------------------------------------------------------------------


def finite_json(value: Any, *, path: str | None = None) -> Any:
    """A copy of ``value`` as finite JSON (numpy scalars to Python, tuples to lists).

    Refuses NaN/infinity, non-string keys and anything JSON cannot hold.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if _is_int(value):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise InvalidRecord(
                f"{value!r} is not finite JSON (NaN and infinity are not JSON)", path=path
            )
        return float(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidRecord(f"JSON object key {k!r} is not a string", path=path)
            out[k] = finite_json(v, path=path)
        return out
    if isinstance(value, np.ndarray):
        return finite_json(value.tolist(), path=path)
    if isinstance(value, (list, tuple)):
        return [finite_json(v, path=path) for v in value]
    raise InvalidRecord(f"{type(value).__name__} value {value!r} is not JSON", path=path)


def _refuse_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON (NaN and infinity are spelled as strings)")


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON refusing the bare ``NaN``/``Infinity`` tokens Python would accept."""
    return json.loads(text, parse_constant=_refuse_constant)


def dumps_strict(value: Any) -> str:
    """Serialize compact JSON with NaN and infinity forbidden."""
    return json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False)


# -- tag level ------------------------------------------------------------------------------


def coerce_meta(tag: str, value: Any, *, path: str | None = None) -> Any:
    """Hold a producer value exactly to ``tag`` (frame.md §10.5); refuse what is not exact."""
    element, width = TAG_LAYOUT[check_tag(tag, path=path)]
    if element == "json":
        return finite_json(value, path=path)
    if width is None:
        return coerce_element(element, value, path=path)
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (Sequence, np.ndarray)):
        raise InvalidRecord(f"{tag} takes a sequence of {width} values, not {value!r}", path=path)
    items = list(value.ravel()) if isinstance(value, np.ndarray) else list(value)
    if len(items) != width:
        raise InvalidRecord(f"{tag} takes exactly {width} values; got {len(items)}", path=path)
    return tuple(coerce_element(element, v, path=path) for v in items)


def encode_meta(tag: str, value: Any) -> Any:
    """The typed JSON form of a held value under ``tag``."""
    element, width = TAG_LAYOUT[tag]
    if element == "json":
        return value
    if width is None:
        return encode_element(element, value)
    return [encode_element(element, v) for v in value]


def decode_meta(tag: str, value: Any, *, path: str | None = None) -> Any:
    """Read a typed JSON value under ``tag``; refuse every other form (frame.md §10.4)."""
    element, width = TAG_LAYOUT[check_tag(tag, path=path)]
    if element == "json":
        return finite_json(value, path=path)
    if width is None:
        return decode_element(element, value, path=path)
    if not isinstance(value, list) or len(value) != width:
        raise InvalidRecord(
            f"{tag} is a JSON array of exactly {width} elements, not {value!r}", path=path
        )
    return tuple(decode_element(element, v, path=path) for v in value)


_NUMPY_SCALAR_TAG: Final[dict[str, str]] = {
    "int32": "i32",
    "int64": "i64",
    "uint32": "u32",
    "uint64": "u64",
    "int8": "i64",
    "int16": "i64",
    "uint8": "u32",
    "uint16": "u32",
    "float64": "f64",
    "float32": "f64",
    "float16": "f64",
}


def infer_tag(value: Any) -> str:
    """The tag an untagged value holds (frame.md §10.6).

    JSON values follow the spec's table. numpy scalars keep their exact tag
    (``np.int32`` is ``i32``) and small 1-D numpy arrays their vector tag
    (``float64[3]`` is ``f64x3``): the tag a producer handing them over means.
    """
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, np.generic):
        tag = _NUMPY_SCALAR_TAG.get(value.dtype.name)
        if tag is not None:
            return tag
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return "i64"
        if 2**63 <= value < 2**64:
            return "u64"
        return "f64"
    if isinstance(value, float):
        return "f64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, np.ndarray) and value.ndim == 1:
        kind, n = value.dtype.kind, value.shape[0]
        if kind == "f" and n in (3, 6, 9):
            return f"f64x{n}"
        if n == 3 and kind == "b":
            return "bool3"
        if n == 3 and kind in "iu":
            return (
                {"i": "i64x3", "u": "u64x3"}[kind]
                if value.dtype.itemsize == 8
                else {
                    "i": "i32x3",
                    "u": "u32x3",
                }[kind]
            )
    return "json"


def read_untagged(value: Any, *, path: str | None = None) -> tuple[str, Any]:
    """A reader's view of an untagged stored value: ``(inferred tag, held value)``."""
    tag = infer_tag(value)
    if tag == "f64":
        return tag, float(value)  # an integer inferred f64 becomes that real
    if tag == "json":
        return tag, finite_json(value, path=path)
    return tag, value


def meta_equal(tag: str, a: Any, b: Any) -> bool:
    """Compare two held values in typed form: NaN equals NaN, ``True`` is not ``1``."""
    return bool(dumps_strict(encode_meta(tag, a)) == dumps_strict(encode_meta(tag, b)))
