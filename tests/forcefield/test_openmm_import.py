"""OpenMM XML import (forcefield.md §9.1) checked against OpenMM itself.

The amber14 files are imported, then a System is built by OpenMM for the
villin-in-water PDB it ships; every bond, angle, torsion and 1-4 pair OpenMM
parameterized is looked up in the imported section by the atoms' types and
compared with the number OpenMM put in the System.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import openmm
import openmm.app as app
import pytest

from mrecd import InvalidRecord, NotFound
from mrecd.forcefield import ForceField, from_openmm_xml

DATA = Path(app.__file__).parent / "data"
AMBER = [DATA / "amber14" / "protein.ff14SB.xml", DATA / "amber14" / "tip3p.xml"]
TOLERANCE = 1e-12
SAMPLE = 50


def rel(a: float, b: float) -> float:
    """Relative difference; 0 when both are 0."""
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


class Built:
    """OpenMM's System for test.pdb under amber14, with each atom's type."""

    def __init__(self) -> None:
        self.ff = app.ForceField(*(str(p) for p in AMBER))
        pdb = app.PDBFile(str(DATA / "test.pdb"))
        self.topology = pdb.topology
        self.system = self.ff.createSystem(
            pdb.topology, nonbondedMethod=app.NoCutoff, constraints=None, rigidWater=False
        )
        bonded = self.ff._buildBondedToAtomList(pdb.topology)
        self.types: dict[int, str] = {}
        for residue in pdb.topology.residues():
            template, matches = self.ff._getResidueTemplateMatches(residue, bonded)
            for atom, m in zip(residue.atoms(), matches, strict=True):
                self.types[atom.index] = template.atoms[m].type
        self.bonds = {frozenset((b[0].index, b[1].index)) for b in pdb.topology.bonds()}

    def force(self, name: str) -> Any:
        return next(f for f in self.system.getForces() if type(f).__name__ == name)

    def typed(self, atoms: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(self.types[a] for a in atoms)

    def is_proper(self, quartet: tuple[int, ...]) -> bool:
        return all(frozenset(p) in self.bonds for p in itertools.pairwise(quartet))


@pytest.fixture(scope="module")
def amber() -> ForceField:
    return from_openmm_xml(AMBER)


@pytest.fixture(scope="module")
def built() -> Built:
    return Built()


def test_amber14_document(amber: ForceField) -> None:
    assert amber.name == "protein.ff14SB+tip3p"
    assert amber.units == {
        "length": "nm",
        "energy": "kJ/mol",
        "angle": "degree",
        "charge": "e",
        "mass": "dalton",
    }
    assert amber.special_bonds == {"lj": [0.0, 0.0, 0.5], "coul": [0.0, 0.0, 0.8333333333333334]}
    assert amber.document["source"] == {"format": "openmm-xml"}
    files = amber.document["source_files"]
    assert [Path(f["uri"]).name for f in files] == ["protein.ff14SB.xml", "tip3p.xml"]
    assert all(len(f["sha256"]) == 64 for f in files)
    styles = {(s.category, s.style): s for s in amber.styles}
    assert styles["bond", "harmonic"].endpoint_key == "type"
    assert styles["pair", "lj/cut"].params == {"mixing": "arithmetic"}
    assert styles["pair", "coul/cut"].params == {"coulomb": 138.93545764438198}


def test_atoms_answer_what_openmm_registered(amber: ForceField, built: Built) -> None:
    registered = built.ff._atomTypes
    assert len(registered) >= SAMPLE
    for name, info in registered.items():
        atom = amber.atom(name)
        assert atom["mass"] == info.mass
        assert atom["class"] == info.atomClass
        assert atom["element"] == (None if info.element is None else info.element.symbol)
    # and every particle's mass in the System is its type's mass
    for i, t in built.types.items():
        mass = built.system.getParticleMass(i).value_in_unit(openmm.unit.dalton)
        assert rel(amber.atom(t)["mass"], mass) <= TOLERANCE


def test_amber_types_have_no_charge_column(amber: ForceField) -> None:
    # charges come from residue templates (UseAttributeFromResidue), not types
    with pytest.raises(KeyError, match="charge"):
        amber.atom("protein-CT")["charge"]


def test_bonds_match_the_system(amber: ForceField, built: Built) -> None:
    force = built.force("HarmonicBondForce")
    seen: dict[tuple[str, ...], tuple[float, float]] = {}
    for i in range(force.getNumBonds()):
        a, b, length, k = force.getBondParameters(i)
        seen.setdefault(built.typed((a, b)), (length._value, k._value))
    assert len(seen) >= SAMPLE
    worst = 0.0
    for types, (length, k) in seen.items():
        match = amber.match("bond", types)
        worst = max(worst, rel(match["r0"], length), rel(2.0 * match["k"], k))
    assert worst <= TOLERANCE


def test_angles_match_the_system(amber: ForceField, built: Built) -> None:
    force = built.force("HarmonicAngleForce")
    seen: dict[tuple[str, ...], tuple[float, float]] = {}
    for i in range(force.getNumAngles()):
        a, b, c, theta, k = force.getAngleParameters(i)
        seen.setdefault(built.typed((a, b, c)), (theta._value, k._value))
    assert len(seen) >= SAMPLE
    worst = 0.0
    for types, (theta, k) in seen.items():
        match = amber.match("angle", types)
        worst = max(worst, rel(math.radians(match["theta0"]), theta), rel(2.0 * match["k"], k))
    assert worst <= TOLERANCE


def _torsions(built: Built) -> dict[tuple[int, ...], list[tuple[float, float, float]]]:
    force = built.force("PeriodicTorsionForce")
    terms: dict[tuple[int, ...], list[tuple[float, float, float]]] = defaultdict(list)
    for i in range(force.getNumTorsions()):
        a, b, c, d, n, phase, k = force.getTorsionParameters(i)
        terms[(a, b, c, d)].append((float(n), phase._value, k._value))
    return terms


def _series(params: Any, indexed: bool) -> list[tuple[float, float, float]]:
    """The (periodicity, phase in rad, k) terms a row states, k = 0 ones dropped (as OpenMM)."""
    if not indexed:
        return [(params["periodicity"], math.radians(params["phase"]), params["k"])]
    out = []
    m = 1
    while f"k{m}" in params.params and params[f"k{m}"] is not None:
        if params[f"k{m}"] != 0:
            term = (params[f"periodicity{m}"], math.radians(params[f"phase{m}"]), params[f"k{m}"])
            out.append(term)
        m += 1
    return out


def _worst(
    ours: list[tuple[float, float, float]], theirs: list[tuple[float, float, float]]
) -> float:
    assert len(ours) == len(theirs)
    return max(
        rel(x, y)
        for a, b in zip(sorted(ours), sorted(theirs), strict=True)
        for x, y in zip(a, b, strict=True)
    )


def test_proper_torsions_match_the_system(amber: ForceField, built: Built) -> None:
    seen: dict[tuple[str, ...], list[tuple[float, float, float]]] = {}
    for quartet, terms in _torsions(built).items():
        if built.is_proper(quartet):
            seen.setdefault(built.typed(quartet), terms)
    assert len(seen) >= SAMPLE
    worst = max(
        _worst(_series(amber.match("dihedral", t).matches[0].row, True), terms)
        for t, terms in seen.items()
    )
    assert worst <= TOLERANCE


def test_improper_torsions_match_the_system(amber: ForceField, built: Built) -> None:
    seen: dict[tuple[str, ...], list[tuple[float, float, float]]] = {}
    for quartet, terms in _torsions(built).items():
        if not built.is_proper(quartet):
            seen.setdefault(built.typed(quartet), terms)
    assert len(seen) >= 10  # villin holds only this many improper type quartets
    reordered = 0
    for types, terms in seen.items():
        match = _improper_match(amber, types)
        reordered += match.types != types
        assert _worst(_series(match.matches[0].row, False), terms) <= TOLERANCE
    assert reordered < len(seen)


def _improper_match(amber: ForceField, types: tuple[str, ...]) -> Any:
    """The match of OpenMM's atom order, else of another order of the three outer atoms.

    OpenMM's ``amber`` ordering sorts the outer atoms by element, residue and
    template index, not by type, so its order need not be the row's (the
    centre stays third).
    """
    a, b, centre, d = types
    for x, y, z in itertools.permutations((a, b, d)):
        try:
            return amber.match("improper", (x, y, centre, z))
        except NotFound:
            continue
    raise AssertionError(f"no improper row types {types} in any order")


def test_nonbonded_pairs_mix_as_openmm_does(amber: ForceField, built: Built) -> None:
    force = built.force("NonbondedForce")
    per_type: dict[str, tuple[float, float]] = {}
    for i, t in built.types.items():
        _, sigma, epsilon = force.getParticleParameters(i)
        per_type.setdefault(t, (sigma._value, epsilon._value))
    pairs = list(itertools.combinations_with_replacement(sorted(per_type), 2))
    assert len(pairs) >= SAMPLE
    worst = 0.0
    for a, b in pairs:
        (sa, ea), (sb, eb) = per_type[a], per_type[b]
        pair = amber.pair(a, b, "lj/cut")
        if a == b:
            assert pair.terms[0].values["epsilon"].source == "row"
        worst = max(
            worst, rel(pair["sigma"], (sa + sb) / 2), rel(pair["epsilon"], math.sqrt(ea * eb))
        )
    assert worst <= TOLERANCE


def test_one_four_pairs_are_the_weighted_pair(amber: ForceField, built: Built) -> None:
    force = built.force("NonbondedForce")
    assert amber.special_bonds is not None
    lj14 = amber.special_bonds["lj"][2]
    seen: dict[tuple[str, ...], tuple[float, float]] = {}
    for i in range(force.getNumExceptions()):
        a, b, _, sigma, epsilon = force.getExceptionParameters(i)
        if epsilon._value != 0:
            seen.setdefault(tuple(sorted(built.typed((a, b)))), (sigma._value, epsilon._value))
    assert len(seen) >= SAMPLE
    worst = 0.0
    for (a, b), (sigma, epsilon) in seen.items():
        pair = amber.pair(a, b, is_14=True)
        term = pair.term("lj/cut")
        assert term.weights == (0.0, 0.0, lj14)
        worst = max(worst, rel(pair["sigma"], sigma), rel(lj14 * pair["epsilon"], epsilon))
    assert worst <= TOLERANCE


def test_every_bond_row_is_found_by_its_name(amber: ForceField, built: Built) -> None:
    generator = next(
        g for g in built.ff.getGenerators() if type(g).__name__ == "HarmonicBondGenerator"
    )
    assert len(generator.types1) >= SAMPLE
    for types1, types2, length, k in zip(
        generator.types1, generator.types2, generator.length, generator.k, strict=True
    ):
        (t1,), (t2,) = types1, types2
        row = amber.term("bond", f"{t1}-{t2}")
        assert (row["r0"], 2.0 * row["k"]) == (length, k)


# -- CHARMM36 ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def charmm() -> ForceField:
    return from_openmm_xml(DATA / "charmm36.xml", ignore_scripts=True, charmm_pi_impropers=True)


def test_charmm36_imports_and_validates(charmm: ForceField) -> None:
    counts = {(s.category, s.style): charmm.tables[s.block].count for s in charmm.styles}
    assert counts["bond", "harmonic"] == 1135
    assert counts["angle", "charmm"] == 1497  # one per <UreyBradley>
    # an angle with a Urey-Bradley term left angle.harmonic: never priced twice
    ub = charmm.table("angle", "charmm")
    for ends in zip(*(ub[c].values.tolist() for c in ("itom", "jtom", "ktom")), strict=True):
        found = charmm.match("angle", ends)
        assert [m.row.style for m in found.matches] == ["charmm"]
    assert counts["cmap", "charmm"] == 8
    assert counts["improper", "harmonic"] == 188
    lj = charmm.style("pair", "lj/charmm")
    assert lj.params == {"mixing": "arithmetic", "one_four": "epsilon14"}
    assert charmm.special_bonds == {"lj": [0.0, 0.0, 1.0], "coul": [0.0, 0.0, 1.0]}
    assert charmm.document["ignored"][0].endswith("InitializationScript[1]")
    assert ForceField.from_dict(charmm.to_dict()) == charmm


def test_charmm36_cmap_grids_are_openmms_maps_from_minus_180(charmm: ForceField) -> None:
    omm = app.ForceField(str(DATA / "charmm36.xml"))
    generator = next(g for g in omm.getGenerators() if type(g).__name__ == "CMAPTorsionGenerator")
    table = charmm.table("cmap", "charmm")
    grids = table["grid"].values
    for row, torsion in enumerate(generator.torsions):
        energy = generator.maps[torsion.map]
        n = math.isqrt(len(energy))
        for i, j in itertools.product(range(n), repeat=2):
            assert grids[row][(i + n // 2) % n][(j + n // 2) % n] == energy[i + n * j]


def test_charmm36_nbfix_and_14_values(charmm: ForceField) -> None:
    pair = charmm.pair("CRL1", "HAL2")
    term = pair.term("lj/charmm")
    assert term.cross and term.values["epsilon"].source == "cross_row"
    assert pair["epsilon"] == 0.1343064
    assert pair["sigma"] == 0.2984510705770137


def test_charmm36_refuses_its_script_and_pi_impropers_by_default() -> None:
    with pytest.raises(InvalidRecord, match=r"<InitializationScript> runs Python"):
        from_openmm_xml(DATA / "charmm36.xml", charmm_pi_impropers=True)
    with pytest.raises(InvalidRecord, match=r"Improper\[67\]@theta0.*only for theta0 = 0"):
        from_openmm_xml(DATA / "charmm36.xml", ignore_scripts=True)
