"""Per-step meta values as one array: what ``series(key)`` of any trajectory returns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ._dtypes import STRING_DTYPE, numpy_dtype
from ._typed import TAG_LAYOUT, check_tag, dumps_strict

__all__ = ["series_array"]


def series_array(tag: str, values: Sequence[Any]) -> npt.NDArray[Any]:
    """Held meta values of one tag as the array a trajectory's ``meta/<key>`` stores.

    Parameters
    ----------
    tag
        The key's meta tag (``f64``, ``i64x3``, ``json`` ...).
    values
        One held value per frame (a tuple of elements for a vector tag).

    Returns
    -------
    numpy.ndarray
        ``[n]`` for a scalar tag, ``[n, width]`` for a vector tag, of the tag's
        element dtype; ``string`` and ``json`` (as compact JSON text) are
        numpy ``StringDType``.

    Raises
    ------
    InvalidRecord
        ``tag`` is not a meta tag.
    """
    element, width = TAG_LAYOUT[check_tag(tag)]
    trailing = () if width is None else (width,)
    if element in ("string", "json"):
        dtype: np.dtype[Any] = STRING_DTYPE
        values = [dumps_strict(v) for v in values] if element == "json" else list(values)
    else:
        dtype = numpy_dtype(element)
        values = [list(v) for v in values] if width is not None else list(values)
    if not values:
        return np.empty((0, *trailing), dtype=dtype)
    return np.array(values, dtype=dtype)
