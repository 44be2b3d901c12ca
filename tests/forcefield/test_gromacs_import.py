"""GROMACS topology import (forcefield.md §9.3), checked by hand and against OpenMM's
GromacsTopFile, which reads the same file independently."""

from __future__ import annotations

import math
from pathlib import Path

import openmm.app as app
import pytest

from mrecd import InvalidRecord, NotFound
from mrecd.forcefield import ForceField, from_gromacs_top

TOP = Path(__file__).parent / "data" / "butanamide.top"


@pytest.fixture(scope="module")
def ff() -> ForceField:
    return from_gromacs_top(TOP)


def test_defaults_become_weights_and_mixing(ff: ForceField) -> None:
    assert ff.special_bonds == {"lj": [0.0, 0.0, 0.5], "coul": [0.0, 0.0, 0.8333333333]}
    lj = ff.style("pair", "lj/charmm")
    assert lj.params == {"mixing": "arithmetic", "one_four": "epsilon14"}
    assert ff.document["source"]["format"] == "gromacs-top"
    assert "[ molecules ]" in ff.document["ignored"]


def test_atomtypes(ff: ForceField) -> None:
    ct = ff.atom("CT")
    assert (ct["class"], ct["atomic_number"], ct["mass"], ct["charge"]) == ("CT", 6, 12.011, 0.0)
    assert ff.pair("CT", "CT")["sigma"] == 0.339967


def test_harmonic_constants_lose_gromacs_half(ff: ForceField) -> None:
    assert ff.term("bond", "CT-HC")["k"] == 142256.0
    assert ff.term("angle", "HC-CT-HC")["k"] == 146.44
    assert ff.term("angle", "HC-CT-HC")["theta0"] == 109.5


def test_function_9_rows_on_one_quartet_are_one_multi_term_row(ff: ForceField) -> None:
    row = ff.term("dihedral", "CT-CT-CT-CT").rows[0]
    assert row.params == {
        "k1": 0.75312, "periodicity1": 1.0, "phase1": 0.0,
        "k2": 1.046, "periodicity2": 2.0, "phase2": 180.0,
        "k3": 0.6276, "periodicity3": 3.0, "phase3": 0.0,  # from the #define
    }  # fmt: skip
    assert ff.match("dihedral", ("HC", "CT", "CT", "C")).matches[0].row.name == "*-CT-CT-*"


def test_a_pairtype_unlike_the_generated_pair_is_a_14_cross_row(ff: ForceField) -> None:
    pair = ff.pair("CT", "O", is_14=True)
    # GROMACS prices a pairtype as written; the IR weights it by fudgeLJ, so ε14 = ε/fudgeLJ
    assert (pair["sigma14"], pair["epsilon14"]) == (0.31, 0.4)
    assert pair.term("lj/charmm").priced_with == ("epsilon14", "sigma14")
    other = ff.pair("CT", "HC", is_14=True)  # generated: the regular LJ mixed
    assert other["epsilon14"] == other["epsilon"]


@pytest.fixture(scope="module")
def system() -> app.GromacsTopFile:
    return app.GromacsTopFile(str(TOP)).createSystem(nonbondedMethod=app.NoCutoff)


def _types() -> dict[int, str]:
    top = app.GromacsTopFile(str(TOP))
    return {i: top._moleculeTypes["BUA"].atoms[i][1] for i in range(15)}


def _force(system: object, name: str) -> object:
    return next(f for f in system.getForces() if type(f).__name__ == name)  # type: ignore[attr-defined]


def test_bonds_and_angles_match_openmms_reading(ff: ForceField, system: object) -> None:
    types = _types()
    bonds = _force(system, "HarmonicBondForce")
    for i in range(bonds.getNumBonds()):  # type: ignore[attr-defined]
        a, b, length, k = bonds.getBondParameters(i)  # type: ignore[attr-defined]
        match = ff.match("bond", (types[a], types[b]))
        assert (match["r0"], 2 * match["k"]) == pytest.approx((length._value, k._value), rel=1e-12)
    angles = _force(system, "HarmonicAngleForce")
    for i in range(angles.getNumAngles()):  # type: ignore[attr-defined]
        a, b, c, theta, k = angles.getAngleParameters(i)  # type: ignore[attr-defined]
        match = ff.match("angle", (types[a], types[b], types[c]))
        got = (math.radians(match["theta0"]), 2 * match["k"])
        assert got == pytest.approx((theta._value, k._value), rel=1e-12)


