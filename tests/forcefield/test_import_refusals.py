"""Every refusal of the OpenMM XML translator (forcefield.md §9.1), fed a small bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from mrecd import InvalidRecord, NotFound
from mrecd.forcefield import from_openmm_xml

TYPES = """
<AtomTypes>
  <Type name="A" class="CA" element="C" mass="12.01"/>
  <Type name="B" class="CB" element="H" mass="1.008"/>
</AtomTypes>
"""


def write(tmp_path: Path, body: str, name: str = "ff.xml", types: bool = True) -> Path:
    path = tmp_path / name
    path.write_text(f"<ForceField>{TYPES if types else ''}{body}</ForceField>")
    return path


def test_a_minimal_file_translates(tmp_path: Path) -> None:
    body = (
        '<HarmonicBondForce><Bond type1="A" type2="B" length="0.1" k="1000"/></HarmonicBondForce>'
    )
    ff = from_openmm_xml(write(tmp_path, body))
    assert ff.term("bond", "A-B")["k"] == 500.0
    assert ff.document["source"]["uri"].endswith("ff.xml")


REFUSED = [
    (
        '<HarmonicBondForce><Bond type1="A" length="0.1" k="1"/></HarmonicBondForce>',
        r"Bond\[1\]: endpoint 2 names neither of class2 and type2",
    ),
    (
        '<HarmonicBondForce><Bond type1="A" class1="CA" type2="B" length="0.1" k="1"/>'
        "</HarmonicBondForce>",
        "endpoint 1 names both",
    ),
    (
        '<HarmonicBondForce><Bond type1="A" class2="CB" length="0.1" k="1"/></HarmonicBondForce>',
        "not a mix of both",
    ),
    (
        '<HarmonicBondForce><Bond type1="A" type2="B" length="0.1" k="1"/>'
        '<Bond class1="CA" class2="CA" length="0.1" k="1"/></HarmonicBondForce>',
        r"Bond\[2\]: this row keys on class but .*Bond\[1\] keyed bond.harmonic on type",
    ),
    (
        '<HarmonicBondForce><Bond type1="A" type2="B" length="0.1"/></HarmonicBondForce>',
        "needs attribute 'k'",
    ),
    (
        '<HarmonicBondForce><Bond type1="A" type2="B" length="short" k="1"/></HarmonicBondForce>',
        r"@length: length='short' is not a number",
    ),
    (
        '<HarmonicBondForce><Bond type1="A" type2="B" length="nan" k="1"/></HarmonicBondForce>',
        "is not finite",
    ),
    (
        '<HarmonicBondForce><Bond type1="A" type2="B" length="0.1" k="1" kb="2"/>'
        "</HarmonicBondForce>",
        r"attribute\(s\) \['kb'\] of <Bond> are not understood",
    ),
    (
        '<HarmonicBondForce><Angle type1="A" type2="B" type3="A" angle="1" k="1"/>'
        "</HarmonicBondForce>",
        "<Angle> inside <HarmonicBondForce> has no molrec form",
    ),
    ("<GBSAOBCForce/>", "<GBSAOBCForce> is not a force this translator maps"),
    ("<Script>print(1)</Script>", "<Script> runs Python inside OpenMM"),
    (
        '<PeriodicTorsionForce ordering="smirnoff"/>',
        "ordering='smirnoff': OpenMM sums several atom orders",
    ),
    (
        '<PeriodicTorsionForce><Improper type1="A" type2="B" type3="B" type4="B" k1="1"'
        ' periodicity1="2" phase1="0" k2="1" periodicity2="3" phase2="0"/></PeriodicTorsionForce>',
        "an <Improper> with 2 terms: improper.periodic has one",
    ),
    (
        '<PeriodicTorsionForce><Proper type1="A" type2="B" type3="B" type4="B"/>'
        "</PeriodicTorsionForce>",
        "has no k1/periodicity1/phase1 term",
    ),
    (
        '<PeriodicTorsionForce><Proper type1="A" type2="B" type3="B" type4="B" c0="1" c1="1"'
        ' c2="1" c3="1"/></PeriodicTorsionForce>',
        "OPLS-form",
    ),
    (
        '<RBTorsionForce><Improper type1="A" type2="B" type3="B" type4="B" c0="1"/>'
        "</RBTorsionForce>",
        "an RB <Improper> is refused",
    ),
    (
        '<CustomTorsionForce energy="k*cos(theta)"><PerTorsionParameter name="k"/>'
        "</CustomTorsionForce>",
        "only .* map \\(improper.harmonic\\)",
    ),
    (
        '<CustomTorsionForce energy="k*(theta-theta0)^2"><PerTorsionParameter name="k"/>'
        '<PerTorsionParameter name="theta0"/><Improper type1="A" type2="B" type3="B" type4="B"'
        ' k="1" theta0="0.5"/></CustomTorsionForce>',
        r"Improper\[1\]@theta0: theta0=0.5 .* only for theta0 = 0",
    ),
    (
        '<CustomTorsionForce energy="k*(theta-theta0)^2"><PerTorsionParameter name="k"/>'
        "</CustomTorsionForce>",
        "expected k and theta0",
    ),
    (
        '<AmoebaUreyBradleyForce><UreyBradley type1="" type2="B" type3="A" k="1" d="0.2"/>'
        "</AmoebaUreyBradleyForce>",
        "a Urey-Bradley row with a wildcard is refused",
    ),
    (
        "<CMAPTorsionForce><Map>1 2 3 4 5 6 7 8 9</Map></CMAPTorsionForce>",
        "a <Map> of 9 values is not an even N x N grid",
    ),
    (
        '<CMAPTorsionForce><Map>1 2 3 4</Map><Torsion type1="A" type2="A" type3="A" type4="A"'
        ' type5="A" map="1"/></CMAPTorsionForce>',
        r"@map: map=1.0 names none of the 1 maps",
    ),
    (
        '<NonbondedForce coulomb14scale="0.8" lj14scale="0.5"><Atom type="A" class="CA"'
        ' sigma="0.3" epsilon="0.1"/></NonbondedForce>',
        "an <Atom> names exactly one of type and class",
    ),
    (
        '<NonbondedForce coulomb14scale="1" lj14scale="1"><Atom type="A" charge="0" sigma="0.3"'
        ' epsilon="0.1"/></NonbondedForce><LennardJonesForce lj14scale="1"><Atom type="A"'
        ' sigma="0.3" epsilon="0.1"/></LennardJonesForce>',
        "two LJ forces are refused",
    ),
    (
        '<NonbondedForce coulomb14scale="1" lj14scale="1"/><LennardJonesForce lj14scale="1">'
        '<NBFixPair type1="A" type2="A" sigma="0.3" epsilon="0.1"/></LennardJonesForce>',
        "an <NBFixPair> of a type with itself is refused",
    ),
    (
        '<AtomTypes><Type name="A" class="CA" mass="1"/></AtomTypes>',
        "atom type 'A' is already defined at",
    ),
    ('<Include file="missing.xml"/>', "no OpenMM XML file at"),
]


@pytest.mark.parametrize(("body", "message"), REFUSED)
def test_each_mapping_error_is_refused_by_name(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises((InvalidRecord, NotFound), match=message):
        from_openmm_xml(write(tmp_path, body))


def test_a_doctype_and_its_entities_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "bomb.xml"
    path.write_text('<!DOCTYPE ForceField [<!ENTITY a "aaaa">]><ForceField>&a;</ForceField>')
    with pytest.raises(InvalidRecord, match="a DOCTYPE declaration is refused"):
        from_openmm_xml(path)


def test_an_undeclared_entity_is_not_well_formed(tmp_path: Path) -> None:
    path = tmp_path / "ent.xml"
    path.write_text("<ForceField>&ext;</ForceField>")
    with pytest.raises(InvalidRecord, match="not well-formed XML"):
        from_openmm_xml(path)


def test_a_root_other_than_forcefield_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "residues.xml"
    path.write_text("<Residues/>")
    with pytest.raises(InvalidRecord, match="the root element is <Residues>"):
        from_openmm_xml(path)


def test_files_disagreeing_on_14_scales_are_refused(tmp_path: Path) -> None:
    a = write(tmp_path, '<NonbondedForce coulomb14scale="0.8" lj14scale="0.5"/>', "a.xml")
    b = write(tmp_path, '<NonbondedForce coulomb14scale="1.0" lj14scale="0.5"/>', "b.xml", False)
    with pytest.raises(InvalidRecord, match=r"coulomb14scale=1.0 differs from 0.8 at .*a.xml"):
        from_openmm_xml([a, b])


def test_an_include_cycle_is_refused(tmp_path: Path) -> None:
    write(tmp_path, '<Include file="b.xml"/>', "a.xml")
    write(tmp_path, '<Include file="a.xml"/>', "b.xml", False)
    with pytest.raises(InvalidRecord, match="an <Include> cycle"):
        from_openmm_xml(tmp_path / "a.xml")


def test_a_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no OpenMM XML file"):
        from_openmm_xml(tmp_path / "absent.xml")


def test_no_file_at_all_is_refused() -> None:
    with pytest.raises(InvalidRecord, match="no OpenMM XML file given"):
        from_openmm_xml([])
