"""Lookups (forcefield.md §13 (a), (b), (d)) on the fixtures and on hand-built force fields."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from ff_helpers import FIXTURES, atoms, fixture, section, table

from mrecd.errors import InvalidRecord, NotFound
from mrecd.forcefield import AtomLookup, ForceField, MatchLookup, TermLookup

REAL = {
    "preset": "real",
    "length": "angstrom",
    "energy": "kcal/mol",
    "angle": "degree",
    "charge": "e",
    "mass": "dalton",
    "time": "fs",
}


@pytest.fixture(scope="module")
def charmm() -> ForceField:
    return ForceField.from_dict(fixture("valid-charmm"))


@pytest.fixture(scope="module")
def tip3p() -> ForceField:
    return ForceField.from_dict(fixture("valid-tip3p"))


def _json(result: Any) -> Any:
    """The result as the HTTP routes would serve it (strict JSON, parsed back)."""
    return json.loads(json.dumps(result.to_dict(), allow_nan=False))


# -- (a) atom types ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "mass", "charge", "element"),
    [("OW", 15.999, -0.834, "O"), ("HW", 1.008, 0.417, "H")],
)
def test_tip3p_atom_types(
    tip3p: ForceField, name: str, mass: float, charge: float, element: str
) -> None:
    found = tip3p.atom(name)
    assert isinstance(found, AtomLookup)
    (row,) = found.rows
    assert (row.style, row.table, row.name) == ("full", "atom.full", name)
    assert row.params == {"charge": charge, "mass": mass}
    assert row.annotations == {"element": element}
    assert found.units == REAL


def test_names_are_exact_strings(tip3p: ForceField) -> None:
    for name in ("ow", "OW ", " OW", ""):
        with pytest.raises(NotFound, match=r"atom type .* not found; searched atom\.full"):
            tip3p.atom(name)


def test_an_absent_column_stays_absent_not_zero(charmm: ForceField) -> None:
    (row,) = charmm.atom("HA").rows
    assert row.params == {"mass": 1.008}
    assert "charge" not in _json(charmm.atom("HA"))["rows"][0]["params"]


def test_every_atom_table_answers_in_style_order() -> None:
    data = section(
        ["atom.full", "atom.extra"],
        {"atom.full": atoms("A", "B", mass=[1.0, 2.0]), "atom.extra": atoms("B", polar=[0.5])},
    )
    found = ForceField.from_dict(data).atom("B")
    assert [(r.style, r.params) for r in found.rows] == [
        ("full", {"mass": 2.0}),
        ("extra", {"polar": 0.5}),
    ]
    assert not found.rows[1].registered and not found.rows[1].priceable


def _openff() -> ForceField:
    smirks = {"endpoint_key": "smirks"}
    data = section(
        [
            ("bond", "harmonic", smirks),
            ("pair", "lj/cut", {**smirks, "params": {"mixing": "arithmetic", "cutoff": 9.0}}),
        ],
        {
            "bond.harmonic": table(name=["b1"], smirks=["[#6:1]-[#6:2]"], k=[300.0], r0=[1.5]),
            "pair.lj%2Fcut": table(
                name=["n16", "n20"],
                smirks=["[#1:1]-[#6X4]", "[#8:1]"],
                epsilon=[0.0157, 0.21],
                sigma=[2.6, 3.0],
            ),
        },
        special_bonds={"lj": [0, 0, 0.5], "coul": [0, 0, 0.8333333333]},
        aromaticity_model="OEAroModel_MDL",
    )
    return ForceField.from_dict(data)


def test_a_smirks_keyed_force_field_finds_atoms_in_its_pair_table() -> None:
    found = _openff().atom("n16")
    assert found.via == "pair"
    (row,) = found.rows
    assert (row.table, row.name, row.endpoints) == ("pair.lj%2Fcut", "n16", ())
    assert row.params == {"epsilon": 0.0157, "sigma": 2.6}
    assert row.annotations == {"smirks": "[#1:1]-[#6X4]"}


def test_a_smirks_keyed_pair_table_prices_self_rows_by_name_and_mixes_others() -> None:
    ff = _openff()
    like = ff.pair("n16", "n16").terms[0]
    assert (like.outcome, like.row, like.cross) == ("found", 0, False)
    unlike = ff.pair("n16", "n20").terms[0]
    assert unlike.row is None
    assert unlike.value("sigma") == 0.5 * (2.6 + 3.0)
    assert unlike.values["sigma"].source == "mixed"


# -- (b) relation rows by name -------------------------------------------------------------


@pytest.mark.parametrize(
    ("category", "name", "params"),
    [
        ("angle", "HA-CT1-HA", {"k": 35.5, "theta0": 108.4, "k_ub": 5.4, "r_ub": 1.802}),
        ("angle", "NH1-CT1-HA", {"k": 48.0, "theta0": 108.0, "k_ub": None, "r_ub": None}),
        ("dihedral", "X-CT1-NH1-X", {"k": 0.0, "periodicity": 1.0, "phase": 0.0, "w": 1.0}),
        ("dihedral", "HA-CT1-CT1-HA", {"k": 0.2, "periodicity": 3.0, "phase": 180.0, "w": 0.5}),
    ],
)
def test_charmm_relation_rows(
    charmm: ForceField, category: str, name: str, params: dict[str, Any]
) -> None:
    found = charmm.term(category, name)
    assert isinstance(found, TermLookup)
    (row,) = found.rows
    assert row.style == "charmm" and row.name == name
    assert row.params == params
    assert _json(found)["rows"][0]["params"] == params


def test_a_row_is_found_by_name_although_its_endpoints_are_wildcards(charmm: ForceField) -> None:
    assert charmm.term("dihedral", "X-CT1-NH1-X").rows[0].endpoints == ("", "CT1", "NH1", "")


def test_a_style_with_no_entry_is_unresolved(charmm: ForceField) -> None:
    with pytest.raises(
        NotFound, match=r"style \(angle, harmonic\) not found; searched angle\.charmm"
    ):
        charmm.term("angle", "HA-CT1-HA", "harmonic")


def test_an_unknown_name_lists_the_tables_searched(charmm: ForceField) -> None:
    with pytest.raises(NotFound, match=r"angle type 'nope' not found; searched angle\.charmm"):
        charmm.term("angle", "nope")
    with pytest.raises(NotFound, match="none of that category"):
        charmm.term("bond", "CT1-HA")


def test_tip3p_bond(tip3p: ForceField) -> None:
    (row,) = tip3p.term("bond", "OW-HW").rows
    assert row.params == {"k": 1059.162, "r0": 0.9572}
    assert row.endpoints == ("OW", "HW")


def test_pair_rows_are_never_looked_up_by_name(charmm: ForceField) -> None:
    with pytest.raises(InvalidRecord, match="never linked by name"):
        charmm.term("pair", "CT1")


def _hybrid() -> ForceField:
    return ForceField.from_dict(
        section(
            ["bond.harmonic", "bond.morse", "bond.mmff"],
            {
                "bond.harmonic": table(name=["b1"], itom=["A"], jtom=["B"], k=[1.0], r0=[1.5]),
                "bond.morse": table(
                    name=["b1"], itom=["A"], jtom=["B"], d0=[2.0], alpha=[1.1], r0=[1.5]
                ),
                "bond.mmff": table(name=[], itom=[], jtom=[]),
            },
        )
    )


def test_hybrid_styles_all_apply_without_a_style() -> None:
    found = _hybrid().term("bond", "b1")
    assert [r.style for r in found.rows] == ["harmonic", "morse"]
    assert found.style is None


def test_a_style_picks_one_table() -> None:
    (row,) = _hybrid().term("bond", "b1", "morse").rows
    assert row.params == {"d0": 2.0, "alpha": 1.1, "r0": 1.5}


@pytest.mark.parametrize(("cell", "expected"), [(2.0, 2.0), (None, 1.0)])
def test_per_instance_cells_override_the_table(cell: float | None, expected: float) -> None:
    (row,) = _hybrid().term("bond", "b1", "harmonic", cells={"k": cell}).rows
    assert row.params["k"] == expected
    assert row.params["r0"] == 1.5
    assert row.overridden == (() if cell is None else ("k",))


def test_a_zero_row_style_takes_every_parameter_from_the_cells() -> None:
    (row,) = _hybrid().term("bond", "b7", "mmff", cells={"kb": 4.2, "r0": 1.1, "x": None}).rows
    assert row.row is None and row.name == "b7"
    assert row.params == {"kb": 4.2, "r0": 1.1}
    with pytest.raises(NotFound):
        _hybrid().term("bond", "b7", "mmff")


@pytest.mark.parametrize("cells", [{"k": float("nan")}, {"k": True}, [1.0]])
def test_bad_cells_are_refused(cells: Any) -> None:
    with pytest.raises(InvalidRecord):
        _hybrid().term("bond", "b1", "harmonic", cells=cells)


def test_cmap_rows_of_the_cmaps_fixture_link_by_type_and_style() -> None:
    ff = ForceField.from_dict(fixture("valid-cmap-grid"))
    frame = json.loads((FIXTURES / "frame" / "valid-cmaps.json").read_text())
    cmaps = frame["blocks"]["cmaps"]["columns"]
    answers = []
    for type_name, style in zip(cmaps["type"]["values"], cmaps["style"]["values"], strict=True):
        try:
            answers.append(ff.term("cmap", type_name, style).rows[0].params["grid"][1][2])
        except NotFound:
            answers.append(None)
    assert answers == [-1.5, None]  # cmap1 is unresolved: a validator's warning, not an error


# -- (d) typing match ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("types", "row", "direction", "wildcards"),
    [
        (("HA", "CT1", "CT1", "HA"), 1, "forward", 0),
        (("HA", "CT1", "NH1", "HN"), 0, "forward", 2),
        (("HN", "NH1", "CT1", "HA"), 0, "reversed", 2),
    ],
)
def test_charmm_dihedral_matches(
    charmm: ForceField, types: tuple[str, ...], row: int, direction: str, wildcards: int
) -> None:
    found = charmm.match("dihedral", types)
    assert isinstance(found, MatchLookup)
    (match,) = found.matches
    assert (match.row.row, match.direction, match.wildcards) == (row, direction, wildcards)
    assert found.searched == ("dihedral.charmm",)


def test_no_match_is_unresolved(charmm: ForceField) -> None:
    with pytest.raises(NotFound, match=r"searched dihedral\.charmm"):
        charmm.match("dihedral", ("CT1", "CT1", "CT1", "CT1"))


def _dihedrals(*rows: tuple[str, str, str, str], category: str = "dihedral") -> ForceField:
    block = f"{category}.charmm"
    return ForceField.from_dict(
        section(
            [block],
            {
                block: table(
                    name=[f"r{i}" for i in range(len(rows))],
                    itom=[r[0] for r in rows],
                    jtom=[r[1] for r in rows],
                    ktom=[r[2] for r in rows],
                    ltom=[r[3] for r in rows],
                )
            },
        )
    )


def test_fewer_wildcards_beat_table_order() -> None:
    ff = _dihedrals(("", "CT1", "NH1", ""), ("HA", "CT1", "CT1", "HA"), ("HA", "CT1", "NH1", ""))
    (match,) = ff.match("dihedral", ("HA", "CT1", "NH1", "HN")).matches
    assert (match.row.row, match.wildcards) == (2, 1)


def test_a_tie_goes_to_the_earliest_row() -> None:
    ff = _dihedrals(("", "CT1", "NH1", "HN"), ("HA", "CT1", "NH1", ""))
    (match,) = ff.match("dihedral", ("HA", "CT1", "NH1", "HN")).matches
    assert (match.row.row, match.wildcards) == (0, 1)


def test_a_tie_across_directions_goes_to_the_earliest_row() -> None:
    ff = _dihedrals(("D", "C", "B", ""), ("A", "B", "C", ""))
    (match,) = ff.match("dihedral", ("A", "B", "C", "D")).matches
    assert (match.row.row, match.direction) == (0, "reversed")


def test_an_angle_matches_through_reversal(charmm: ForceField) -> None:
    (match,) = charmm.match("angle", ("HA", "CT1", "NH1")).matches
    assert match.row.name == "NH1-CT1-HA"
    assert match.direction == "reversed"
    assert match.keys == ("NH1", "CT1", "HA")


def test_impropers_match_in_order_only() -> None:
    improper = _dihedrals(("C1", "C2", "C3", "C4"), category="improper")
    with pytest.raises(NotFound):
        improper.match("improper", ("C4", "C3", "C2", "C1"))
    assert improper.match("improper", ("C1", "C2", "C3", "C4")).matches[0].direction == "forward"
    dihedral = _dihedrals(("C1", "C2", "C3", "C4"))
    assert dihedral.match("dihedral", ("C4", "C3", "C2", "C1")).matches[0].direction == "reversed"


def test_class_keyed_tables_match_through_the_atom_class() -> None:
    data = section(
        ["atom.full", {"category": "bond", "style": "harmonic", "endpoint_key": "class"}],
        {
            "atom.full": atoms("CT_1", "CT_2", "HC", "X", **{"class": ["CT", "CT", "HC", None]}),
            "bond.harmonic": table(
                name=["CT-HC", "CT-CT"], itom=["CT", "CT"], jtom=["HC", "CT"], k=[340.0, 310.0]
            ),
        },
    )
    ff = ForceField.from_dict(data)
    (match,) = ff.match("bond", ["HC", "CT_2"]).matches
    assert (match.row.name, match.direction, match.keys) == ("CT-HC", "reversed", ("CT", "HC"))
    assert ff.match("bond", ["CT_1", "CT_2"]).matches[0].row.params == {"k": 310.0}
    with pytest.raises(NotFound):
        ff.match("bond", ["X", "CT_1"])  # X has no class: unresolved
    with pytest.raises(NotFound):
        ff.match("bond", ["CT", "HC"])  # classes are not types


def test_each_table_of_a_category_answers_separately() -> None:
    data = section(
        ["bond.harmonic", "bond.morse"],
        {
            "bond.harmonic": table(name=["h"], itom=["A"], jtom=[""]),
            "bond.morse": table(name=["m1", "m2"], itom=["X", "A"], jtom=["Y", "B"]),
        },
    )
    found = ForceField.from_dict(data).match("bond", ["A", "B"])
    assert [(m.row.table, m.row.name, m.wildcards) for m in found.matches] == [
        ("bond.harmonic", "h", 1),
        ("bond.morse", "m2", 0),
    ]
    assert ForceField.from_dict(data).match("bond", ["A", "B"], "morse").searched == ("bond.morse",)


def test_match_refuses_bad_input(charmm: ForceField) -> None:
    with pytest.raises(InvalidRecord, match="arity"):
        charmm.match("dihedral", ("HA", "CT1"))
    with pytest.raises(InvalidRecord):
        charmm.match("dihedral", "HA-CT1-CT1-HA")
    with pytest.raises(NotFound):
        charmm.match("bond", ("HA", "CT1"))
    with pytest.raises(NotFound):
        charmm.match("atom", ("HA",))


def test_smirks_keyed_tables_are_not_typed_by_endpoints() -> None:
    with pytest.raises(NotFound):
        _openff().match("bond", ["A", "B"])


# -- results are plain JSON ----------------------------------------------------------------


def test_every_result_serializes_as_strict_json(charmm: ForceField) -> None:
    results = [
        charmm.atom("CT1"),
        charmm.term("angle", "HA-CT1-HA"),
        charmm.pair("CT1", "HA"),
        charmm.pair("NH1", "CT1", is_14=True, override={"epsilon": 0.1, "coul_scale": 0.5}),
        charmm.match("dihedral", ["HA", "CT1", "NH1", "HN"]),
        ForceField.from_dict(fixture("valid-cmap-grid")).term("cmap", "cmap0"),
    ]
    for result in results:
        assert _json(result) == result.to_dict()
    grid = results[-1].to_dict()["rows"][0]["params"]["grid"]
    assert grid == [[0.0, -0.25, 0.5], [1.25, 0.75, -1.5], [0.125, 2.0, -0.375]]


def test_results_are_immutable_and_do_not_leak_the_index(charmm: ForceField) -> None:
    found = charmm.term("angle", "HA-CT1-HA")
    with pytest.raises(AttributeError):
        found.type = "x"  # type: ignore[misc]
    as_dict = found.to_dict()
    as_dict["rows"][0]["params"]["k"] = -1.0
    as_dict["rows"][0]["style_params"]["x"] = 1
    again = charmm.term("angle", "HA-CT1-HA").rows[0]
    assert again.params["k"] == 35.5 and again.style_params == {}


@pytest.mark.parametrize("bad", [None, 3, b"OW"])
def test_non_string_names_are_refused(tip3p: ForceField, bad: Any) -> None:
    with pytest.raises(InvalidRecord):
        tip3p.atom(bad)
    with pytest.raises(InvalidRecord):
        tip3p.term("bond", bad)


def test_a_force_field_and_its_answers_pickle_and_copy(charmm: ForceField) -> None:
    charmm.atom("HA")  # the index exists and travels (or is rebuilt) with the object
    for clone in (pickle.loads(pickle.dumps(charmm)), copy.deepcopy(charmm)):
        assert clone == charmm
        assert clone.pair("CT1", "HA").to_dict() == charmm.pair("CT1", "HA").to_dict()
    answer = charmm.pair("NH1", "CT1")
    assert pickle.loads(pickle.dumps(answer)) == answer


def test_shared_mappings_are_read_only(charmm: ForceField) -> None:
    term = charmm.pair("CT1", "HA").terms[0]
    with pytest.raises(TypeError):
        term.style_params["cutoff"] = 1.0  # type: ignore[index]
    with pytest.raises(TypeError):
        charmm.styles[3].params["mixing"] = "geometric"  # type: ignore[index]
    with pytest.raises(TypeError):
        term.style_params.update({"x": 1})  # type: ignore[attr-defined]
    assert dict(term.style_params) == {"cutoff": 12.0, "mixing": "arithmetic"}
    assert json.loads(json.dumps(term.style_params)) == {"cutoff": 12.0, "mixing": "arithmetic"}
