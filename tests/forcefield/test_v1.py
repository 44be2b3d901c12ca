"""Reading a version-1 force field: exact conversion or refusal (forcefield.md §11, §12.2)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from ff_helpers import atoms, col, section, table

from mrecd.errors import InvalidRecord, UnsupportedVersion
from mrecd.forcefield import ForceField

C = 180 / math.pi  # the double nearest 180/π: 57.29577951308232
ENDS = {2: ("itom", "jtom"), 3: ("itom", "jtom", "ktom"), 4: ("itom", "jtom", "ktom", "ltom")}


def _one(
    style: str, arity: int, units: Any = None, entry: dict[str, Any] | None = None, **params: Any
) -> dict[str, Any]:
    category, _, form = style.partition(".")
    ends = {c: [f"T{i}"] for i, c in enumerate(ENDS[arity])}
    block = f"{category}.{form.replace('/', '%2F')}"
    return section(
        [(category, form, entry or {})],
        {block: table(name=["t"], **ends, **params)},
        units={"preset": "real"} if units is None else units,
    )


def _v1(data: dict[str, Any]) -> ForceField:
    return ForceField.from_dict(data, molrec_version=1)


def _params(ff: ForceField, category: str, style: str | None = None) -> dict[str, Any]:
    if category == "pair":  # pair rows are looked up by their types, not by name
        term = ff.pair("T0", "T1").terms[0]
        stored = ff.tables[term.table]
        return {k: v.value for k, v in term.values.items() if k in stored}
    return dict(ff.term(category, "t", style).rows[0].params)


# -- §11.1 angle unit ----------------------------------------------------------------------


def test_harmonic_angle_in_a_preset_is_halved_and_turned_into_degrees() -> None:
    ff = _v1(_one("angle.harmonic", 3, k=[100.0], theta0=[1.9106]))
    assert _params(ff, "angle") == {"k": 50.0, "theta0": 109.46931633769509}
    assert ff.document["units"] == {"preset": "real", "angle": "degree"}


def test_constants_per_degree_are_multiplied_once_per_power_in_order() -> None:
    ff = _v1(_one("angle.harmonic", 3, units={"angle": "degree"}, k=[0.01], theta0=[109.5]))
    k = _params(ff, "angle")["k"]
    assert k == 0.005 * 57.29577951308232 * 57.29577951308232 == 16.41403175005872
    assert k != 0.005 * (180 / math.pi) ** 2  # 16.414031750058722: not the spec's number
    assert _params(ff, "angle")["theta0"] == 109.5  # degree values stay
    assert ff.document["units"] == {"angle": "degree"}


@pytest.mark.parametrize("angle", ["degree", "deg", "arcminute"])
def test_a_preset_with_a_non_radian_angle_is_refused(angle: str) -> None:
    with pytest.raises(InvalidRecord, match="reject-v1-preset-angle-degree"):
        _v1(_one("bond.harmonic", 2, units={"preset": "real", "angle": angle}, k=[1.0]))


@pytest.mark.parametrize("angle", ["radian", "rad"])
def test_a_preset_with_radian_stated_converts(angle: str) -> None:
    ff = _v1(
        _one("angle.harmonic", 3, units={"preset": "real", "angle": angle}, k=[2.0], theta0=[1.0])
    )
    assert _params(ff, "angle") == {"k": 1.0, "theta0": C}
    assert ff.document["units"]["angle"] == "degree"


def test_the_lj_preset_gains_a_degree_angle() -> None:
    ff = _v1(section(["atom.full"], {"atom.full": atoms("A", mass=[1.0])}, units={"preset": "lj"}))
    assert ff.document["units"] == {"preset": "lj", "angle": "degree"}


def test_a_force_field_package_converts_nothing_but_its_units() -> None:
    data = section(["atom.full"], {"atom.full": atoms("A", mass=[1.0])}, name="package")
    ff = _v1(data)
    assert ff.tables == ForceField.from_dict(data).tables
    assert ff.document["units"] == {"preset": "real", "angle": "degree"}


def test_without_an_angle_unit_nothing_angular_changes() -> None:
    ff = _v1(_one("angle.harmonic", 3, units={"length": "nm"}, k=[100.0], theta0=[1.9106]))
    assert _params(ff, "angle") == {"k": 50.0, "theta0": 1.9106}
    assert "angle" not in ff.document["units"]


@pytest.mark.parametrize("angle", ["arcminute", "turn"])
def test_other_angle_units_without_a_preset_are_refused(angle: str) -> None:
    with pytest.raises(InvalidRecord, match="neither radian nor degree"):
        _v1(_one("angle.harmonic", 3, units={"angle": angle}, k=[1.0]))


# -- §11.2 section conversions ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("style", "arity", "given", "expected"),
    [
        ("bond.harmonic", 2, {"k": [450.0], "r0": [1.0]}, {"k": 225.0, "r0": 1.0}),
        ("drude.harmonic", 2, {"k": [500.0], "alpha": [1.0]}, {"k": 250.0, "alpha": 1.0}),
        (
            "angle.class2",
            3,
            {"theta0": [2.0], "k2": [1.0], "k3": [2.0], "k4": [3.0]},
            {"theta0": 2.0 * C, "k2": 1.0, "k3": 2.0, "k4": 3.0},
        ),
        (
            "dihedral.periodic",
            4,
            {"k1": [1.0], "periodicity1": [2.0], "phase1": [math.pi], "phase2": [0.5], "k2": [3.0]},
            {"k1": 1.0, "periodicity1": 2.0, "phase1": math.pi * C, "phase2": 0.5 * C, "k2": 3.0},
        ),
        ("improper.trefoil", 4, {"k": [1.0], "phase": [1.0]}, {"k": 1.0, "phase": C}),
        (
            "dihedral.charmm",
            4,
            {"k": [0.2], "periodicity": [3.0], "phase": [math.pi], "w": [0.5]},
            {"k": 0.2, "periodicity": 3.0, "phase": math.pi * C, "w": 0.5},
        ),
        (
            "improper.periodic",
            4,
            {"k": [1.1], "phase": [math.pi]},
            {"k": 1.1, "phase": math.pi * C},
        ),
        (
            "dihedral.class2",
            4,
            {"k1": [1.0], "phi1": [0.1], "phi2": [0.2], "phi3": [0.3]},
            {"k1": 1.0, "phi1": 0.1 * C, "phi2": 0.2 * C, "phi3": 0.3 * C},
        ),
        ("improper.harmonic", 4, {"k": [10.0], "chi0": [0.0]}, {"k": 10.0, "chi0": 0.0}),
        ("bond.morse", 2, {"D": [100.0], "alpha": [2.0]}, {"d0": 100.0, "alpha": 2.0}),
        ("pair.morse", 2, {"D0": [1.0], "r0": [2.0]}, {"d0": 1.0, "r0": 2.0}),
        ("pair.thole", 2, {"a_thole": [2.6]}, {"damp": 2.6}),
        ("angle.mmff_angle", 3, {"theta0": [1.0], "ka": [0.5]}, {"theta0": C, "ka": 0.5}),
        ("angle.uff_angle", 3, {"theta0": [1.0]}, {"theta0": C}),
        ("dihedral.opls", 4, {"k1": [1.0], "k2": [2.0]}, {"k1": 1.0, "k2": 2.0}),
        ("angle.charmm", 3, {"k": [1.0], "theta0": [100.0]}, {"k": 1.0, "theta0": 100.0}),
    ],
)
def test_section_conversions_in_radian(
    style: str, arity: int, given: dict[str, Any], expected: dict[str, Any]
) -> None:
    category = style.partition(".")[0]
    ff = _v1(_one(style, arity, **given))
    assert _params(ff, category) == expected


def test_improper_harmonic_k_is_converted_per_degree_squared_without_halving() -> None:
    ff = _v1(_one("improper.harmonic", 4, units={"angle": "degree"}, k=[0.01], chi0=[180.0]))
    assert _params(ff, "improper") == {"k": 0.01 * C * C, "chi0": 180.0}


def test_class2_constants_per_degree_take_one_factor_per_power() -> None:
    ff = _v1(
        _one(
            "angle.class2",
            3,
            units={"angle": "degree"},
            theta0=[109.0],
            k2=[1.0],
            k3=[1.0],
            k4=[1.0],
        )
    )
    assert _params(ff, "angle") == {
        "theta0": 109.0,
        "k2": 1.0 * C * C,
        "k3": 1.0 * C * C * C,
        "k4": 1.0 * C * C * C * C,
    }


def test_null_cells_are_not_converted() -> None:
    ff = _v1(_one("angle.harmonic", 3, k=col([None], "f64"), theta0=[1.0]))
    assert _params(ff, "angle") == {"k": None, "theta0": C}


def test_array_angle_values_convert_elementwise() -> None:
    ff = _v1(_one("dihedral.periodic", 4, phase=col([[0.5, 1.0]])))
    assert _params(ff, "dihedral")["phase"] == (0.5 * C, 1.0 * C)


def test_fourier_becomes_periodic() -> None:
    ff = _v1(_one("dihedral.fourier", 4, k1=[1.0], phase1=[math.pi]))
    assert [s.style for s in ff.styles] == ["periodic"]
    assert "dihedral.fourier" not in ff.tables
    assert _params(ff, "dihedral", "periodic") == {"k1": 1.0, "phase1": math.pi * C}


def test_fourier_beside_periodic_is_refused() -> None:
    ends = {c: ["A"] for c in ENDS[4]}
    data = section(
        ["dihedral.periodic", "dihedral.fourier"],
        {
            "dihedral.periodic": table(name=["p"], **ends),
            "dihedral.fourier": table(name=["f"], **ends),
        },
    )
    with pytest.raises(InvalidRecord, match=r"dihedral\.periodic"):
        _v1(data)
    data["styles"].reverse()
    with pytest.raises(InvalidRecord, match=r"dihedral\.periodic"):
        _v1(data)


def test_out_of_plane_styles_swap_their_first_two_endpoints() -> None:
    ff = _v1(_one("improper.mmff_oop", 4, koop=[0.1]))
    row = ff.term("improper", "t").rows[0]
    assert row.endpoints == ("T1", "T0", "T2", "T3")
    assert list(ff.table("improper", "mmff_oop")) == [
        "name",
        "jtom",
        "itom",
        "ktom",
        "ltom",
        "koop",
    ]
    assert _v1(_one("improper.uff_inversion", 4)).term("improper", "t").rows[0].endpoints[:2] == (
        "T1",
        "T0",
    )


# -- §12.2 refusals --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "case"),
    [
        (_one("pair14.lj/cut", 2, epsilon=[0.1]), "reject-v1-pair14"),
        (
            _one("improper.periodic", 4, k1=[1.0], phase1=[0.0]),
            "reject-v1-multiterm-improper-periodic",
        ),
        (
            _one("bond.harmonic", 2, entry={"expression": "k*(r-r0)^2"}, k=[1.0]),
            "reject-v1-expression-on-converted-style",
        ),
        (
            _one("dihedral.fourier", 4, entry={"expression": "k1*cos(phi)"}),
            "reject-v1-expression-on-converted-style",
        ),
        (_one("angle.cosine", 3, k=[1.0]), "reject-v1-unknown-angular-style"),
        (
            _one("dihedral.mine", 4, entry={"expression": "k*phi"}),
            "reject-v1-unknown-angular-style",
        ),
        (_one("improper.mine", 4, entry={"params": {"x": 1.0}}), "reject-v1-unknown-angular-style"),
        (_one("bond.morse", 2, D=[1.0], d0=[1.0]), "renames to 'd0'"),
        (_one("pair.thole", 2, a_thole=[1.0], damp=[1.0]), "renames to 'damp'"),
        (_one("angle.harmonic", 3, theta0=col(["1.9"])), "cannot be converted exactly"),
    ],
)
def test_version_1_refusals(data: dict[str, Any], case: str) -> None:
    with pytest.raises(InvalidRecord, match=case):
        _v1(data)
    if "pair14" not in case and "exactly" not in case and "renames" not in case:
        ForceField.from_dict(data)  # the same section is legal in version 2


def test_unknown_styles_without_parameters_and_non_angular_ones_keep_their_numbers() -> None:
    assert _v1(_one("angle.cosine", 3)).styles[0].style == "cosine"
    ff = _v1(_one("bond.quartic", 2, entry={"expression": "k*r^4"}, k=[2.0]))
    assert _params(ff, "bond") == {"k": 2.0}


def test_a_converted_section_is_refused_by_the_version_2_rules_too() -> None:
    data = _one("bond.harmonic", 2, k=[1.0])
    del data["units"]
    with pytest.raises(InvalidRecord, match="F1"):
        _v1(data)


# -- versions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, 2])
def test_version_2_and_unstamped_sections_read_as_stored(version: int | None) -> None:
    ff = ForceField.from_dict(
        _one("angle.harmonic", 3, k=[100.0], theta0=[109.5]), molrec_version=version
    )
    assert _params(ff, "angle") == {"k": 100.0, "theta0": 109.5}


@pytest.mark.parametrize("version", [0, 3, -1, "1", 1.0, True])
def test_other_versions_are_refused(version: Any) -> None:
    with pytest.raises(UnsupportedVersion):
        ForceField.from_dict(_one("bond.harmonic", 2, k=[1.0]), molrec_version=version)


def test_the_converted_section_writes_as_version_2() -> None:
    ff = _v1(_one("angle.harmonic", 3, k=[100.0], theta0=[1.9106]))
    document, tables = ff.to_section()
    again = ForceField.from_section(document, tables, molrec_version=2)
    assert again == ff
    assert ForceField.from_dict(ff.to_dict()) == ff


def test_from_section_converts_too() -> None:
    source = ForceField.from_dict(_one("bond.harmonic", 2, k=[4.0]))
    document, tables = source.to_section()
    assert _params(ForceField.from_section(document, tables, molrec_version=1), "bond") == {
        "k": 2.0
    }
    with pytest.raises(InvalidRecord):
        ForceField.from_section([], tables, molrec_version=1)  # type: ignore[arg-type]
