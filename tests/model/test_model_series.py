"""``series_array``: held per-step meta values as the array a trajectory stores."""

from __future__ import annotations

import numpy as np
import pytest

import mrecd
from mrecd.model import STRING_DTYPE, series_array


@pytest.mark.parametrize(
    ("tag", "values", "dtype", "shape"),
    [
        ("bool", [True, False], np.bool_, (2,)),
        ("u64", [2**64 - 1], np.uint64, (1,)),
        ("f64", [], np.float64, (0,)),
        ("f64x3", [(1.0, 2.0, 3.0)], np.float64, (1, 3)),
        ("bool3", [], np.bool_, (0, 3)),
        ("string", ["a", "ü"], STRING_DTYPE, (2,)),
    ],
)
def test_dtype_and_shape_follow_the_tag(
    tag: str, values: list, dtype: object, shape: tuple
) -> None:
    array = series_array(tag, values)
    assert array.dtype == dtype and array.shape == shape
    assert array.tolist() == [list(v) if isinstance(v, tuple) else v for v in values]


def test_json_values_become_compact_text() -> None:
    array = series_array("json", [{"a": [1, None]}, "x"])
    assert array.dtype == STRING_DTYPE and array.tolist() == ['{"a":[1,null]}', '"x"']


def test_unknown_tags_are_refused() -> None:
    with pytest.raises(mrecd.InvalidRecord):
        series_array("f32", [1.0])
