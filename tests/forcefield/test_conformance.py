"""The public fixtures and the chapter's conformance cases (forcefield.md §14): each valid
section loads and round-trips unchanged through the JSON interchange form and the stored
form; each invalid one is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ff_helpers import atoms, col, section, table

from conftest import SCHEMA, load_json, schema_cases
from mrecd.errors import InvalidRecord, NotFound
from mrecd.forcefield import ForceField

VALID = schema_cases("core/forcefield", "valid")
INVALID = schema_cases("core/forcefield", "invalid")


def _round_trip(ff: ForceField) -> ForceField:
    text = json.dumps(ff.to_dict(), allow_nan=False)
    via_json = ForceField.from_dict(json.loads(text))
    document, tables = ff.to_section()
    via_section = ForceField.from_section(document, tables, molrec_version=2)
    assert via_json == ff == via_section
    for name, block in ff.tables.items():
        for column, values in block.items():
            again = via_json.tables[name][column]
            assert again.dtype == values.dtype and again.shape == values.shape
            if values.dtype == "f64":
                assert again.values.tobytes() == values.values.tobytes(), (name, column)
    return via_json


def test_the_fixture_directory_is_not_empty() -> None:
    assert len(VALID) >= 3 and len(INVALID) >= 4


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_fixtures_load_and_round_trip(path: Path) -> None:
    data = load_json(path)
    ff = ForceField.from_dict(data)
    _round_trip(ff)
    assert ff.name == data["name"]
    assert set(ff.tables) == set(data["tables"])
    for name, block in data["tables"].items():
        assert ff.tables[name].count == block["count"]


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_fixtures_are_refused(path: Path) -> None:
    with pytest.raises(InvalidRecord):
        ForceField.from_dict(load_json(path))


def test_the_force_field_package_record_fixture() -> None:
    record = load_json(SCHEMA / "core" / "record" / "valid-forcefield-package.json")
    version = record["meta"]["molrec_version"]
    ff = ForceField.from_dict(record["forcefield"], molrec_version=version)
    assert ff.atom("A").rows[0].params == {"mass": 1.0}
    _round_trip(ff)


def test_every_fixture_answers_a_lookup_from_its_own_tables() -> None:
    for path in VALID:
        data = load_json(path)
        ff = ForceField.from_dict(data)
        names = data["tables"]["atom.full"]["columns"]["name"]["values"]
        masses = data["tables"]["atom.full"]["columns"]["mass"]["values"]
        for name, mass in zip(names, masses, strict=True):
            assert ff.atom(name).rows[0].params["mass"] == mass, path.stem


# -- §14 round-trip cases --------------------------------------------------------------------

D4 = ("itom", "jtom", "ktom", "ltom")


def _ends(n: int, *rows: tuple[str, ...]) -> dict[str, list[str]]:
    return {c: [r[i] for r in rows] for i, c in enumerate(D4[:n])}


def _cases() -> dict[str, dict[str, Any]]:
    full = atoms(
        "c",
        "h",
        "o",
        mass=[12.011, 1.008, 15.999],
        charge=[-0.18, 0.06, -0.5],
        element=["C", "H", "O"],
    )
    lj = {"params": {"mixing": "geometric", "cutoff": 10.0}}
    return {
        "ff-minimal": section(["atom.full"], {"atom.full": atoms("A", mass=[1.0])}, name="package"),
        "ff-round-trip": section(
            [
                "atom.full",
                "bond.harmonic",
                "angle.harmonic",
                "dihedral.periodic",
                "improper.harmonic",
                ("pair", "lj/cut", lj),
                ("pair", "lj/class2", {"params": {"mixing": "sixthpower"}}),
            ],
            {
                "atom.full": full,
                "bond.harmonic": table(name=["c-h"], **_ends(2, ("c", "h")), k=[340.0], r0=[1.09]),
                "angle.harmonic": table(
                    name=["h-c-h"], **_ends(3, ("h", "c", "h")), k=[33.0], theta0=[107.8]
                ),
                "dihedral.periodic": table(
                    name=["h-c-c-h"],
                    **_ends(4, ("h", "c", "c", "h")),
                    k1=[0.15],
                    periodicity1=[3.0],
                    phase1=[0.0],
                    k2=[0.25],
                    periodicity2=[1.0],
                    phase2=[180.0],
                ),
                "improper.harmonic": table(
                    name=["i"], **_ends(4, ("c", "h", "h", "o")), k=[1.1], chi0=[0.0]
                ),
                "pair.lj%2Fcut": table(
                    name=["c", "h"],
                    **_ends(2, ("c", "c"), ("h", "h")),
                    epsilon=[0.066, 0.03],
                    sigma=[3.5, 2.5],
                ),
                "pair.lj%2Fclass2": table(
                    name=["o"], **_ends(2, ("o", "o")), epsilon=[0.2], sigma=[3.1]
                ),
            },
            special_bonds={"lj": [0.0, 0.0, 0.5], "coul": [0.0, 0.0, 0.5]},
            source={"format": "lammps", "uri": "file:in.lmp", "sha256": "ab" * 32},
        ),
        "ff-wildcard-endpoints": section(
            ["dihedral.charmm"],
            {"dihedral.charmm": table(name=["X-a-b-X"], **_ends(4, ("", "a", "b", "")), k=[0.1])},
        ),
        "ff-absent-params": section(
            ["bond.harmonic"],
            {
                "bond.harmonic": table(
                    name=["a", "b"],
                    **_ends(2, ("A", "B"), ("A", "C")),
                    k=[1.0, None],
                    r0=[None, 2.0],
                )
            },
        ),
        "ff-string-params": section(
            ["atom.full"], {"atom.full": atoms("OW", ptype=["A"], mass=[15.999])}
        ),
        "ff-style-name-encoding": section(
            ["pair.lj/cut/coul/long", "bond.a.b", "bond.x~y", "bond.100%", "bond.é"],
            {
                "pair.lj%2Fcut%2Fcoul%2Flong": table(name=[], itom=[], jtom=[]),
                "bond.a%2Eb": table(name=[], itom=[], jtom=[]),
                "bond.x%7Ey": table(name=[], itom=[], jtom=[]),
                "bond.100%25": table(name=[], itom=[], jtom=[]),
                "bond.%C3%A9": table(name=[], itom=[], jtom=[]),
            },
        ),
        "ff-pair-cross-rows": section(
            ["atom.full", ("pair", "lj/cut", lj)],
            {
                "atom.full": atoms("A", "B"),
                "pair.lj%2Fcut": table(
                    name=["A", "B", "nbfix-1", "nbfix-1-again"],
                    **_ends(2, ("A", "A"), ("B", "B"), ("A", "B"), ("B", "A")),
                    epsilon=[0.1, 0.2, 0.5, 0.5],
                    sigma=[3.0, 3.5, 3.3, 3.3],
                ),
            },
        ),
        "ff-hybrid-styles": section(
            ["bond.harmonic", "bond.morse"],
            {
                "bond.harmonic": table(name=["b1"], **_ends(2, ("A", "B")), k=[1.0], r0=[1.0]),
                "bond.morse": table(
                    name=["b1"], **_ends(2, ("A", "B")), d0=[1.0], alpha=[2.0], r0=[1.0]
                ),
            },
        ),
        "ff-per-instance-style": section(
            ["bond.mmff"], {"bond.mmff": table(name=[], itom=[], jtom=[])}
        ),
        "ff-unknown-style-with-expression": section(
            [("bond", "quartic", {"expression": "k*(r-r0)^4"})],
            {"bond.quartic": table(name=["q"], **_ends(2, ("A", "B")), k=[1.0], r0=[1.5])},
        ),
        "ff-unknown-category": section(
            [
                "cross_term.example",
                ("urey_bradley", "harmonic", {"expression": "k_ub*(distance(p1,p3)-r_ub)^2"}),
            ],
            {
                "cross_term.example": table(name=["x"], value=[1.0]),
                "urey_bradley.harmonic": table(
                    name=["u"], **_ends(3, ("A", "B", "C")), k_ub=[5.4], r_ub=[1.8]
                ),
            },
        ),
        "ff-array-params": section(
            ["dihedral.table/linear", "bond.tabulated"],
            {
                "dihedral.table%2Flinear": table(
                    name=["t1", "t2"],
                    **_ends(4, ("A", "B", "C", "D"), ("A", "B", "C", "E")),
                    table=col([[float(i) / 7 for i in range(12)], None]),
                ),
                "bond.tabulated": table(
                    name=["b"],
                    **_ends(2, ("A", "B")),
                    knots=col([[[0.1, 0.2, 0.3], [1e-300, -0.0, 2.5]]]),
                ),
            },
        ),
        "ff-angle-charmm": section(
            ["angle.charmm"],
            {
                "angle.charmm": table(
                    name=["a"],
                    **_ends(3, ("A", "B", "C")),
                    k=[35.5],
                    theta0=[108.4],
                    k_ub=[5.4],
                    r_ub=[1.802],
                )
            },
        ),
        "ff-pair-lj-charmm": section(
            [
                "atom.full",
                (
                    "pair",
                    "lj/charmm",
                    {"params": {"one_four": "epsilon14", "inner": 10.0, "cutoff": 12.0}},
                ),
            ],
            {
                "atom.full": atoms("A", "B", "C"),
                "pair.lj%2Fcharmm": table(
                    name=["A", "B", "AB"],
                    **_ends(2, ("A", "A"), ("B", "B"), ("A", "B")),
                    epsilon=[0.1, 0.2, None],
                    sigma=[3.0, 3.5, None],
                    epsilon14=[0.05, None, 0.07],
                    sigma14=[2.8, None, 3.1],
                ),
            },
        ),
        "ff-units-preserved": section(
            ["atom.full"],
            {"atom.full": atoms("A", mass=[1.0])},
            units={
                "length": "nm",
                "energy": "kJ/mol",
                "angle": "degree",
                "charge": "e",
                "mass": "dalton",
            },
        ),
        "ff-lj-preset": section(
            ["atom.full"], {"atom.full": atoms("A", mass=[1.0])}, units={"preset": "lj"}
        ),
        "ff-smirks-keyed": section(
            [{"category": "bond", "style": "harmonic", "endpoint_key": "smirks"}],
            {
                "bond.harmonic": table(
                    name=["b1"], smirks=["[#6X4:1]-[#6X4:2]"], k=[310.0], r0=[1.52]
                )
            },
        ),
        "ff-without-special-bonds": section(["atom.full"], {"atom.full": atoms("A")}),
        "ff-document-keys-preserved": section(
            ["atom.full"],
            {"atom.full": atoms("A")},
            aromaticity_model="OEAroModel_MDL",
            extra={"a": [1, None]},
        ),
    }


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_conformance_round_trips(name: str) -> None:
    data = CASES[name]
    ff = ForceField.from_dict(data)
    again = _round_trip(ff)
    expected = {k: v for k, v in data.items() if k != "tables"}
    assert again.document == expected
    assert set(again.tables) == set(data["tables"])


def test_ff_units_preserved_keeps_units_unconverted() -> None:
    ff = ForceField.from_dict(CASES["ff-units-preserved"])
    assert ff.units == CASES["ff-units-preserved"]["units"]
    assert ff.atom("A").units["length"] == "nm"


def test_ff_array_params_keep_the_null_row_null() -> None:
    ff = ForceField.from_dict(CASES["ff-array-params"])
    assert ff.term("dihedral", "t2").rows[0].params == {"table": None}
    assert len(ff.term("dihedral", "t1").rows[0].params["table"]) == 12
    knots = ff.table("bond", "tabulated")["knots"].values
    assert knots.shape == (1, 2, 3) and np.signbit(knots[0, 1, 1])


def test_ff_pair_cross_rows_use_the_cross_row_in_either_order() -> None:
    ff = ForceField.from_dict(CASES["ff-pair-cross-rows"])
    for a, b in (("A", "B"), ("B", "A")):
        term = ff.pair(a, b).terms[0]
        assert (term.row, term.value("epsilon"), term.value("sigma")) == (2, 0.5, 3.3)


def test_ff_unknown_category_is_linked_and_matched() -> None:
    ff = ForceField.from_dict(CASES["ff-unknown-category"])
    assert ff.term("cross_term", "x").rows[0].params == {"value": 1.0}
    (row,) = ff.term("urey_bradley", "u").rows
    assert row.priceable and not row.registered
    with pytest.raises(NotFound, match="endpoints"):
        ff.match("cross_term", [])