def test_torsions_match_openmms_reading(ff: ForceField, system: object) -> None:
    types = _types()
    torsions = _force(system, "PeriodicTorsionForce")
    for i in range(torsions.getNumTorsions()):  # type: ignore[attr-defined]
        a, b, c, d, n, phase, k = torsions.getTorsionParameters(i)  # type: ignore[attr-defined]
        quartet = (types[a], types[b], types[c], types[d])
        is_improper = (a, b, c, d) == (7, 11, 10, 12)
        match = ff.match("improper" if is_improper else "dihedral", quartet).matches[0].row
        key = "" if is_improper else "1"
        got = (match[f"periodicity{key}"], math.radians(match[f"phase{key}"]), match[f"k{key}"])
        assert got == pytest.approx((n, phase._value, k._value), rel=1e-12)


ATOMTYPES = "[ atomtypes ]\nA A 6 12.0 0.0 A 0.3 0.1\n"


def _write(tmp_path: Path, text: str, defaults: str = "1 2 yes 0.5 0.8333") -> Path:
    path = tmp_path / "t.top"
    path.write_text(f"[ defaults ]\n{defaults}\n{text}")
    return path


@pytest.mark.parametrize(
    ("defaults", "text", "message"),
    [
        ("1 1 yes 0.5 0.8", "", "comb-rule 1: only 2 and 3"),
        ("2 2 yes 0.5 0.8", "", r"nbfunc 2 \(Buckingham\) is refused"),
        ("1 2", ATOMTYPES + "[ bondtypes ]\nA A 2 0.1 1000\n", "function 2: only 1 and 3"),
        ("1 2", ATOMTYPES + "[ dihedraltypes ]\nA A A A 2 45 10\n", "xi0 45.0: only 0 and 180"),
        ("1 2", ATOMTYPES + "[ dihedraltypes ]\nA A 9 0 1 3\n", "name four atom types"),
        ("1 2", "[ atomtypes ]\nA A 6 12.0 0.0 V 0.3 0.1\n", "particle type 'V': only atoms"),
        ("1 2", "[ atomtypes ]\nA 12.0 0.0 0.3 0.1\n", "no particle-type field"),
        (
            "1 2",
            ATOMTYPES + "[ bondtypes ]\nA A 1 0.1 stiff\n",
            r"t.top:6 \[ bondtypes \]: field 5 'stiff' is not a number",
        ),
        ("1 2", ATOMTYPES + "[ nonbond_params ]\nA B 1 0.3 0.1\nB A 1 0.3 0.2\n", "restates"),
        ("1 2 yes 0 1", ATOMTYPES + "[ pairtypes ]\nA A 1 0.2 0.1\n", "fudgeLJ 0 beside"),
        ("1 2", "[ cmaptypes ]\nA A A A A 1 24 24\n", r"\[ cmaptypes \] is not translated"),
        ("1 2", "[ frobnicate ]\n1\n", "not a topology section"),
        ("1 2", '#include "absent.itp"\n', "no GROMACS topology file"),
        ("1 2", "#pragma once\n", "#pragma is not supported"),
        ("1 2", "#ifdef X\n", "#ifdef without #endif"),
    ],
)
def test_each_mapping_error_is_refused(
    tmp_path: Path, defaults: str, text: str, message: str
) -> None:
    with pytest.raises((InvalidRecord, NotFound), match=message):
        from_gromacs_top(_write(tmp_path, text, defaults))


def test_a_topology_without_defaults_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.top"
    path.write_text(ATOMTYPES)
    with pytest.raises(InvalidRecord, match=r"needs \[ defaults \]"):
        from_gromacs_top(path)


def test_defines_select_branches(tmp_path: Path) -> None:
    text = (
        ATOMTYPES + "[ bondtypes ]\n#ifdef STIFF\nA A 1 0.1 2000\n#else\nA A 1 0.1 1000\n#endif\n"
    )
    path = _write(tmp_path, text, "1 2")
    assert from_gromacs_top(path).term("bond", "A-A")["k"] == 500.0
    assert from_gromacs_top(path, defines={"STIFF": ""}).term("bond", "A-A")["k"] == 1000.0
