"""Declared precision (frame.md §7, seed 004 F1): the quantum and the rounding.

A column declaring precision ``p`` stores ``round_half_even(x / q) * q`` with
``q`` the largest power of two not above ``p``. Both operations are exact in
binary64 (``q`` is a power of two), so every writer stores the same bits.

This is pure numpy arithmetic and the model needs it (a ``Column`` holds its
stored, rounded values), so it lives in the model layer rather than the
codecs; the codecs only see already-rounded values.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ..errors import InvalidRecord

PRECISION_MIN: Final[float] = 2.0**-1000
PRECISION_MAX: Final[float] = 2.0**1000


_F64: Final = np.dtype(np.float64)
_LEAST: Final = np.minimum.reduce  # x.min() without the Python wrapper (the append path)
_MOST: Final = np.maximum.reduce
_TILE_BYTES: Final = 384 * 1024  # quantize_rows: a tile well inside a core's L2 cache


def check_precision(precision: object, *, path: str | None = None) -> float:
    """Return ``precision`` as a float when it is a legal declaration, else refuse.

    Legal: a finite binary64 with ``2^-1000 <= p <= 2^1000`` (frame.md §7.2).
    """
    if isinstance(precision, bool) or not isinstance(
        precision, (int, float, np.floating, np.integer)
    ):
        raise InvalidRecord(f"precision {precision!r} is not a number", path=path)
    p = float(precision)
    if not (math.isfinite(p) and PRECISION_MIN <= p <= PRECISION_MAX):
        raise InvalidRecord(
            f"precision {precision!r} must be finite and within [2^-1000, 2^1000] (frame.md §7.2)",
            path=path,
        )
    return p


def _reals(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``values`` as float64, refusing anything that is not a real or integer array."""
    try:
        x = np.asarray(values)
    except (ValueError, TypeError) as exc:
        raise InvalidRecord(f"values are not a rectangular array: {exc}") from None
    if x.dtype.kind not in "iuf":
        raise InvalidRecord(f"precision applies to real values, not {x.dtype}")
    return x.astype(np.float64, copy=False)


def quantum(precision: float) -> float:
    """The quantum of precision ``p``: ``2^(e-1)`` where ``p = m * 2^e``, ``0.5 <= m < 1``.

    Examples: ``quantum(1e-3) == 2**-10``, ``quantum(0.5) == 0.5``, ``quantum(1) == 1``.
    """
    if type(precision) is float:  # the append path asks for the same few values
        return _quantum_of_float(precision)
    _, exponent = math.frexp(check_precision(precision))
    return math.ldexp(1.0, exponent - 1)


@functools.lru_cache(maxsize=256)
def _quantum_of_float(precision: float) -> float:
    _, exponent = math.frexp(check_precision(precision))
    return math.ldexp(1.0, exponent - 1)


def quantize(values: npt.ArrayLike, precision: float) -> npt.NDArray[np.float64]:
    """Stored values under precision ``p`` (frame.md §7.1), as a new float64 array.

    ``x`` is kept when NaN, infinite or ``|x| >= 2^52 * q``; otherwise it becomes
    ``round_half_even(x / q) * q`` (numpy's ``round`` is half-to-even). The sign
    of a small negative value survives as ``-0.0``.
    """
    q = quantum(precision)
    x = values if type(values) is np.ndarray and values.dtype == _F64 else _reals(values)
    limit = 2.0**52 * q
    if (
        limit < math.inf
        and x.size
        and _LEAST(x, axis=None) > -limit
        and _MOST(x, axis=None) < limit
    ):  # all in range
        # (NaN fails both comparisons.) No value is kept, nothing can overflow.
        fast = np.multiply(x, 1.0 / q)
        np.rint(fast, out=fast)
        fast *= q
        return fast
    with np.errstate(over="ignore", invalid="ignore"):
        # x * (1/q) is exactly x / q: q is a power of two (and 1/q is finite
        # within the precision bounds). rint rounds half to even.
        rounded = np.rint(x * (1.0 / q))
        rounded *= q
        # NaN/inf fail the comparison, so they keep x along with the huge values.
        keep = ~(np.abs(x) < 2.0**52 * q)
        if keep.any():
            rounded[keep] = x[keep]
        return rounded


def quantize_rows(
    rows: Sequence[npt.NDArray[np.float64]], precision: float
) -> list[npt.NDArray[np.float64]]:
    """:func:`quantize` of equal-shaped float64 arrays at once, bit for bit (the rounding is
    elementwise): item ``i`` is ``quantize(rows[i], precision)``, read-only.

    A batch of frames pays a few rounding calls per tile of rows instead of a few per
    frame. The items are the rows of one array (it lives while one of them does) with
    8 bytes of slack after the last, so a writer's encoder can shuffle consecutive rows
    in one copy that reads them as whole unaligned words.
    """
    if not rows:
        return []
    q = quantum(precision)
    # rows at a time that stay in a core's cache between the passes over them
    tile = max(1, _TILE_BYTES // max(1, rows[0].size * 8))
    count = len(rows) * rows[0].size
    owner = np.empty(count + 1)
    out = owner[:count].reshape(len(rows), *rows[0].shape)
    for start in range(0, len(rows), tile):
        _quantize_tile(rows[start : start + tile], q, precision, out[start : start + tile])
    out.flags.writeable = False
    owner.flags.writeable = False  # frozen at its owner too: no view of it can thaw it
    return list(out)


def _quantize_tile(
    rows: Sequence[npt.NDArray[np.float64]],
    q: float,
    precision: float,
    out: npt.NDArray[np.float64],
) -> None:
    scale = 1.0 / q
    with np.errstate(over="ignore"):  # an overflow to inf is a value kept, as in quantize
        for i, x in enumerate(rows):
            np.multiply(x, scale, out=out[i])  # x / q exactly: q is a power of two
    # |x| < 2^52 q is |x / q| < 2^52 where the product is exact; where it overflows to inf
    # or is NaN the comparison fails, as it does on x itself
    if (
        2.0**52 * q < math.inf
        and out.size
        and _LEAST(out, axis=None) > -(2.0**52)
        and _MOST(out, axis=None) < 2.0**52
    ):
        np.rint(out, out=out)
        out *= q
        return
    out[...] = quantize(np.stack(rows), precision)


def on_grid(values: npt.ArrayLike, precision: float) -> bool:
    """Whether every value is what :func:`quantize` stores (what a validator checks)."""
    x = _reals(values)
    stored: Any = quantize(x, precision)
    return bool(np.array_equal(stored.view(np.uint64), x.view(np.uint64)))
