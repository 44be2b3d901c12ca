"""The pinned declaration (sequence_schema) and Declaration.conform (trajectory.md §3.3-§9)."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.model import (
    RESERVED_BLOCK_NAMES,
    RESERVED_COLUMN_NAMES,
    Block,
    BlockSpec,
    Column,
    ColumnSpec,
    Declaration,
    Frame,
    MetaSpec,
    quantize,
)

GROWTH = {
    "blocks": {
        "atoms": {
            "columns": {
                "element": {"dtype": "string", "trailing": []},
                "mol_id": {"dtype": "u64", "trailing": []},
                "x": {"dtype": "f64", "trailing": []},
                "y": {"dtype": "f64", "trailing": []},
                "z": {"dtype": "f64", "trailing": []},
            }
        }
    },
    "meta": {"pe": {"dtype": "f64"}},
}


def col(dtype: str = "f64", **more: Any) -> dict[str, Any]:
    return {"dtype": dtype, "trailing": [], **more}


def declare(blocks: dict[str, Any], meta: dict[str, Any] | None = None) -> Declaration:
    return Declaration.from_dict({"blocks": blocks, "meta": meta or {}})


def refused(data: Any, rule: str) -> mrecd.InvalidRecord:
    with pytest.raises(mrecd.InvalidRecord, match=rule) as info:
        Declaration.from_dict(data)
    return info.value


# -- serialization ----------------------------------------------------------------------------


def test_the_growth_example_round_trips_exactly() -> None:
    declaration = Declaration.from_dict(GROWTH)
    assert declaration.to_dict() == GROWTH
    assert Declaration.from_dict(declaration.to_dict()) == declaration


def test_optional_keys_are_written_only_when_set() -> None:
    data = {
        "blocks": {
            "atoms": {"columns": {"x": col(nullable=False), "q": col(precision=None)}},
            "members": {
                "columns": {"atom": col("u64", nullable=True), "v": col(precision=0.001)},
                "structural_shape": [2, 1],
                "targets": {"atom": "/system/atoms"},
            },
            "atom_types": {"columns": {"type": col("string")}, "aligned_with": "atoms"},
        },
        "meta": {"pe": {"dtype": "f64"}, "n": {"dtype": "i32", "fill": 0}},
    }
    out = Declaration.from_dict(data).to_dict()
    assert out["blocks"]["atoms"] == {"columns": {"x": col(), "q": col()}}
    assert out["blocks"]["members"] == {
        "columns": {"atom": col("u64", nullable=True), "v": col(precision=0.001)},
        "structural_shape": [2, 1],
        "targets": {"atom": "/system/atoms"},
    }
    assert out["blocks"]["atom_types"] == {
        "columns": {"type": col("string")},
        "aligned_with": "atoms",
    }
    assert out["meta"] == {"pe": {"dtype": "f64"}, "n": {"dtype": "i32", "fill": 0}}


def test_trailing_defaults_to_one_scalar_per_row_and_is_always_written() -> None:
    spec = ColumnSpec.from_dict({"dtype": "f64"})
    assert spec.trailing == () and spec.to_dict() == {"dtype": "f64", "trailing": []}
    assert ColumnSpec(dtype="f64", trailing=(3, 3)).to_dict()["trailing"] == [3, 3]


@pytest.mark.parametrize(
    ("fill", "dtype", "written"),
    [
        ("NaN", "f64", "NaN"),
        (math.nan, "f64", "NaN"),
        ("-Infinity", "f64", "-Infinity"),
        (3, "f64", 3.0),
        ("18446744073709551615", "u64", "18446744073709551615"),
        (2**64 - 1, "u64", "18446744073709551615"),
        (None, "json", None),
        ({"a": [1]}, "json", {"a": [1]}),
        ([1, "2", 3], "u32x3", None),
        ([True, False, True], "bool3", [True, False, True]),
        ("", "string", ""),
    ],
)
def test_fills_are_typed_values_written_in_typed_form(fill: Any, dtype: str, written: Any) -> None:
    if written is None and dtype != "json":
        with pytest.raises(mrecd.InvalidRecord):
            MetaSpec.from_dict({"dtype": dtype, "fill": fill})
        return
    spec = MetaSpec.from_dict({"dtype": dtype, "fill": fill})
    assert spec.has_fill
    assert spec.to_dict() == {"dtype": dtype, "fill": written}


def test_an_f64_nan_fill_reads_back_as_nan() -> None:
    spec = MetaSpec.from_dict({"dtype": "f64", "fill": "NaN"})
    assert math.isnan(spec.fill_value)
    assert MetaSpec.from_dict(spec.to_dict()).to_dict() == {"dtype": "f64", "fill": "NaN"}


@pytest.mark.parametrize(
    ("fill", "dtype", "rule"),
    [
        (None, "f64", "null is not NaN"),
        (None, "i64", "not rounded"),
        (None, "string", "not a string"),
        (2**31, "i32", "outside the range"),
        (-1, "u32", "outside the range"),
        (1.5, "i64", "not rounded"),
        (True, "f64", "not a real"),
        ([1.0, 2.0], "f64x3", "exactly 3"),
        ("abc", "f64", "typed JSON"),
    ],
)
def test_fills_not_of_their_tag_are_refused(fill: Any, dtype: str, rule: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=rule):
        MetaSpec.from_dict({"dtype": dtype, "fill": fill})
    with pytest.raises(mrecd.InvalidRecord, match=rule):
        MetaSpec(dtype=dtype, fill=fill)
    refused({"blocks": {}, "meta": {"k": {"dtype": dtype, "fill": fill}}}, rule)


def test_absent_fill_is_no_fill() -> None:
    spec = MetaSpec.from_dict({"dtype": "f64"})
    assert not spec.has_fill and spec.to_dict() == {"dtype": "f64"}


# -- declaration-time refusals ----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(RESERVED_BLOCK_NAMES))
def test_reserved_block_names_are_refused(name: str) -> None:
    assert {"step", "time", "meta", "box"} == RESERVED_BLOCK_NAMES
    error = refused({"blocks": {name: {"columns": {}}}}, "reserved")
    assert error.path == f"sequence_schema.blocks.{name}"


@pytest.mark.parametrize("name", sorted(RESERVED_COLUMN_NAMES))
def test_reserved_column_names_are_refused(name: str) -> None:
    assert {"offset", "step_index", "_validity"} == RESERVED_COLUMN_NAMES
    error = refused({"blocks": {"atoms": {"columns": {name: col("u64")}}}}, "reserved")
    assert error.path is not None and error.path.endswith(f"columns.{name}")


@pytest.mark.parametrize("dtype", ["float", "int", "f32", "json", "bytes", "", 5, None])
def test_dtypes_outside_the_set_are_refused(dtype: Any) -> None:
    refused({"blocks": {"atoms": {"columns": {"v": {"dtype": dtype}}}}}, "dtype|string")


@pytest.mark.parametrize("dtype", ["u64", "i64", "i32", "c128", "bool", "string"])
def test_precision_is_refused_off_f64(dtype: str) -> None:
    refused({"blocks": {"a": {"columns": {"v": col(dtype, precision=0.001)}}}}, "only on f64")


@pytest.mark.parametrize("p", [0, -1.0, 2.0**1001, "0.001", True])
def test_precision_must_be_a_legal_number(p: Any) -> None:
    refused({"blocks": {"a": {"columns": {"v": col(precision=p)}}}}, "precision|number")


@pytest.mark.parametrize(
    ("column", "rule"),
    [
        ({"dtype": "f64", "nullable": "yes"}, "boolean"),
        ({"dtype": "f64", "nullable": 1}, "boolean"),
        ({"dtype": "f64", "trailing": ["3"]}, "integer"),
        ({"dtype": "f64", "trailing": [True]}, "integer"),
        ({"dtype": "f64", "trailing": [-1]}, "non-negative"),
        ({"dtype": "f64", "trailing": 3}, "tuple|list|valid"),
        ({"dtype": "f64", "unit": "A"}, "Extra inputs"),
    ],
)
def test_column_entries_are_strict_json(column: dict[str, Any], rule: str) -> None:
    refused({"blocks": {"a": {"columns": {"v": column}}}}, rule)


@pytest.mark.parametrize(
    ("key", "dtype"), [("x", "i64"), ("id", "i64"), ("id", "u32"), ("ix", "i64")]
)
def test_canonical_keys_are_declared_at_their_dtype(key: str, dtype: str) -> None:
    refused({"blocks": {"atoms": {"columns": {key: col(dtype)}}}}, "canonical")


def test_a_canonical_key_with_trailing_axes_is_refused() -> None:
    refused(
        {"blocks": {"atoms": {"columns": {"x": {"dtype": "f64", "trailing": [1]}}}}}, "canonical"
    )


@pytest.mark.parametrize("key", ["pe", "ke", "etotal", "temp", "press", "volume"])
def test_canonical_per_step_keys_are_f64(key: str) -> None:
    refused({"blocks": {}, "meta": {key: {"dtype": "i64"}}}, "canonical")
    assert declare({}, {key: {"dtype": "f64"}}).meta[key].dtype == "f64"


@pytest.mark.parametrize("tag", ["f32", "i64x6", "c128", "u8"])
def test_per_step_tags_are_the_sixteen(tag: str) -> None:
    refused({"blocks": {}, "meta": {"k": {"dtype": tag}}}, "sixteen")


@pytest.mark.parametrize(
    ("targets", "rule"),
    [
        ({"atom": "/trajectory/atoms"}, "trajectory"),
        ({"atom": "/frame/atoms/x"}, "target"),
        ({"atom": "nowhere"}, "not a declared block"),
        ({"nope": "atoms"}, "not a declared column"),
        ({"v": "atoms"}, "u64"),
        ({"atom": 3}, "string"),
    ],
)
def test_bad_targets_are_refused(targets: dict[str, Any], rule: str) -> None:
    blocks = {
        "atoms": {"columns": {"x": col()}},
        "members": {"columns": {"atom": col("u64"), "v": col("i64")}, "targets": targets},
    }
    refused({"blocks": blocks}, rule)


def test_targets_into_other_sections_and_declared_blocks_are_legal() -> None:
    blocks = {
        "atoms": {"columns": {"x": col()}},
        "members": {
            "columns": {"atom": col("u64"), "ibead": col("u64")},
            "targets": {"atom": "/system/atoms", "ibead": "atoms"},
        },
    }
    assert declare(blocks).blocks["members"].targets == {"atom": "/system/atoms", "ibead": "atoms"}


ALIGN_BASE = {
    "atoms": {"columns": {"x": col()}},
    "atom_types": {"columns": {"type": col("string")}, "aligned_with": "atoms"},
}


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        (
            {"atom_types": {"columns": {"type": col("string")}, "aligned_with": "nope"}},
            "not a declared",
        ),
        (
            {"atom_types": {"columns": {"type": col("string")}, "aligned_with": "atom_types"}},
            "itself",
        ),
        ({"atom_types": {"columns": {"type": col("string")}, "aligned_with": ["atoms"]}}, "string"),
        ({"atom_types": {"columns": {"x": col()}, "aligned_with": "atoms"}}, "shares no column"),
        (
            {
                "atom_types": {
                    "columns": {"type": col("string")},
                    "aligned_with": "atoms",
                    "structural_shape": [3],
                }
            },
            "no structural_shape",
        ),
        ({"charges": {"columns": {"charge": col()}, "aligned_with": "atom_types"}}, "no chains"),
    ],
)
def test_aligned_with_rules_are_checked_at_declaration(change: dict[str, Any], rule: str) -> None:
    blocks = copy.deepcopy(ALIGN_BASE)
    blocks.update(change)
    refused({"blocks": blocks}, rule)


def test_a_valid_alignment_is_kept() -> None:
    declaration = declare(copy.deepcopy(ALIGN_BASE))
    assert declaration.blocks["atom_types"].aligned_with == "atoms"


@pytest.mark.parametrize(
    "data",
    [
        [],
        "x",
        {"blocks": [], "meta": {}},
        {"blocks": {}, "meta": []},
        {"blocks": {}, "extra": 1},
        {"blocks": {"a": []}},
        {"blocks": {"a": {"columns": {"v": "f64"}}}},
    ],
    ids=repr,
)
def test_malformed_declarations_are_refused(data: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        Declaration.from_dict(data)


def test_constructors_raise_invalid_record_too() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="not a column dtype"):
        ColumnSpec(dtype="float")
    with pytest.raises(mrecd.InvalidRecord, match="reserved"):
        BlockSpec(columns={"offset": {"dtype": "u64"}})
    with pytest.raises(mrecd.InvalidRecord, match="reserved"):
        Declaration(blocks={"box": {"columns": {}}})


def test_an_error_names_the_field() -> None:
    error = refused({"blocks": {"atoms": {"columns": {"x": {"dtype": "float"}}}}}, "float")
    assert error.path is not None and "blocks.atoms.columns.x" in error.path


# -- deriving a declaration from frames -------------------------------------------------------


def test_from_frames_takes_the_union_nullability_and_first_precision() -> None:
    f0 = Frame(
        {"atoms": {"x": Column(np.zeros(2), precision=0.5), "q": np.zeros(2)}}, meta={"pe": 1.0}
    )
    f1 = Frame(
        {
            "atoms": {"x": np.zeros(3), "q": Column(np.zeros(3), validity=[True, False, True])},
            "bonds": Block(count=0),
        },
        meta={"n": 1},
    )
    declaration = Declaration.from_frames([f0, f1])
    assert declaration.to_dict() == {
        "blocks": {
            "atoms": {"columns": {"x": col(precision=0.5), "q": col(nullable=True)}},
            "bonds": {"columns": {}},
        },
        "meta": {"pe": {"dtype": "f64"}, "n": {"dtype": "i64"}},
    }


def test_from_frames_refuses_disagreeing_frames() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="disagree on column"):
        Declaration.from_frames(
            [Frame({"a": {"v": np.zeros(2)}}), Frame({"a": {"v": np.zeros((2, 3))}})]
        )
    with pytest.raises(mrecd.InvalidRecord, match="disagree on the tag"):
        Declaration.from_frames([Frame(meta={"k": 1}), Frame(meta={"k": 1.0})])
    with pytest.raises(mrecd.InvalidRecord, match="reserved"):
        Declaration.from_frames([Frame({"step": {"v": np.zeros(1)}})])


# -- conform ----------------------------------------------------------------------------------


PINNED = declare(
    {
        "atoms": {
            "columns": {"x": col(precision=0.001), "q": col(nullable=True), "id": col("u64")}
        },
        "grid": {"columns": {"rho": col()}, "structural_shape": [2, 2]},
        "members": {"columns": {"atom": col("u64")}, "targets": {"atom": "atoms"}},
    },
    {
        "pe": {"dtype": "f64"},
        "ok": {"dtype": "bool", "fill": True},
        "note": {"dtype": "json", "fill": None},
    },
)


def atoms(n: int = 2, **override: Any) -> dict[str, Any]:
    return {
        "x": np.linspace(0, 1, n) + 1e-5,
        "q": np.zeros(n),
        "id": np.arange(n, dtype=np.uint64),
        **override,
    }


def test_conform_rounds_precision_fills_meta_and_coerces_tags() -> None:
    out = PINNED.conform(Frame({"atoms": atoms()}, meta={"pe": 3}, step=5, time=0.5))
    x = out["atoms"]["x"]
    assert x.precision is None  # the declaration is the one home of the precision
    assert x.values.tobytes() == quantize(np.linspace(0, 1, 2) + 1e-5, 0.001).tobytes()
    assert out.meta == {"pe": 3.0, "ok": True, "note": None}
    assert out.meta_types == {"pe": "f64", "ok": "bool", "note": "json"}
    assert (out.step, out.time) == (5, 0.5)


def test_conform_accepts_a_column_already_at_the_declared_precision() -> None:
    x = Column(np.array([0.1, 0.2]), precision=0.001)
    out = PINNED.conform(Frame({"atoms": atoms(x=x)}, meta={"pe": 1.0}))
    assert out["atoms"]["x"].values.tobytes() == x.values.tobytes()
    with pytest.raises(mrecd.InvalidRecord, match="differs from the declared"):
        PINNED.conform(
            Frame({"atoms": atoms(x=Column(np.zeros(2), precision=0.5))}, meta={"pe": 1.0})
        )


@pytest.mark.parametrize(
    ("frame", "rule"),
    [
        (Frame({"bonds": {"atomi": [0]}}, meta={"pe": 1.0}), "block 'bonds' is not declared"),
        (Frame({"atoms": atoms(extra=np.zeros(2))}, meta={"pe": 1.0}), "not declared for block"),
        (
            Frame({"atoms": {"x": np.zeros(2), "q": np.zeros(2)}}, meta={"pe": 1.0}),
            "lacks \\['id'\\]",
        ),
        (Frame({"atoms": atoms()}, meta={"pe": 1.0, "ke": 2.0}), "meta key 'ke' is not declared"),
        (Frame({"atoms": atoms()}), "omits declared meta key 'pe'"),
        (Frame({"atoms": atoms()}, meta={"pe": "high"}), "not a real"),
        (Frame({"atoms": atoms()}, meta={"pe": 1.0, "ok": 1}), "not a boolean"),
        (
            Frame(
                {"atoms": atoms(id=Column(np.zeros(2, dtype=np.uint64), validity=[True, False]))},
                meta={"pe": 1.0},
            ),
            "not declared nullable",
        ),
        (Frame({"atoms": atoms(q=np.zeros((2, 3)))}, meta={"pe": 1.0}), "trailing shape"),
        (Frame({"atoms": atoms(q=np.zeros(2, dtype=np.int64))}, meta={"pe": 1.0}), None),
        (Frame({"grid": {"rho": np.zeros(5)}}, meta={"pe": 1.0}), "holds 4 rows, not 5"),
        (
            Frame({"grid": Block({"rho": np.zeros(4)}, structural_shape=[4, 1])}, meta={"pe": 1.0}),
            "structural_shape",
        ),
        (
            Frame(
                {
                    "members": Block(
                        {"atom": np.zeros(1, dtype=np.uint64)}, targets={"atom": "/frame/atoms"}
                    )
                },
                meta={"pe": 1.0},
            ),
            "targets",
        ),
    ],
)
def test_conform_refuses_what_the_declaration_does_not_allow(
    frame: Frame, rule: str | None
) -> None:
    if rule is None:  # an exact conversion (i64 zeros to f64) is made, not refused
        assert PINNED.conform(frame)["atoms"]["q"].dtype == "f64"
        return
    with pytest.raises(mrecd.InvalidRecord, match=rule):
        PINNED.conform(frame)


def test_conform_keeps_a_mask_on_a_nullable_column_and_grid_rows() -> None:
    q = Column(np.array([1.0, 2.0]), validity=[False, True])
    out = PINNED.conform(
        Frame({"atoms": atoms(q=q), "grid": {"rho": np.zeros(4)}}, meta={"pe": 1.0})
    )
    assert out["atoms"]["q"].validity is not None
    assert out["grid"].structural_shape == (2, 2)


def test_conform_refuses_a_value_out_of_range_for_the_declared_tag() -> None:
    declaration = declare({}, {"n": {"dtype": "i32"}})
    with pytest.raises(mrecd.InvalidRecord, match="outside the range"):
        declaration.conform(Frame(meta={"n": 2**31}))
    with pytest.raises(mrecd.InvalidRecord, match="outside the range"):
        declare({}, {"n": {"dtype": "u32"}}).conform(Frame(meta={"n": -1}))
    with pytest.raises(mrecd.InvalidRecord, match="not a real"):
        declare({}, {"e": {"dtype": "f64"}}).conform(Frame(meta={"e": True}))
    with pytest.raises(mrecd.InvalidRecord, match="exactly 3"):
        declare({}, {"v": {"dtype": "f64x3"}}).conform(Frame(meta={"v": [1, 2]}))
    assert declare({}, {"e": {"dtype": "f64"}}).conform(Frame(meta={"e": 3})).meta == {"e": 3.0}


def test_a_nan_fill_is_materialized() -> None:
    out = declare({}, {"pe": {"dtype": "f64", "fill": "NaN"}}).conform(Frame())
    assert math.isnan(out.meta["pe"])
