"""Declared precision: the quantum, round-half-even, bounds, f64 only (frame.md §7, seed 004 F1)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mrecd
from mrecd.model import (
    PRECISION_MAX,
    PRECISION_MIN,
    Column,
    check_precision,
    on_grid,
    quantize,
    quantum,
)


def bits(values: np.ndarray) -> list[int]:
    return np.asarray(values, dtype=np.float64).view(np.uint64).tolist()


@pytest.mark.parametrize(
    ("p", "q"),
    [
        (1e-3, 2**-10),
        (0.5, 0.5),
        (1, 1.0),
        (1.0, 1.0),
        (0.75, 0.5),
        (3.0, 2.0),
        (1e-2, 2**-7),
        (2.0**-1000, 2.0**-1000),
        (2.0**1000, 2.0**1000),
    ],
)
def test_quantum_is_the_largest_power_of_two_not_above_p(p: float, q: float) -> None:
    assert quantum(p) == q
    assert mrecd.quantum(p) == q


@given(st.floats(min_value=PRECISION_MIN, max_value=PRECISION_MAX))
def test_quantum_is_a_power_of_two_within_p(p: float) -> None:
    q = quantum(p)
    mantissa, _ = math.frexp(q)
    assert mantissa == 0.5
    assert q <= p < 2 * q


@pytest.mark.parametrize(
    "p",
    [
        0,
        0.0,
        -1e-3,
        math.nan,
        math.inf,
        -math.inf,
        2.0**-1001,
        2.0**1000 * 1.5,
        5e-324,
        True,
        "1e-3",
        [1e-3],
    ],
    ids=repr,
)
def test_precision_outside_the_bounds_is_refused(p: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="precision"):
        check_precision(p)
    with pytest.raises(mrecd.InvalidRecord, match="precision"):
        Column(np.zeros(2), precision=p)
    with pytest.raises(mrecd.InvalidRecord, match="precision"):
        quantum(p)


def test_an_absent_precision_is_none_and_stores_values_as_given() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="not a number"):
        check_precision(None)
    x = np.array([0.1, 0.2])
    column = Column(x, precision=None)
    assert column.precision is None and bits(column.values) == bits(x)
    assert "precision" not in column.to_dict()


def test_the_bounds_themselves_are_legal() -> None:
    assert check_precision(PRECISION_MIN) == 2.0**-1000
    assert check_precision(PRECISION_MAX) == 2.0**1000


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_values_pass_unchanged(value: float) -> None:
    assert bits(quantize(np.array([value]), 1e-3)) == bits(np.array([value]))


@pytest.mark.parametrize("p", [1e-3, 0.5, 1e200, 2.0**-1000])
def test_values_at_or_beyond_2_52_quanta_pass_unchanged(p: float) -> None:
    q = quantum(p)
    big = np.array([2.0**52 * q, -(2.0**52) * q, 2.0**52 * q * 1.5, np.finfo(np.float64).max])
    assert bits(quantize(big, p)) == bits(big)


def test_the_formula_is_evaluated_in_binary64_even_where_the_product_overflows() -> None:
    # Spec gap (reported): for q > 2^971, 2^52*q overflows, so the guard admits the
    # largest finite values and round(x/q)*q overflows to infinity. Writers must agree
    # bit for bit, so the model follows the binary64 formula literally, as the reference.
    p, x = 2.0**1000, float(np.finfo(np.float64).max)
    q = quantum(p)
    with np.errstate(over="ignore"):
        literal = np.float64(round(x / q)) * np.float64(q)
    assert bits(quantize(np.array([x]), p)) == bits(np.array([literal]))


def test_exact_ties_round_to_the_even_multiple() -> None:
    q = 2**-10
    ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5]) * q
    assert (quantize(ties, 1e-3) / q).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 4.0]


def test_a_small_negative_value_rounds_to_negative_zero() -> None:
    out = quantize(np.array([-1e-6, 1e-6]), 1e-3)
    assert out.tolist() == [0.0, 0.0]
    assert bits(out) == bits(np.array([-0.0, 0.0]))


@settings(max_examples=300)
@given(
    p=st.floats(min_value=1e-12, max_value=1e6),
    xs=st.lists(
        st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=50
    ),
)
def test_random_sweep_is_within_half_a_quantum_and_on_the_grid(p: float, xs: list[float]) -> None:
    q = quantum(p)
    x = np.array(xs)
    stored = quantize(x, p)
    small = np.abs(x) < 2.0**52 * q
    assert np.all(np.abs(x[small] - stored[small]) <= q / 2)
    assert np.all(np.mod(stored[small], q) == 0)
    assert bits(stored[~small]) == bits(x[~small])
    assert on_grid(stored, p)
    assert bits(quantize(stored, p)) == bits(stored)  # idempotent


def test_quantize_is_elementwise_round_half_even_of_x_over_q() -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(-40, 40, 10_000)
    q = 2**-10
    expected = np.array([round(v / q) * q for v in x.tolist()])  # Python round is half-even
    assert bits(quantize(x, 1e-3)) == bits(expected)


def test_on_grid_reports_off_grid_values() -> None:
    assert on_grid(np.array([0.123046875, -1.0, 2.7177734375]), 1e-3)
    assert not on_grid(np.array([0.1]), 1e-3)
    assert on_grid(np.array([math.nan, math.inf, 2.0**60]), 1e-3)


@pytest.mark.parametrize(
    "values", [["a"], np.array(["1.5"]), np.array([1 + 1j]), [[1.0], [2.0, 3.0]]]
)
def test_quantize_refuses_non_real_values(values: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        quantize(values, 1e-3)
    with pytest.raises(mrecd.InvalidRecord):
        on_grid(values, 1e-3)


def test_a_precision_column_holds_the_stored_values() -> None:
    x = np.array([0.1234, -1.0, 2.71828, math.nan])
    column = Column(x, precision=1e-3)
    assert column.precision == 1e-3
    assert bits(column.values) == bits(quantize(x, 1e-3))
    again = Column.from_dict(column.to_dict())
    assert again == column
    assert again.precision == 1e-3 and bits(again.values) == bits(column.values)


@pytest.mark.parametrize("dtype", ["i64", "u64", "i32", "c128", "c64", "bool", "string", "u8"])
def test_precision_is_declared_only_on_f64(dtype: str) -> None:
    values: Any = (
        ["a", "b"] if dtype == "string" else np.zeros(2, dtype=mrecd.model.numpy_dtype(dtype))
    )
    with pytest.raises(mrecd.InvalidRecord, match="only on f64"):
        Column(values, dtype, precision=1e-3)


def test_precision_on_a_masked_column_rounds_every_row() -> None:
    column = Column(np.array([0.1, 0.2]), validity=[True, False], precision=0.5)
    assert column.values.tolist() == [0.0, 0.0]
    assert column.validity is not None


def test_the_fixture_grid_values_are_already_stored_values() -> None:
    values = [0.123046875, -1.0, 2.7177734375]
    column = Column.from_dict({"dtype": "f64", "precision": 0.001, "shape": [3], "values": values})
    assert column.values.tolist() == values
