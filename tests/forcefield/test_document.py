"""The document (forcefield.md §2): name, units, source, special_bonds, styles."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ff_helpers import atoms, fixture, section, table

from mrecd.errors import InvalidRecord
from mrecd.forcefield import PRESETS, ForceField


def _minimal(**document: Any) -> dict[str, Any]:
    return section(["atom.full"], {"atom.full": atoms("A", mass=[1.0])}, **document)


def _refused(data: dict[str, Any], *fragments: str) -> InvalidRecord:
    with pytest.raises(InvalidRecord) as info:
        ForceField.from_dict(data)
    for fragment in fragments:
        assert fragment in str(info.value)
    return info.value


# -- units (§2.2) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("units", "fragments"),
    [
        ({}, ("forcefield.units", "F2")),
        ({"preset": "real", "length": "nm"}, ("forcefield.units.length", "F3")),
        ({"preset": "real", "angle": "radian"}, ("forcefield.units.angle", "degree")),
        ({"preset": "gromacs"}, ("forcefield.units.preset", "F5")),
        ({"preset": 3}, ("forcefield.units.preset",)),
        ({"length": "parsec of cheese"}, ("forcefield.units.length", "pint")),
        ({"length": "kcal/mol"}, ("forcefield.units.length", "not a unit of length")),
        ({"energy": "nm"}, ("forcefield.units.energy",)),
        ({"length": ""}, ("forcefield.units.length",)),
        ({"length": 1.0}, ("forcefield.units.length",)),
        ({"preset": "lj", "length": "nm"}, ("forcefield.units.length", "reduced")),
        ({"preset": "metal", "time": "fs"}, ("forcefield.units.time",)),
        ("real", ("forcefield.units",)),
    ],
)
def test_bad_units_are_refused(units: Any, fragments: tuple[str, ...]) -> None:
    _refused(_minimal(units=units), *fragments)


def test_absent_units_are_refused() -> None:
    data = _minimal()
    del data["units"]
    _refused(data, "forcefield.units", "F1")


@pytest.mark.parametrize(
    "units",
    [
        {"preset": "real", "length": "angstrom"},
        {"preset": "real", "length": "Å", "energy": "kcal / mol", "mass": "amu"},
        {"preset": "lj"},
        {"preset": "lj", "angle": "deg"},
        {"preset": "openmm"},
        {"preset": "openmm", "length": "nanometer", "energy": "kJ/mol"},
        {"preset": "cgs", "charge": "statC"},
        {"length": "nm", "energy": "kJ/mol"},
        {"energy": "eV"},
        {"mass": "g/mol"},
        # §15.4: radian without a preset is not refused in version 2.
        {"angle": "radian"},
        {"preset": "real", "temperature": "K"},
    ],
)
def test_good_units_are_accepted(units: dict[str, Any]) -> None:
    ff = ForceField.from_dict(_minimal(units=units))
    assert ff.document["units"] == units


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_is_accepted_with_its_own_units_restated(preset: str) -> None:
    units = {"preset": preset, **PRESETS[preset]}
    ff = ForceField.from_dict(_minimal(units=units))
    assert ff.units == {"preset": preset, **PRESETS[preset]}


def test_units_are_expanded_for_answers_but_stored_as_given() -> None:
    ff = ForceField.from_dict(_minimal(units={"preset": "metal"}))
    assert ff.document["units"] == {"preset": "metal"}
    assert ff.units == {
        "preset": "metal",
        "length": "angstrom",
        "energy": "eV",
        "angle": "degree",
        "charge": "e",
        "mass": "dalton",
        "time": "ps",
    }
    assert ForceField.from_dict(_minimal(units={"preset": "lj"})).units == {
        "preset": "lj",
        "angle": "degree",
    }


# -- name, source, special_bonds (§2.1, §2.3, §2.4) -------------------------------------------


@pytest.mark.parametrize("name", [None, 3, ["x"]])
def test_name_must_be_a_string(name: Any) -> None:
    data = _minimal()
    data["name"] = name
    _refused(data, "forcefield.name", "F6")


def test_absent_name_is_refused() -> None:
    data = _minimal()
    del data["name"]
    _refused(data, "forcefield.name")


@pytest.mark.parametrize(
    ("source", "fragments"),
    [
        ({"uri": "x"}, ("forcefield.source.format", "F12")),
        ({"format": 1}, ("forcefield.source.format",)),
        ({"format": "lammps", "sha256": "A" * 64}, ("sha256", "F12")),
        ({"format": "lammps", "sha256": "a" * 63}, ("sha256",)),
        ({"format": "lammps", "sha256": "g" * 64}, ("sha256",)),
        ({"format": "lammps", "uri": 3}, ("forcefield.source.uri",)),
        ("lammps", ("forcefield.source",)),
    ],
)
def test_bad_source_is_refused(source: Any, fragments: tuple[str, ...]) -> None:
    _refused(_minimal(source=source), *fragments)


def test_a_full_source_is_kept() -> None:
    source = {"format": "openmm-xml", "uri": "file:x.xml", "sha256": "0123abcd" * 8, "by": "me"}
    assert ForceField.from_dict(_minimal(source=source)).document["source"] == source


@pytest.mark.parametrize(
    "special_bonds",
    [
        {"lj": [0, 0, 0.5]},
        {"lj": [0, 0, 0.5], "coul": [0, 0]},
        {"lj": [0, 0, 0.5], "coul": [0, 0, 0.5, 1]},
        {"lj": [0, 0, 0.5], "coul": [0, 0, True]},
        {"lj": [0, 0, 0.5], "coul": [0, 0, "0.5"]},
        {"lj": [0, 0, 0.5], "coul": [0, 0, 0.5], "dihedral": [1, 1, 1]},
        [[0, 0, 0.5], [0, 0, 0.5]],
    ],
)
def test_bad_special_bonds_are_refused(special_bonds: Any) -> None:
    _refused(_minimal(special_bonds=special_bonds), "forcefield.special_bonds", "F11")


def test_special_bonds_are_reported_and_absence_is_not_a_default() -> None:
    with_weights = ForceField.from_dict(
        _minimal(special_bonds={"lj": [0, 0, 0.5], "coul": [0.0, 0.0, 0.8333]})
    )
    assert with_weights.special_bonds == {"lj": [0, 0, 0.5], "coul": [0.0, 0.0, 0.8333]}
    assert ForceField.from_dict(_minimal()).special_bonds is None


# -- styles (§2.5, §2.6) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "fragments"),
    [
        ({"category": "Bond", "style": "harmonic"}, ("category", "F8")),
        ({"category": "1bond", "style": "harmonic"}, ("category",)),
        ({"category": "bond.x", "style": "harmonic"}, ("category",)),
        ({"style": "harmonic"}, ("category",)),
        ({"category": "bond"}, ("style", "F8")),
        ({"category": "bond", "style": ""}, ("style",)),
        ({"category": "bond", "style": 3}, ("style",)),
        ({"category": "bond", "style": "h", "endpoint_key": "residue"}, ("endpoint_key",)),
        ({"category": "bond", "style": "h", "params": {"shift": True}}, ("params.shift",)),
        ({"category": "bond", "style": "h", "params": {"cutoff": None}}, ("params.cutoff",)),
        ({"category": "bond", "style": "h", "params": {"table": [1.0]}}, ("params.table",)),
        ({"category": "bond", "style": "h", "params": [1]}, ("params",)),
        ({"category": "bond", "style": "h", "expression": 3}, ("expression",)),
        ({"category": "bond", "style": "h", "expression": None}, ("expression",)),
        ({"category": "pair", "style": "lj/cut", "params": {"mixing": "lorentz"}}, ("mixing",)),
        ({"category": "pair", "style": "x", "params": {"special": "vdw"}}, ("special",)),
        ({"category": "pair", "style": "lj/charmm", "params": {"one_four": "both"}}, ("F24",)),
        ("bond.harmonic", ()),
    ],
)
def test_bad_style_entries_are_refused(entry: Any, fragments: tuple[str, ...]) -> None:
    data = section([], {})
    data["styles"] = [entry]
    _refused(data, "forcefield.styles[0]", *fragments)


def test_styles_are_required() -> None:
    data = _minimal()
    del data["styles"]
    _refused(data, "forcefield.styles", "F7")


def test_an_empty_styles_list_is_a_valid_force_field() -> None:
    ff = ForceField.from_dict(section([], {}))
    assert ff.styles == ()


def test_duplicate_style_is_refused() -> None:
    data = section(
        ["bond.harmonic", "bond.harmonic"],
        {"bond.harmonic": table(name=["b"], itom=["A"], jtom=["B"])},
    )
    _refused(data, "F9", "(bond, harmonic)")


def test_style_without_its_table_is_refused() -> None:
    _refused(section(["bond.harmonic"], {}), "F10", "bond.harmonic")


def test_mixing_and_special_are_reserved_only_for_pair_styles() -> None:
    data = section(
        [("bond", "custom", {"params": {"mixing": "anything", "special": 2}})],
        {"bond.custom": table(name=["b"], itom=["A"], jtom=["B"])},
    )
    assert ForceField.from_dict(data).styles[0].params == {"mixing": "anything", "special": 2}


def test_unknown_keys_survive_everywhere_in_the_document() -> None:
    data = section(
        [{"category": "atom", "style": "full", "note": {"nested": [1, 2]}}],
        {"atom.full": atoms("A")},
        aromaticity_model="OEAroModel_MDL",
        units={"preset": "real", "custom": "K"},
    )
    ff = ForceField.from_dict(data)
    assert ff.document["aromaticity_model"] == "OEAroModel_MDL"
    assert ff.document["styles"][0]["note"] == {"nested": [1, 2]}
    assert ff.document["units"]["custom"] == "K"
    assert ForceField.from_dict(ff.to_dict()) == ff


def test_the_writer_omits_empty_params_and_the_default_endpoint_key() -> None:
    data = section(
        [
            {"category": "atom", "style": "full", "params": {}, "endpoint_key": "type"},
            {"category": "bond", "style": "harmonic", "endpoint_key": "class"},
        ],
        {
            "atom.full": atoms("A", **{"class": ["c"]}),
            "bond.harmonic": table(name=["b"], itom=["c"], jtom=["c"]),
        },
    )
    ff = ForceField.from_dict(data)
    assert ff.document["styles"] == [
        {"category": "atom", "style": "full"},
        {"category": "bond", "style": "harmonic", "endpoint_key": "class"},
    ]
    assert ff.styles[0].params == {}
    assert ff.styles[0].endpoint_key == "type"


def test_style_entries_expose_their_parts() -> None:
    ff = ForceField.from_dict(fixture("valid-charmm"))
    lj = ff.style("pair", "lj/charmm")
    assert (lj.category, lj.style, lj.block, lj.position) == (
        "pair",
        "lj/charmm",
        "pair.lj%2Fcharmm",
        3,
    )
    assert lj.params == {"cutoff": 12.0, "mixing": "arithmetic"}
    assert lj.registered and lj.priceable
    assert lj.to_dict() == {
        "category": "pair",
        "style": "lj/charmm",
        "params": {"cutoff": 12.0, "mixing": "arithmetic"},
    }


def test_non_finite_document_numbers_are_refused() -> None:
    data = section([("pair", "lj/cut", {"params": {"cutoff": float("nan")}})], {})
    with pytest.raises(InvalidRecord):
        ForceField.from_dict(data)


def test_document_is_json_and_a_copy() -> None:
    ff = ForceField.from_dict(fixture("valid-tip3p"))
    document = ff.document
    document["name"] = "changed"
    assert ff.name == "TIP3P"
    json.dumps(ff.to_dict(), allow_nan=False)


def test_tables_is_not_a_document_key_when_constructing_directly() -> None:
    with pytest.raises(InvalidRecord, match="tables"):
        ForceField({"name": "x", "units": {"preset": "real"}, "styles": [], "tables": {}}, {})


@pytest.mark.parametrize("bad", [None, [], "x"])
def test_non_object_inputs_are_refused(bad: Any) -> None:
    with pytest.raises(InvalidRecord):
        ForceField.from_dict(bad)
    with pytest.raises(InvalidRecord):
        ForceField(bad, {})


def test_tables_must_be_blocks_keyed_by_name() -> None:
    document = {"name": "x", "units": {"preset": "real"}, "styles": []}
    with pytest.raises(InvalidRecord):
        ForceField(document, {"atom.full": {"count": 0}})  # type: ignore[dict-item]
    with pytest.raises(InvalidRecord):
        ForceField(document, [])  # type: ignore[arg-type]
    with pytest.raises(InvalidRecord, match="box"):
        ForceField.from_dict({**document, "tables": {"box": table(name=["x"])}})
    with pytest.raises(InvalidRecord):
        ForceField.from_dict({**document, "tables": []})
