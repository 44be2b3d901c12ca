"""Columns and blocks: the closed dtype set, trailing shapes, masks, canonical keys, targets.

frame.md §2-§4, §6, §8; conventions.md §2, §9.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.model import (
    CANONICAL,
    DTYPE_OF_ZARR,
    DTYPES,
    ZARR_DATA_TYPE,
    Block,
    Column,
    as_column_array,
    check_dtype_name,
    dtype_of,
    numpy_dtype,
)

NUMPY_OF = {
    "f64": "<f8",
    "i8": "i1",
    "i16": "<i2",
    "i32": "<i4",
    "i64": "<i8",
    "u8": "u1",
    "u16": "<u2",
    "u32": "<u4",
    "u64": "<u8",
    "bool": "?",
    "c64": "<c8",
    "c128": "<c16",
}


def sample(dtype: str, rows: int = 3) -> np.ndarray:
    """A small array of ``dtype`` with extreme values where the dtype has them."""
    if dtype == "string":
        return np.array(["C", "", "ünï"][:rows], dtype=mrecd.model.STRING_DTYPE)
    np_dtype = numpy_dtype(dtype)
    if dtype == "bool":
        return np.array([True, False, True][:rows])
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        return np.array([info.min, 0, info.max][:rows], dtype=np_dtype)
    if np_dtype.kind == "c":
        return np.array([1 + 2j, -0.0 - 1j, complex(np.nan, np.inf)][:rows], dtype=np_dtype)
    return np.array([-0.0, np.nan, np.finfo(np.float64).max][:rows], dtype=np_dtype)


# -- the closed dtype set ---------------------------------------------------------------------


def test_the_dtype_set_is_the_thirteen_of_the_spec() -> None:
    assert set(DTYPES) == set(NUMPY_OF) | {"string"}
    assert len(DTYPES) == 13
    assert {v: k for k, v in ZARR_DATA_TYPE.items()} == DTYPE_OF_ZARR


@pytest.mark.parametrize("dtype", sorted(NUMPY_OF))
def test_each_numeric_dtype_is_its_little_endian_numpy_type(dtype: str) -> None:
    assert numpy_dtype(dtype) == np.dtype(NUMPY_OF[dtype])
    assert dtype_of(np.zeros(2, dtype=NUMPY_OF[dtype])) == dtype


@pytest.mark.parametrize(
    "name", ["float", "int", "uint", "f32", "f16", "complex", "json", "bytes", 3, None]
)
def test_width_free_and_foreign_dtype_names_are_refused(name: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="not a column dtype"):
        check_dtype_name(name)
    if name is not None:  # None asks Column to infer the dtype
        with pytest.raises(mrecd.InvalidRecord):
            Column([1.0], name)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_column_of_each_dtype_keeps_dtype_and_bytes(dtype: str) -> None:
    values = sample(dtype)
    column = Column(values, dtype)
    assert column.dtype == dtype
    if dtype == "string":
        assert column.values.tolist() == values.tolist()
    else:
        assert column.values.dtype == np.dtype(NUMPY_OF[dtype])
        assert column.values.tobytes() == values.tobytes()
    assert Column.from_dict(column.to_dict()) == column


@pytest.mark.parametrize("numpy_type", ["float16", "float32"])
def test_narrow_floats_are_refused_never_widened(numpy_type: str) -> None:
    narrow = np.array([0.1, 0.2], dtype=numpy_type)
    with pytest.raises(mrecd.InvalidRecord, match="refused, never widened"):
        Column(narrow)
    with pytest.raises(mrecd.InvalidRecord):
        Column(narrow, "f64")
    with pytest.raises(mrecd.InvalidRecord):
        Block({"x": narrow})


@pytest.mark.parametrize(
    "values",
    [
        np.array([b"ab"]),
        np.array([1, "a"], dtype=object),
        np.array(["2020-01-01"], dtype="datetime64[D]"),
        np.zeros(2, dtype=[("a", "<i4")]),
        np.zeros(2, dtype=np.float128) if hasattr(np, "float128") else np.zeros(2, dtype="V8"),
    ],
    ids=["raw-bytes", "object-mixed", "datetime", "record", "longdouble"],
)
def test_numpy_types_outside_the_set_are_refused(values: np.ndarray) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        Column(values)


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        ([1, 2], "string"),  # numpy would spell the integers as text
        ([1, "a"], None),  # ... and a mixed list as all text
        (np.array([1.5]), "string"),
        (["1.5"], "f64"),  # text is never parsed into numbers
        (np.array([True, False]), "i64"),  # a boolean is not a number
        (np.array([1, 0]), "bool"),
        ([1.5], "i64"),  # a real is never rounded
        (np.array([1.0]), "i64"),
        (np.array([-1]), "u64"),
        (np.array([256]), "u8"),
        (np.array([2**53 + 1]), "f64"),  # not exactly a binary64
        (np.array([1 + 1j]), "f64"),
    ],
)
def test_values_convert_to_a_dtype_only_when_exact(values: Any, dtype: str | None) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        Column(values, dtype)


@pytest.mark.parametrize(
    ("values", "dtype", "expected"),
    [
        ([1, 2], "f64", np.array([1.0, 2.0])),
        (np.array([1, 2], dtype=np.uint32), "u64", np.array([1, 2], dtype=np.uint64)),
        (np.array([7], dtype=np.int64), "i8", np.array([7], dtype=np.int8)),
        (np.array([1.5], dtype=">f8"), "f64", np.array([1.5])),
        (np.array([3], dtype=">i4"), "i32", np.array([3], dtype=np.int32)),
        (np.array([1 + 2j], dtype=np.complex64), "c128", np.array([1 + 2j])),
        (["a", "b"], "string", np.array(["a", "b"])),
    ],
)
def test_exact_conversions_are_made(values: Any, dtype: str, expected: np.ndarray) -> None:
    column = Column(values, dtype)
    assert column.dtype == dtype
    assert column.values.tolist() == expected.tolist()
    if dtype != "string":
        assert column.values.dtype == np.dtype(NUMPY_OF[dtype])


def test_inferred_dtypes_follow_the_values() -> None:
    assert Column([1.5, 2.0]).dtype == "f64"
    assert Column([1, 2]).dtype == "i64"
    assert Column([True]).dtype == "bool"
    assert Column(["a"]).dtype == "string"
    assert Column(np.array(["a"], dtype=object)).dtype == "string"
    assert Column(np.array([1.5], dtype=">f8")).values.dtype == np.dtype("<f8")


# -- shapes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1.0, "abc", None, {"a": 1}, np.float64(2.0)])
def test_a_0d_value_is_not_a_column(value: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="leading axis"):
        Column(value)


def test_ragged_values_are_refused() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="rectangular"):
        Column([[1.0, 2.0], [3.0]])


@pytest.mark.parametrize("trailing", [(), (3,), (3, 3), (2, 0), (0,)])
def test_trailing_shapes_are_the_axes_after_the_leading_one(trailing: tuple[int, ...]) -> None:
    column = Column(np.zeros((4, *trailing)))
    assert column.shape == (4, *trailing)
    assert column.trailing == trailing
    assert len(column) == 4


def test_a_column_may_have_zero_rows() -> None:
    column = Column(np.zeros((0, 3)))
    assert len(column) == 0 and column.trailing == (3,)


@pytest.mark.parametrize("data", [{"dtype": "f64"}, {"dtype": "f64", "shape": []}])
def test_a_column_declared_with_no_shape_is_invalid(data: dict[str, Any]) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="shape"):
        Column.from_dict(data)


@pytest.mark.parametrize("shape", [[-1], [2.0], [True], ["2"], [None], "2", 2, {"n": 2}], ids=repr)
def test_a_malformed_shape_is_invalid(shape: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="shape"):
        Column.from_dict({"dtype": "f64", "shape": shape})


@pytest.mark.parametrize(
    "values",
    [[1.0], [[1.0], [2.0]], [1.0, 2.0, 3.0], "12", {"a": 1}, [[1.0, 2.0]]],
    ids=["short", "too-deep", "long", "string", "object", "wrong-nesting"],
)
def test_values_that_do_not_fill_the_shape_are_refused(values: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        Column.from_dict({"dtype": "f64", "shape": [2], "values": values})


def test_nested_and_flat_values_read_the_same() -> None:
    nested = Column.from_dict({"dtype": "i32", "shape": [2, 3], "values": [[1, 2, 3], [4, 5, 6]]})
    flat = Column.from_dict({"dtype": "i32", "shape": [2, 3], "values": [1, 2, 3, 4, 5, 6]})
    assert nested == flat
    assert nested.values.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert nested.to_dict()["values"] == [[1, 2, 3], [4, 5, 6]]


def test_absent_values_are_the_fill_value_without_allocating() -> None:
    huge = Column.from_dict({"dtype": "f64", "shape": [10**12]})
    assert huge.shape == (10**12,)
    assert huge.values.base is not None and huge.values.strides == (0,)
    strings = Column.from_dict({"dtype": "string", "shape": [2]})
    assert strings.values.tolist() == ["", ""]


def test_unknown_column_keys_are_refused() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="unknown column keys"):
        Column.from_dict({"dtype": "f64", "shape": [1], "values": [1.0], "unit": "A"})


@pytest.mark.parametrize("dtype", ["c64", "c128"])
def test_complex_values_are_re_im_pairs_in_typed_form(dtype: str) -> None:
    column = Column(np.array([1 + 2j, complex(np.nan, -np.inf)], dtype=numpy_dtype(dtype)))
    data = column.to_dict()
    assert data["values"] == [[1.0, 2.0], ["NaN", "-Infinity"]]
    assert Column.from_dict(data) == column


@pytest.mark.parametrize(
    ("dtype", "value", "spelled"),
    [
        ("u64", 2**64 - 1, "18446744073709551615"),
        ("i64", -(2**63), "-9223372036854775808"),
        ("i64", 2**53, 2**53),
        ("u64", 2**53 + 1, "9007199254740993"),
    ],
)
def test_64_bit_integers_beyond_2_53_are_decimal_strings(
    dtype: str, value: int, spelled: Any
) -> None:
    column = Column(np.array([value], dtype=numpy_dtype(dtype)))
    assert column.to_dict()["values"] == [spelled]
    assert Column.from_dict(column.to_dict()).values.tolist() == [value]


def test_a_column_is_read_only() -> None:
    column = Column(np.zeros(3), validity=[True, False, True])
    with pytest.raises(ValueError, match="read-only"):
        column.values[0] = 1.0
    assert column.validity is not None
    with pytest.raises(ValueError, match="read-only"):
        column.validity[0] = False


def test_replace_changes_fields_and_refuses_unknown_ones() -> None:
    column = Column(np.array([0.1, 0.2]))
    rounded = column.replace(precision=0.5)
    assert rounded.precision == 0.5 and rounded.values.tolist() == [0.0, 0.0]
    with pytest.raises(mrecd.InvalidRecord, match="no field"):
        column.replace(unit="A")


# -- validity masks ---------------------------------------------------------------------------


def test_an_all_true_mask_is_no_mask_and_equal_to_none() -> None:
    masked = Column(np.array([1.0, 2.0]), validity=[True, True])
    assert masked.validity is None
    assert masked == Column(np.array([1.0, 2.0]))
    assert "validity" not in masked.to_dict()


@pytest.mark.parametrize(
    ("mask", "rule"),
    [
        ([1, 0, 1], "bool"),
        (np.array([1, 0, 1], dtype=np.uint8), "bool"),
        ([True, False], "per row"),
        (np.ones((3, 1), dtype=bool), "per row"),
        ("abc", "bool"),
    ],
    ids=["ints", "bytes", "short", "trailing-axes", "string"],
)
def test_a_mask_must_be_bool_with_one_flag_per_row(mask: Any, rule: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=rule):
        Column(np.zeros((3, 2)), validity=mask)


@pytest.mark.parametrize("dtype", DTYPES)
def test_masks_are_allowed_on_every_dtype(dtype: str) -> None:
    column = Column(sample(dtype), dtype, validity=[True, False, True])
    assert column.validity is not None and column.validity.tolist() == [True, False, True]
    assert Column.from_dict(column.to_dict()) == column


def test_values_under_null_rows_do_not_take_part_in_equality() -> None:
    a = Column(np.array([1.0, 2.0]), validity=[True, False])
    b = Column(np.array([1.0, 99.0]), validity=[True, False])
    assert a == b
    assert a != Column(np.array([1.0, 2.0]), validity=[False, True])
    assert a != Column(np.array([1.0, 2.0]))


def test_bitwise_equality_nan_equals_nan_and_signed_zero_differs() -> None:
    assert Column(np.array([np.nan])) == Column(np.array([np.nan]))
    assert Column(np.array([-0.0])) != Column(np.array([0.0]))
    assert Column(np.array([1], dtype=np.int32)) != Column(np.array([1], dtype=np.int64))


# -- blocks -----------------------------------------------------------------------------------


def test_columns_of_a_block_must_agree_with_its_count() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="row count"):
        Block({"a": np.zeros(3), "b": np.zeros(4)})
    with pytest.raises(mrecd.InvalidRecord, match="count 2"):
        Block({"a": np.zeros(3)}, count=2)
    with pytest.raises(mrecd.InvalidRecord, match=r"row count|count"):
        Block.from_dict({"count": 3, "columns": {"a": {"dtype": "f64", "shape": [2]}}})


@pytest.mark.parametrize("count", [-1, 1.5, "3", True, None], ids=repr)
def test_count_is_a_non_negative_integer(count: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="count"):
        Block.from_dict({"count": count, "columns": {}})


def test_a_block_may_have_no_columns_but_states_its_count() -> None:
    block = Block(count=5)
    assert block.count == 5 and len(block) == 0
    assert Block.from_dict(block.to_dict()) == block
    with pytest.raises(mrecd.InvalidRecord, match="count"):
        Block.from_dict({"columns": {}})


@pytest.mark.parametrize("columns", [[], "x", 3])
def test_block_columns_must_be_an_object(columns: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="columns"):
        Block.from_dict({"count": 0, "columns": columns})


def test_structural_shape_product_must_equal_count() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="product 30"):
        Block({"rho": np.zeros(24)}, structural_shape=[2, 3, 5])
    grid = Block({"rho": np.zeros(24)}, structural_shape=[2, 3, 4])
    assert grid.structural_shape == (2, 3, 4)
    assert Block.from_dict(grid.to_dict()) == grid


@pytest.mark.parametrize("shape", [[-2, -12], [2.0, 12], "24", [True, 24]], ids=repr)
def test_structural_shape_is_a_list_of_non_negative_integers(shape: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="structural_shape"):
        Block({"rho": np.zeros(24)}, structural_shape=shape)


@pytest.mark.parametrize("name", ["_validity", "a/b", ""])
def test_reserved_and_malformed_column_names_are_refused(name: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="name"):
        Block({name: np.zeros(2)})


def test_block_attributes_are_preserved_and_may_not_take_layout_names() -> None:
    block = Block.from_dict({"count": 1, "columns": {}, "x_vendor": {"k": [1, None]}})
    assert block.attributes == {"x_vendor": {"k": [1, None]}}
    assert block.to_dict()["x_vendor"] == {"k": [1, None]}
    for reserved in ("count", "structural_shape", "targets"):
        with pytest.raises(mrecd.InvalidRecord, match="reserved"):
            Block(count=1, attributes={reserved: 1})
    with pytest.raises(mrecd.InvalidRecord, match="not finite JSON"):
        Block(count=1, attributes={"bad": float("nan")})


# -- canonical keys ---------------------------------------------------------------------------


def test_the_canonical_table_is_the_spec_table() -> None:
    want = {
        "f64": "x y z vx vy vz fx fy fz charge mass quatw quati quatj quatk mux muy muz axis_x"
        " axis_y axis_z occupancy b_factor",
        "u64": "id atomic_number type_id mol_id res_id atom_map atomi atomj atomk atoml atomm"
        " ibead bond_type bond_number",
        "i64": "formal_charge",
        "i32": "ix iy iz",
        "bool": "free is_14 exclude_14",
        "string": "element type name res_name bead_type chain icode altloc style",
    }
    expected = {key: dtype for dtype, keys in want.items() for key in keys.split()}
    assert expected == CANONICAL


def canonical_sample(key: str, rows: int = 2) -> np.ndarray:
    return sample(CANONICAL[key], rows)


@pytest.mark.parametrize("key", sorted(CANONICAL))
@pytest.mark.parametrize("coerce", [True, False])
def test_each_canonical_key_at_its_dtype_is_accepted(key: str, coerce: bool) -> None:
    block = Block({key: canonical_sample(key)}, coerce=coerce)
    assert block[key].dtype == CANONICAL[key]


@pytest.mark.parametrize("key", sorted(CANONICAL))
def test_a_canonical_key_with_trailing_axes_is_refused(key: str) -> None:
    values = np.stack([canonical_sample(key)] * 1, axis=1)  # shape [N][1]
    with pytest.raises(mrecd.InvalidRecord, match="one value per row"):
        Block({key: values})


def other_dtypes(key: str) -> list[str]:
    return [d for d in DTYPES if d != CANONICAL[key]]


@pytest.mark.parametrize(
    ("key", "dtype"),
    [(k, d) for k in sorted(CANONICAL) for d in other_dtypes(k)],
)
def test_a_canonical_key_at_another_dtype_is_refused_on_a_strict_read(key: str, dtype: str) -> None:
    column = Column(sample(dtype, 2), dtype)
    with pytest.raises(mrecd.InvalidRecord, match=f"canonical key '{key}' must be"):
        Block({key: column}, coerce=False)


UNSIGNED_U64 = sorted(k for k, d in CANONICAL.items() if d == "u64")


@pytest.mark.parametrize("key", UNSIGNED_U64)
@pytest.mark.parametrize("narrow", ["u8", "u16", "u32"])
def test_a_narrower_unsigned_u64_key_is_widened_on_write(key: str, narrow: str) -> None:
    values = np.array([0, 7], dtype=numpy_dtype(narrow))
    block = Block({key: values})
    assert block[key].dtype == "u64"
    assert block[key].values.dtype == np.uint64
    assert block[key].values.tolist() == [0, 7]
    with pytest.raises(mrecd.InvalidRecord, match="must be u64"):
        Block({key: values}, coerce=False)


@pytest.mark.parametrize("key", UNSIGNED_U64)
@pytest.mark.parametrize("other", ["i64", "i32", "f64"])
def test_a_signed_or_real_u64_key_is_refused_even_when_writing(key: str, other: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="must be u64"):
        Block({key: np.array([0, 1], dtype=numpy_dtype(other))})


def test_ix_as_i64_is_refused() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="must be i32"):
        Block({"ix": np.array([1, -1], dtype=np.int64)})


def test_a_masked_u32_id_keeps_its_mask_when_widened() -> None:
    block = Block({"id": Column(np.array([1, 2], dtype=np.uint32), validity=[True, False])})
    assert block["id"].dtype == "u64"
    assert block["id"].validity is not None and block["id"].validity.tolist() == [True, False]


@pytest.mark.parametrize("key", ["x", "charge", "mass"])
def test_float_canonical_keys_take_integers_as_reals_on_write(key: str) -> None:
    block = Block({key: np.array([1, 2], dtype=np.int64)})
    assert block[key].dtype == "f64" and block[key].values.tolist() == [1.0, 2.0]
    assert Block({key: [1, 2]})[key].dtype == "f64"


def test_plain_python_values_take_the_canonical_dtype() -> None:
    block = Block({"ix": [1, -1], "id": [0, 1], "element": ["C", "O"], "free": [True, False]})
    assert {n: c.dtype for n, c in block.items()} == {
        "ix": "i32",
        "id": "u64",
        "element": "string",
        "free": "bool",
    }
    with pytest.raises(mrecd.InvalidRecord):
        Block({"id": [-1]})


def test_a_block_read_from_json_is_strict_about_canonical_dtypes() -> None:
    data = {"count": 1, "columns": {"id": {"dtype": "u32", "shape": [1], "values": [1]}}}
    with pytest.raises(mrecd.InvalidRecord, match="must be u64"):
        Block.from_dict(data)
    assert Block.from_dict(data, coerce=True)["id"].dtype == "u64"


def test_non_canonical_columns_are_preserved_at_any_dtype() -> None:
    block = Block(
        {"r0": np.array([1.0], dtype=np.float64), "handle": np.array([3], dtype=np.uint32)}
    )
    assert block["handle"].dtype == "u32"


# -- row references (targets) -----------------------------------------------------------------


def members(targets: dict[str, str], dtype: str = "u64") -> Block:
    return Block(
        {
            "atom": np.array([0, 1], dtype=numpy_dtype(dtype)),
            "ibead": np.array([0, 0], dtype=np.uint64),
        },
        targets=targets,
    )


@pytest.mark.parametrize("target", ["atoms", "/frame/atoms", "/system/atoms", "/x_vendor/sites"])
def test_well_formed_targets_are_kept(target: str) -> None:
    block = members({"atom": target})
    assert block.targets == {"atom": target}
    assert Block.from_dict(block.to_dict()) == block


@pytest.mark.parametrize(
    "target",
    ["/frame/atoms/x", "frame/atoms", "/frame", "/", "", "//atoms", "/frame/", 3, None],
    ids=repr,
)
def test_malformed_targets_are_refused(target: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="target"):
        members({"atom": target})


def test_a_target_into_the_trajectory_is_refused() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="trajectory"):
        members({"atom": "/trajectory/atoms"})


@pytest.mark.parametrize("dtype", ["i64", "u32", "f64"])
def test_a_referencing_column_must_be_u64(dtype: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="u64"):
        members({"atom": "atoms"}, dtype=dtype)


def test_a_referencing_column_has_no_trailing_axes() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="u64"):
        Block({"pair": np.zeros((2, 2), dtype=np.uint64)}, targets={"pair": "atoms"})


def test_targets_must_name_a_column_of_the_block() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="not a column"):
        members({"nope": "atoms"})
    with pytest.raises(mrecd.InvalidRecord, match="object"):
        Block(count=0, targets=["atoms"])  # type: ignore[arg-type]


def test_block_equality_covers_shape_targets_and_attributes() -> None:
    base = Block({"a": np.zeros(4)})
    assert base == Block({"a": np.zeros(4)})
    assert base != Block({"a": np.zeros(4)}, structural_shape=[2, 2])
    assert base != Block({"a": np.zeros(4)}, attributes={"k": 1})
    assert members({"atom": "atoms"}) != members({"atom": "/frame/atoms"})
    assert base.same_content(Block({"a": np.zeros(4)}, attributes={"k": 1}))


@pytest.mark.parametrize("at", [0, 3, 4, 999])
def test_same_values_sees_one_changed_bit_anywhere(at: int) -> None:
    """The carry-forward comparison looks at the first rows first, then at every row."""
    values = np.linspace(0.0, 1.0, 1000)
    other = values.copy()
    other[at] = -0.0 if values[at] == 0.0 else np.nextafter(values[at], 2.0)
    assert not Column(values).same_values(Column(other))
    assert Column(values).same_values(Column(values.copy()))


def test_same_values_is_bitwise_for_nan_and_signed_zero() -> None:
    nan = np.full(10, np.nan)
    assert Column(nan).same_values(Column(nan.copy()))
    zeros = np.zeros(10)
    signed = zeros.copy()
    signed[7] = -0.0
    assert not Column(zeros).same_values(Column(signed))


def test_rows_and_select_are_views_that_keep_targets() -> None:
    block = members({"atom": "atoms", "ibead": "atoms"})
    part = block.rows(1, 2)
    assert part.count == 1 and part["atom"].values.tolist() == [1]
    assert np.shares_memory(part["atom"].values, block["atom"].values)
    only = block.select(["atom"])
    assert list(only) == ["atom"] and only.targets == {"atom": "atoms"}


def test_as_column_array_refuses_a_0d_array() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="leading axis"):
        as_column_array(np.float64(1.0))
