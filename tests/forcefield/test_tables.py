"""Style tables (forcefield.md §3–§7): every column rule, each with its refusal."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from ff_helpers import atoms, col, fixture, section, table

from mrecd.errors import InvalidRecord
from mrecd.forcefield import ForceField

NAN = float("nan")


def _refused(data: dict[str, Any], *fragments: str) -> None:
    with pytest.raises(InvalidRecord) as info:
        ForceField.from_dict(data)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def _bond(**columns: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": ["b1"], "itom": ["A"], "jtom": ["B"]}
    base.update(columns)
    return section(
        ["bond.harmonic"],
        {"bond.harmonic": table(**{k: v for k, v in base.items() if v is not ...})},
    )


# -- name (§3.3) ---------------------------------------------------------------------------


def test_a_table_without_name_is_refused() -> None:
    _refused(_bond(name=...), "forcefield/bond.harmonic", "F13")


def test_a_null_name_is_refused() -> None:
    data = section(["atom.full"], {"atom.full": table(name=["OW", None])})
    _refused(data, "forcefield/atom.full/name", "F13", "row 1")


def test_a_duplicate_name_is_refused() -> None:
    data = section(["atom.full"], {"atom.full": table(name=["OW", "HW", "OW"])})
    _refused(data, "forcefield/atom.full/name", "'OW'", "F13")


def test_a_non_string_name_is_refused() -> None:
    _refused(_bond(name=col([1.0])), "forcefield/bond.harmonic", "name")


def test_names_are_never_parsed() -> None:
    ff = ForceField.from_dict(_bond(name=["A-B-not-the-endpoints"], k=[1.0]))
    assert ff.term("bond", "A-B-not-the-endpoints").rows[0].endpoints == ("A", "B")


# -- endpoints (§3.4, §4, §5) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("style", "columns"),
    [
        ("bond.harmonic", {"itom": ["A"], "jtom": ["B"], "ktom": ["C"]}),
        ("bond.harmonic", {"itom": ["A"]}),
        ("angle.harmonic", {"itom": ["A"], "ktom": ["C"]}),
        ("atom.full", {"itom": ["A"]}),
        ("cmap.charmm", {"itom": ["A"], "jtom": ["B"], "ktom": ["C"], "ltom": ["D"]}),
        ("dihedral.periodic", {"jtom": ["A"], "itom": ["B"], "ktom": ["C"]}),
        ("urey_bradley.harmonic", {"itom": ["A"], "ktom": ["C"]}),
        ("custom.x", {"jtom": ["A"]}),
    ],
)
def test_wrong_endpoint_columns_are_refused(style: str, columns: dict[str, Any]) -> None:
    data = section([style], {style: table(name=["t"], **columns)})
    _refused(data, f"forcefield/{style}", "F14")


@pytest.mark.parametrize(
    ("column", "fragment"),
    [(["A", None], "never null"), (col([1.0, 2.0]), "must be string")],
)
def test_endpoint_cells_are_non_null_strings(column: Any, fragment: str) -> None:
    data = section(
        ["bond.harmonic"],
        {"bond.harmonic": table(name=["b1", "b2"], itom=["A", "A"], jtom=column)},
    )
    _refused(data, "forcefield/bond.harmonic/jtom", fragment, "F14")


def test_an_unknown_category_takes_its_arity_from_its_endpoints() -> None:
    data = section(
        [("urey_bradley", "harmonic", {"expression": "k_ub*(distance(p1,p3)-r_ub)^2"})],
        {
            "urey_bradley.harmonic": table(
                name=["u"], itom=["A"], jtom=["B"], ktom=["C"], k_ub=[1.0], r_ub=[2.0]
            )
        },
    )
    ff = ForceField.from_dict(data)
    assert ff.term("urey_bradley", "u").rows[0].endpoints == ("A", "B", "C")
    assert ff.match("urey_bradley", ["C", "B", "A"]).matches[0].direction == "reversed"


def test_wildcard_endpoints_are_legal_and_survive() -> None:
    data = section(
        ["dihedral.charmm"],
        {"dihedral.charmm": table(name=["X-A-B-X"], itom=[""], jtom=["A"], ktom=["B"], ltom=[""])},
    )
    ff = ForceField.from_dict(data)
    assert ForceField.from_dict(ff.to_dict()).table("dihedral", "charmm")[
        "itom"
    ].values.tolist() == [""]


# -- smirks and class keys (§4) -------------------------------------------------------------


def _smirks(**columns: Any) -> dict[str, Any]:
    return section(
        [{"category": "bond", "style": "harmonic", "endpoint_key": "smirks"}],
        {"bond.harmonic": table(name=["b1"], **columns)},
    )


def test_a_smirks_keyed_table_loads() -> None:
    ff = ForceField.from_dict(_smirks(smirks=["[#6:1]-[#6:2]"], k=[1.0]))
    assert ff.term("bond", "b1").rows[0].annotations == {"smirks": "[#6:1]-[#6:2]"}


@pytest.mark.parametrize(
    ("columns", "rule"),
    [
        ({"smirks": ["[#6:1]-[#6:2]"], "itom": ["A"]}, "F14"),
        ({"k": [1.0]}, "F15"),
        ({"smirks": [None]}, "F15"),
    ],
)
def test_smirks_keyed_tables_have_no_endpoints_and_non_null_smirks(
    columns: dict[str, Any], rule: str
) -> None:
    _refused(_smirks(**columns), "forcefield/bond.harmonic", rule)


def test_class_key_needs_a_class_column_on_every_atom_table() -> None:
    data = section(
        ["atom.full", {"category": "bond", "style": "harmonic", "endpoint_key": "class"}],
        {
            "atom.full": atoms("A"),
            "bond.harmonic": table(name=["b"], itom=["c"], jtom=["c"]),
        },
    )
    _refused(data, "forcefield/atom.full", "F16", "class")
    data["tables"]["atom.full"] = atoms("A", **{"class": [None]})
    assert ForceField.from_dict(data).styles[1].endpoint_key == "class"


# -- annotation and parameter columns (§3.5–§3.7) ---------------------------------------------


def test_annotations_are_nullable_strings() -> None:
    data = section(
        ["atom.full"],
        {"atom.full": atoms("A", "B", element=["C", None], desc=[None, "x"], doi=["10.1/x", None])},
    )
    row = ForceField.from_dict(data).atom("B").rows[0]
    assert row.annotations == {"element": None, "desc": "x", "doi": None}
    bad = section(["atom.full"], {"atom.full": atoms("A", desc=col([1.0]))})
    _refused(bad, "forcefield/atom.full/desc", "F17")


@pytest.mark.parametrize(
    ("column", "fragment"),
    [
        (col([3], "i64"), "F17"),
        (col([3], "u64"), "F17"),
        (col([True], "bool"), "F17"),
        (col([1.0], precision=0.001), "F18"),
        (col([NAN]), "non-finite"),
        (col([float("inf")]), "non-finite"),
    ],
)
def test_bad_parameter_columns_are_refused(column: dict[str, Any], fragment: str) -> None:
    _refused(_bond(periodicity=column), "forcefield/bond.harmonic/periodicity", fragment)


def test_canonical_keys_keep_their_dtype() -> None:
    assert ForceField.from_dict(
        section(["atom.full"], {"atom.full": atoms("C", atomic_number=col([6], "u64"))})
    ).atom("C").rows[0].params == {"atomic_number": 6}
    _refused(
        section(["atom.full"], {"atom.full": atoms("C", atomic_number=col([6.0]))}), "atomic_number"
    )
    _refused(section(["atom.full"], {"atom.full": atoms("C", mass=col(["12"]))}), "mass")


def test_a_precision_on_any_column_is_refused() -> None:
    _refused(_bond(name=col(["b1"], precision=None), k=col([1.0], precision=0.001)), "F18")


def test_string_parameters_and_null_cells_are_accepted() -> None:
    data = section(
        ["atom.full"], {"atom.full": atoms("A", "B", ptype=["A", None], mass=[1.0, None])}
    )
    ff = ForceField.from_dict(data)
    assert ff.atom("A").rows[0].params == {"ptype": "A", "mass": 1.0}
    assert ff.atom("B").rows[0].params == {"ptype": None, "mass": None}


def test_a_null_row_may_hold_a_non_finite_placeholder() -> None:
    column = col([1.0, None])
    column["values"][1] = "NaN"
    data = section(
        ["bond.harmonic"],
        {"bond.harmonic": table(name=["a", "b"], itom=["A", "A"], jtom=["B", "C"], k=column)},
    )
    assert ForceField.from_dict(data).term("bond", "b").rows[0].params == {"k": None}


def test_an_array_parameter_round_trips_bit_exactly() -> None:
    values = [[[0.1, 0.2, 0.30000000000000004], [1e-300, -0.0, 5e-324]]]
    ff = ForceField.from_dict(_bond(table=col(values)))
    again = ForceField.from_dict(ff.to_dict())
    stored = again.table("bond", "harmonic")["table"].values
    assert stored.shape == (1, 2, 3)
    assert stored.tobytes() == np.array(values).tobytes()
    assert again.term("bond", "b1").rows[0].to_dict()["params"]["table"] == values[0]


@pytest.mark.parametrize(
    ("column", "fragment"),
    [
        (col([["a", "b"]]), "F19"),
        ({"dtype": "f64", "shape": [1, 0], "values": [[]]}, "F20"),
        (col([[[1.0, "NaN"], [0.0, 0.0]]]), "F21"),  # the typed spelling reaches F21
        (col([["1", "2"]], "string"), "F19"),
    ],
)
def test_bad_array_parameters_are_refused(column: dict[str, Any], fragment: str) -> None:
    _refused(_bond(table=column), "forcefield/bond.harmonic/table", fragment)


def test_a_nan_in_a_null_row_of_an_array_is_accepted() -> None:
    column = col([[[1.0, 2.0], [3.0, 4.0]], None])
    column["values"][1] = [["NaN", "NaN"], ["NaN", "NaN"]]
    data = section(
        ["bond.harmonic"],
        {"bond.harmonic": table(name=["a", "b"], itom=["A", "A"], jtom=["B", "C"], table=column)},
    )
    ff = ForceField.from_dict(data)
    assert ff.term("bond", "b").rows[0].params == {"table": None}
    assert ff.term("bond", "a").rows[0].params == {"table": ((1.0, 2.0), (3.0, 4.0))}


@pytest.mark.parametrize(
    ("style", "columns", "bad"),
    [
        ("atom.full", {}, {"mass": col([[1.0, 2.0]])}),
        ("atom.full", {}, {"element": col([["C", "H"]])}),
        ("atom.full", {}, {"name": col([["A", "B"]])}),
        ("bond.harmonic", {"jtom": ["B"]}, {"itom": col([["A", "B"]])}),
    ],
)
def test_one_value_per_row_columns_refuse_trailing_axes(
    style: str, columns: dict[str, Any], bad: dict[str, Any]
) -> None:
    data = section([style], {style: table(**{"name": ["A"], **columns, **bad})})
    (column,) = bad
    _refused(data, f"forcefield/{style}/{column}", "one value per row")


def test_a_structural_shape_is_refused() -> None:
    data = section(["atom.full"], {"atom.full": {**atoms("A", "B"), "structural_shape": [2]}})
    _refused(data, "structural shape")


# -- cmap grid (§3.8) -----------------------------------------------------------------------


def _cmap(grid: dict[str, Any]) -> dict[str, Any]:
    ends = {c: ["A"] for c in ("itom", "jtom", "ktom", "ltom", "mtom")}
    return section(["cmap.charmm"], {"cmap.charmm": table(name=["m"], **ends, grid=grid)})


def test_the_cmap_fixture_grid_is_phi_major() -> None:
    ff = ForceField.from_dict(fixture("valid-cmap-grid"))
    grid = ff.term("cmap", "cmap0").rows[0].params["grid"]
    # grid[1][2] is the energy at phi = -180 + 1*120 = -60, psi = -180 + 2*120 = +60.
    assert grid[1][2] == -1.5
    assert ff.table("cmap", "charmm")["grid"].values.reshape(-1)[1 * 3 + 2] == -1.5


@pytest.mark.parametrize(
    "grid",
    [
        col([[[0.0] * 4] * 3]),
        col([[[0.0]]]),
        col([[0.0] * 9]),
        col([[[0.0, 1.0], [NAN, 0.0]]]),
        col([[["a", "b"], ["c", "d"]]], "string"),
    ],
)
def test_bad_cmap_grids_are_refused(grid: dict[str, Any]) -> None:
    _refused(_cmap(grid), "forcefield/cmap.charmm/grid")


def test_a_grid_in_another_category_is_an_ordinary_array() -> None:
    assert ForceField.from_dict(_bond(grid=col([[0.0] * 9]))).term("bond", "b1").rows[0].params[
        "grid"
    ] == ((0.0,) * 9)


# -- style-specific rules (§7.2, §7.4) ------------------------------------------------------


@pytest.mark.parametrize(
    ("columns", "ok"),
    [
        ({"a1": [1.0]}, True),
        ({"a1": [1.0], "a2": [0.5], "a3": [None]}, True),
        ({"a1": [1.0], "a2": [1.0], "a4": [1.0]}, False),
        ({"a2": [1.0]}, False),
        ({"a0": [1.0], "a1": [1.0]}, False),
        ({"k": [1.0]}, False),
    ],
)
def test_nharmonic_coefficients_are_contiguous_from_a1(columns: dict[str, Any], ok: bool) -> None:
    ends = {c: ["A"] for c in ("itom", "jtom", "ktom", "ltom")}
    data = section(
        ["dihedral.nharmonic"], {"dihedral.nharmonic": table(name=["d"], **ends, **columns)}
    )
    if ok:
        ForceField.from_dict(data)
    else:
        _refused(data, "F25")


def test_an_empty_nharmonic_table_declares_a_per_instance_style() -> None:
    ends = {c: [] for c in ("name", "itom", "jtom", "ktom", "ltom")}
    ForceField.from_dict(section(["dihedral.nharmonic"], {"dihedral.nharmonic": table(**ends)}))


@pytest.mark.parametrize("mode", ["regular", "epsilon14"])
def test_lj_charmm_one_four_accepts_its_two_modes(mode: str) -> None:
    data = section(
        [("pair", "lj/charmm", {"params": {"one_four": mode}})],
        {"pair.lj%2Fcharmm": table(name=["A"], itom=["A"], jtom=["A"], epsilon=[0.1], sigma=[3.0])},
    )
    assert ForceField.from_dict(data).styles[0].params["one_four"] == mode


def test_one_four_is_only_constrained_on_lj_charmm() -> None:
    data = section(
        [("pair", "lj/cut", {"params": {"one_four": "both"}})],
        {"pair.lj%2Fcut": table(name=[], itom=[], jtom=[])},
    )
    ForceField.from_dict(data)


# -- pair restatements (§6 rule 3) ----------------------------------------------------------


def _pair_rows(epsilon: list[Any], sigma: list[Any], ends: list[tuple[str, str]]) -> dict[str, Any]:
    return section(
        ["pair.lj/cut"],
        {
            "pair.lj%2Fcut": table(
                name=[f"r{i}" for i in range(len(ends))],
                itom=[e[0] for e in ends],
                jtom=[e[1] for e in ends],
                epsilon=epsilon,
                sigma=sigma,
                desc=[f"row {i}" for i in range(len(ends))],
            )
        },
    )


def test_equal_restatements_in_either_order_count_as_one_row() -> None:
    ff = ForceField.from_dict(_pair_rows([0.1, 0.1], [3.0, 3.0], [("A", "B"), ("B", "A")]))
    term = ff.pair("B", "A").terms[0]
    assert term.row == 0 and term.value("epsilon") == 0.1


@pytest.mark.parametrize(
    ("epsilon", "sigma"),
    [([0.1, 0.2], [3.0, 3.0]), ([0.1, 0.1], [None, 3.0]), ([0.1, 0.1], [3.0, None])],
)
def test_differing_restatements_are_refused(epsilon: list[Any], sigma: list[Any]) -> None:
    _refused(_pair_rows(epsilon, sigma, [("A", "B"), ("B", "A")]), "F23", "pair.lj%2Fcut")


def test_self_row_restatements_are_checked_too() -> None:
    _refused(_pair_rows([0.1, 0.2], [3.0, 3.0], [("A", "A"), ("A", "A")]), "F23")


def test_null_equals_null_in_a_restatement() -> None:
    ForceField.from_dict(_pair_rows([0.1, 0.1], [None, None], [("A", "B"), ("B", "A")]))
