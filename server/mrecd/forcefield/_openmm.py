"""Translator: OpenMM ForceField XML -> a force-field section (forcefield.md §9.1).

Reads the files ``openmm.app.ForceField`` loads (``amber14/protein.ff14SB.xml``,
``charmm36.xml`` ...) with the standard library only; OpenMM itself is not
needed. Numbers keep OpenMM's lengths, energies and charges (nm, kJ/mol, e);
angle values become degrees and harmonic constants lose OpenMM's ½ (the IR's
``k·(x − x0)²``). Whatever the IR cannot state is refused, naming the element
and the rule, never guessed or dropped.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NoReturn

from ..errors import InvalidRecord, NotFound
from ._build import TableBuilder, assemble, file_digest
from ._model import ForceField
from ._safexml import parse_xml

__all__ = ["OPENMM_UNITS", "from_openmm_xml"]

#: The units of an imported OpenMM file: OpenMM's own, angles in degrees (§2.2, §9).
OPENMM_UNITS: Final = {
    "length": "nm",
    "energy": "kJ/mol",
    "angle": "degree",
    "charge": "e",
    "mass": "dalton",
}
#: Coulomb's constant in kJ·nm/(mol·e²), as OpenMM uses it (§9.1).
COULOMB: Final = 138.93545764438198
_DEGREES: Final = 180.0 / math.pi  # the double nearest 180/π (§11.1)
#: OpenMM's tolerance on 1-4 scales restated by several files (NonbondedGenerator.SCALETOL).
_SCALE_TOLERANCE: Final = 1e-5
_IMPROPER_ORDERINGS: Final = frozenset({"default", "amber", "charmm"})
_MIXING: Final = {"lorentz": "arithmetic", "arithmetic": "arithmetic", "geometric": "geometric"}
_SKIPPED: Final = frozenset({"Info", "Residues", "Patches"})
_SCRIPTS: Final = frozenset({"Script", "InitializationScript"})
_HARMONIC_IMPROPER: Final = {"k*(theta-theta0)^2": False, "k*(abs(theta)-theta0)^2": True}


def _refuse(where: str, message: str) -> NoReturn:
    raise InvalidRecord(message, path=where)


@dataclass(frozen=True)
class _Node:
    """An element and where it is, for messages: ``file: Force/Row[3]``."""

    elem: ET.Element
    where: str

    @property
    def attrib(self) -> dict[str, str]:
        return self.elem.attrib

    def children(self, allowed: Iterable[str] | None) -> list[_Node]:
        """The child elements (``allowed`` tags only; ``None``: any)."""
        permitted = None if allowed is None else set(allowed)
        counts: dict[str, int] = {}
        out = []
        for child in self.elem:
            if permitted is not None and child.tag not in permitted:
                _refuse(
                    f"{self.where}/{child.tag}",
                    f"<{child.tag}> inside <{self.elem.tag}> has no molrec form; expected"
                    f" {sorted(permitted)} (§9.1)",
                )
            counts[child.tag] = counts.get(child.tag, 0) + 1
            out.append(_Node(child, f"{self.where}/{child.tag}[{counts[child.tag]}]"))
        return out

    def check_attributes(self, allowed: Iterable[str]) -> None:
        unknown = sorted(set(self.attrib) - set(allowed))
        if unknown:
            _refuse(
                self.where,
                f"attribute(s) {unknown} of <{self.elem.tag}> are not understood; refused rather"
                " than dropped (§9.1)",
            )

    def number(self, name: str, *, default: float | None = None) -> float:
        text = self.attrib.get(name)
        if text is None:
            if default is not None:
                return default
            _refuse(self.where, f"<{self.elem.tag}> needs attribute {name!r} (§9.1)")
        try:
            value = float(text)
        except ValueError:
            _refuse(f"{self.where}@{name}", f"{name}={text!r} is not a number")
        if not math.isfinite(value):
            _refuse(f"{self.where}@{name}", f"{name}={text!r} is not finite")
        return value

    def labels(self, n: int) -> tuple[str, tuple[str, ...]]:
        """``(kind, labels)``: the row's ``class<i>`` or ``type<i>`` values, ``""`` = wildcard."""
        kinds, labels = set(), []
        for i in range(1, n + 1):
            has_class, has_type = f"class{i}" in self.attrib, f"type{i}" in self.attrib
            if has_class == has_type:
                state = "both" if has_class else "neither"
                _refuse(
                    self.where,
                    f"endpoint {i} names {state} of class{i} and type{i}; a row names exactly one"
                    " (§9.1)",
                )
            kind = "class" if has_class else "type"
            kinds.add(kind)
            labels.append(self.attrib[f"{kind}{i}"])
        if len(kinds) > 1:
            _refuse(self.where, "a row keys on class<n> or type<n>, not a mix of both (§4, §9.1)")
        return kinds.pop(), tuple(labels)


def _labels_attributes(n: int) -> set[str]:
    return {f"{k}{i}" for k in ("class", "type") for i in range(1, n + 1)}


@dataclass
class _Table:
    """A style table being filled, and which key (class or type) its rows use."""

    builder: TableBuilder
    origin: str | None = None  # where the first row set the key

    def add(self, node: _Node, kind: str, labels: Sequence[str], values: dict[str, Any]) -> str:
        if self.origin is None:
            self.builder.endpoint_key, self.origin = kind, node.where
        elif kind != self.builder.endpoint_key:
            _refuse(
                node.where,
                f"this row keys on {kind} but {self.origin} keyed"
                f" {self.builder.category}.{self.builder.style} on {self.builder.endpoint_key};"
                " one table keys on one (§4)",
            )
        return self.builder.add(labels, values)


def _table(category: str, style: str, arity: int) -> _Table:
    return _Table(TableBuilder(category, style, arity=arity))


@dataclass
class _Nonbonded:
    """What the ``<NonbondedForce>`` and ``<LennardJonesForce>`` elements say, over all files."""

    scales: dict[str, tuple[float, str]] = field(default_factory=dict)
    charges: dict[str, float] = field(default_factory=dict)
    lj: dict[str, tuple[float, float, str]] = field(default_factory=dict)  # type -> σ, ε, where
    charmm: dict[str, tuple[dict[str, float], str]] = field(default_factory=dict)
    nbfix: list[tuple[_Node, str, tuple[str, ...], float, float]] = field(default_factory=list)
    seen_nonbonded: bool = False
    seen_lj_force: bool = False


class _Reader:
    """All files of one import: atom types first, then every force, then the section."""

    def __init__(self, *, ignore_scripts: bool, charmm_pi_impropers: bool) -> None:
        self.ignore_scripts = ignore_scripts
        self.charmm_pi_impropers = charmm_pi_impropers
        self.ignored: list[str] = []
        self.types: dict[str, dict[str, Any]] = {}
        self.type_origin: dict[str, str] = {}
        self.names: list[str] = []
        self.mixing: tuple[str, str] | None = None
        self.files: list[dict[str, Any]] = []
        self.bonds = _table("bond", "harmonic", 2)
        self.angles = _table("angle", "harmonic", 3)
        self.urey_bradley: list[tuple[_Node, str, tuple[str, ...], float, float]] = []
        self.propers = _table("dihedral", "periodic", 4)
        self.rb = _table("dihedral", "multi/harmonic", 4)
        self.rb_long = _table("dihedral", "nharmonic", 4)
        self.impropers = _table("improper", "periodic", 4)
        self.harmonic_impropers = _table("improper", "harmonic", 4)
        self.cmaps = _table("cmap", "charmm", 5)
        self.nonbonded = _Nonbonded()

    # -- files ----------------------------------------------------------------------------

    def read(self, path: Path, stack: tuple[Path, ...] = ()) -> list[tuple[Path, _Node]]:
        """The file and, in load order, the files it ``<Include>``s (before it, as OpenMM)."""
        resolved = path.resolve()
        if resolved in stack:
            _refuse(str(path), "an <Include> cycle")
        try:
            root = parse_xml(path)
        except (FileNotFoundError, IsADirectoryError):
            raise NotFound(f"no OpenMM XML file at {path}", path=str(path)) from None
        if root.tag != "ForceField":
            _refuse(str(path), f"the root element is <{root.tag}>, not <ForceField>")
        node = _Node(root, str(path))
        out: list[tuple[Path, _Node]] = []
        for child in node.children(None):
            if child.elem.tag == "Include":
                child.check_attributes({"file"})
                target = child.attrib.get("file")
                if not target:
                    _refuse(child.where, "<Include> needs a file attribute")
                out += self.read(path.parent / target, (*stack, resolved))
        out.append((path, node))
        self._provenance(path, node)
        return out

    def _provenance(self, path: Path, node: _Node) -> None:
        sources = [
            (s.text or "").strip()
            for info in node.elem.findall("Info")
            for s in info.findall("Source")
        ]
        self.files.append(
            {"uri": os.fspath(path), "sha256": file_digest(path), "info_sources": sources}
        )
        name = node.attrib.get("name")
        self.names.append(name if name else path.stem)
        rule = node.attrib.get("combining_rule")
        if rule is not None:
            if rule not in _MIXING:
                _refuse(
                    f"{node.where}@combining_rule",
                    f"combining_rule={rule!r} is not one of {sorted(_MIXING)} (§9.1)",
                )
            if self.mixing is not None and self.mixing[0] != _MIXING[rule]:
                _refuse(node.where, f"combining_rule differs from {self.mixing[1]}")
            self.mixing = (_MIXING[rule], node.where)
        node.check_attributes({"name", "combining_rule", "version"})

    # -- atom types -----------------------------------------------------------------------

    def atom_types(self, node: _Node) -> None:
        for block in node.elem.findall("AtomTypes"):
            where = f"{node.where}/AtomTypes"
            for row in _Node(block, where).children({"Type"}):
                self._atom_type(row)

    def _atom_type(self, row: _Node) -> None:
        row.check_attributes(
            {"name", "class", "element", "mass", "def", "desc", "doi", "overrides"}
        )
        name = row.attrib.get("name")
        if not name:
            _refuse(row.where, "<Type> needs a non-empty name (§9.1)")
        if name in self.types:
            _refuse(row.where, f"atom type {name!r} is already defined at {self.type_origin[name]}")
        mass = row.number("mass") if "mass" in row.attrib else None
        text = {
            k: row.attrib.get(k) for k in ("class", "element", "def", "desc", "doi", "overrides")
        }
        self.types[name] = {
            "class": text["class"],
            "element": text["element"] or None,
            "mass": mass,
            "smarts": text["def"],
            "desc": text["desc"],
            "doi": text["doi"],
            "overrides": text["overrides"],
        }
        self.type_origin[name] = row.where

    def types_of(self, kind: str, label: str) -> list[str]:
        """The atom types a nonbonded ``type=``/``class=`` attribute names."""
        if kind == "type":
            return [label]
        return [t for t, row in self.types.items() if row["class"] == label]

    # -- forces ---------------------------------------------------------------------------

    def force(self, node: _Node) -> None:
        tag = node.elem.tag
        if tag in _SKIPPED or tag in ("Include", "AtomTypes"):
            return
        if tag in _SCRIPTS:
            if not self.ignore_scripts:
                _refuse(
                    node.where,
                    f"<{tag}> runs Python inside OpenMM; a translator cannot know its effect and"
                    " refuses it (§9.1); pass ignore_scripts=True (CLI --ignore-scripts) to skip"
                    " it, recorded under the document key 'ignored'",
                )
            self.ignored.append(node.where)
            return
        handler = _HANDLERS.get(tag)
        if handler is None:
            _refuse(
                node.where,
                f"<{tag}> is not a force this translator maps (§9.1: harmonic bonds and angles,"
                " Urey-Bradley, periodic/RB/harmonic-improper torsions, CMAP, nonbonded,"
                " Lennard-Jones)",
            )
        handler(self, node)

    def harmonic_bonds(self, node: _Node) -> None:
        node.check_attributes(())
        for row in node.children({"Bond"}):
            row.check_attributes({*_labels_attributes(2), "length", "k"})
            kind, labels = row.labels(2)
            values = {"k": row.number("k") / 2.0, "r0": row.number("length")}
            self.bonds.add(row, kind, labels, values)

    def harmonic_angles(self, node: _Node) -> None:
        node.check_attributes(())
        for row in node.children({"Angle"}):
            row.check_attributes({*_labels_attributes(3), "angle", "k"})
            kind, labels = row.labels(3)
            values = {"k": row.number("k") / 2.0, "theta0": row.number("angle") * _DEGREES}
            self.angles.add(row, kind, labels, values)

    def urey_bradleys(self, node: _Node) -> None:
        node.check_attributes(())
        for row in node.children({"UreyBradley"}):
            row.check_attributes({*_labels_attributes(3), "k", "d"})
            kind, labels = row.labels(3)
            if "" in labels:
                _refuse(row.where, "a Urey-Bradley row with a wildcard is refused (§9.1)")
            self.urey_bradley.append((row, kind, labels, row.number("k"), row.number("d")))

    def periodic_torsions(self, node: _Node) -> None:
        node.check_attributes({"ordering"})
        ordering = node.attrib.get("ordering", "default")
        if ordering not in _IMPROPER_ORDERINGS:
            _refuse(
                f"{node.where}@ordering",
                f"ordering={ordering!r}: OpenMM sums several atom orders there and"
                " improper.periodic prices one (§9.1); supported: default, amber, charmm",
            )
        for row in node.children({"Proper", "Improper"}):
            kind, labels = row.labels(4)
            terms = _fourier_terms(row)
            if row.elem.tag == "Proper":
                values: dict[str, float] = {}
                for m, (n, phase, k) in enumerate(terms, start=1):
                    values |= {f"k{m}": k, f"periodicity{m}": n, f"phase{m}": phase * _DEGREES}
                self.propers.add(row, kind, labels, values)
                continue
            if len(terms) != 1:
                _refuse(
                    row.where,
                    f"an <Improper> with {len(terms)} terms: improper.periodic has one (§9.1)",
                )
            n, phase, k = terms[0]
            ordered = _improper_order(labels, as_written=ordering == "charmm" and "" not in labels)
            values = {"k": k, "periodicity": n, "phase": phase * _DEGREES}
            self.impropers.add(row, kind, ordered, values)

    def rb_torsions(self, node: _Node) -> None:
        node.check_attributes(())
        for row in node.children({"Proper", "Improper"}):
            if row.elem.tag == "Improper":
                _refuse(row.where, "an RB <Improper> is refused (§9.1)")
            row.check_attributes({*_labels_attributes(4), *(f"c{n}" for n in range(6))})
            kind, labels = row.labels(4)
            c = [row.number(f"c{n}", default=0.0) for n in range(6)]
            # RB ψ = φ − 180°, so cosⁿψ = (−1)ⁿ cosⁿφ (§9.1).
            a = {f"a{n + 1}": -c[n] if n % 2 else c[n] for n in range(6)}
            if c[5] == 0.0:
                del a["a6"]
                self.rb.add(row, kind, labels, a)
            else:
                self.rb_long.add(row, kind, labels, a)

    def custom_torsions(self, node: _Node) -> None:
        node.check_attributes({"energy", "ordering"})
        energy = "".join(node.attrib.get("energy", "").split())
        if energy not in _HARMONIC_IMPROPER:
            _refuse(
                f"{node.where}@energy",
                f"CustomTorsionForce energy={node.attrib.get('energy')!r}: only"
                f" {sorted(_HARMONIC_IMPROPER)} map (improper.harmonic); other custom forces are"
                " refused, not guessed (§9.1)",
            )
        if node.attrib.get("ordering", "charmm") != "charmm":
            _refuse(f"{node.where}@ordering", "a harmonic CustomTorsionForce maps only as charmm")
        params = [p.attrib.get("name") for p in node.elem.findall("PerTorsionParameter")]
        if sorted(str(p) for p in params) != ["k", "theta0"]:
            _refuse(node.where, f"per-torsion parameters {params}: expected k and theta0 (§9.1)")
        signed = not _HARMONIC_IMPROPER[energy]
        for row in node.children({"PerTorsionParameter", "Improper"}):
            if row.elem.tag == "Improper":
                self._harmonic_improper(row, signed)

    def _harmonic_improper(self, row: _Node, signed: bool) -> None:
        row.check_attributes({*_labels_attributes(4), "k", "theta0"})
        kind, labels = row.labels(4)
        theta0 = row.number("theta0")
        chi0 = theta0 * _DEGREES
        if signed and theta0 != 0.0:
            if not (self.charmm_pi_impropers and theta0 == math.pi):
                _refuse(
                    f"{row.where}@theta0",
                    f"theta0={theta0!r} in k*(theta-theta0)^2 (signed theta) equals"
                    " improper.harmonic k*(|phi|-chi0)^2 only for theta0 = 0 (§9.1);"
                    " charmm_pi_impropers=True (CLI --charmm-pi-impropers) stores theta0 = pi as"
                    " chi0 = 180 deg, CHARMM's own wrapped form",
                )
            chi0 = 180.0
        ordered = labels if "" not in labels else _improper_order(labels, as_written=False)
        self.harmonic_impropers.add(row, kind, ordered, {"k": row.number("k"), "chi0": chi0})

    def cmap_torsions(self, node: _Node) -> None:
        node.check_attributes(())
        grids: list[list[list[float]]] = []
        for row in node.children({"Map", "Torsion"}):
            if row.elem.tag == "Map":
                row.check_attributes(())
                grids.append(_cmap_grid(row))
                continue
            row.check_attributes({*_labels_attributes(5), "map"})
            kind, labels = row.labels(5)
            index = row.number("map")
            if not index.is_integer() or not 0 <= index < len(grids):
                _refuse(f"{row.where}@map", f"map={index!r} names none of the {len(grids)} maps")
            self.cmaps.add(row, kind, labels, {"grid": grids[int(index)]})

    def nonbonded_force(self, node: _Node) -> None:
        node.check_attributes({"coulomb14scale", "lj14scale", "useDispersionCorrection"})
        self.nonbonded.seen_nonbonded = True
        for scale in ("coulomb14scale", "lj14scale"):
            self._scale(node, scale, node.number(scale))
        for row in node.children({"Atom", "UseAttributeFromResidue"}):
            if row.elem.tag == "UseAttributeFromResidue":
                row.check_attributes({"name"})
                continue  # a per-residue value: the system's atoms.charge, no table
            row.check_attributes({"type", "class", "charge", "sigma", "epsilon"})
            for t in self._nonbonded_types(row):
                self._nonbonded_atom(row, t)

    def _nonbonded_types(self, row: _Node) -> list[str]:
        has_type, has_class = "type" in row.attrib, "class" in row.attrib
        if has_type == has_class:
            _refuse(row.where, "an <Atom> names exactly one of type and class (§9.1)")
        kind = "type" if has_type else "class"
        # A label no atom type carries is skipped, as OpenMM skips it.
        return [t for t in self.types_of(kind, row.attrib[kind]) if t in self.types]

    def _nonbonded_atom(self, row: _Node, t: str) -> None:
        if "charge" in row.attrib:
            self.nonbonded.charges[t] = row.number("charge")
        sigma, epsilon = row.number("sigma"), row.number("epsilon")
        previous = self.nonbonded.lj.get(t)
        if previous is not None and previous[:2] != (sigma, epsilon):
            _refuse(row.where, f"type {t!r} already has other LJ parameters at {previous[2]}")
        self.nonbonded.lj[t] = (sigma, epsilon, row.where)

    def _scale(self, node: _Node, name: str, value: float) -> None:
        first = self.nonbonded.scales.get(name)
        if first is None:
            self.nonbonded.scales[name] = (value, node.where)
        elif abs(first[0] - value) > _SCALE_TOLERANCE:
            _refuse(
                f"{node.where}@{name}", f"{name}={value!r} differs from {first[0]!r} at {first[1]}"
            )

    def lennard_jones_force(self, node: _Node) -> None:
        node.check_attributes({"lj14scale", "useDispersionCorrection"})
        if self.nonbonded.seen_lj_force:
            _refuse(node.where, "a second <LennardJonesForce>: one pair.lj/charmm table holds one")
        self.nonbonded.seen_lj_force = True
        self._scale(node, "lj_force14scale", node.number("lj14scale", default=1.0))
        for row in node.children({"Atom", "NBFixPair"}):
            if row.elem.tag == "Atom":
                row.check_attributes({"type", "class", "sigma", "epsilon", "sigma14", "epsilon14"})
                values = {"sigma": row.number("sigma"), "epsilon": row.number("epsilon")}
                for key in ("sigma14", "epsilon14"):
                    if key in row.attrib:
                        values[key] = row.number(key)
                for t in self._nonbonded_types(row):
                    self.nonbonded.charmm[t] = (values, row.where)
                continue
            row.check_attributes({*_labels_attributes(2), "sigma", "epsilon"})
            kind, labels = row.labels(2)
            if labels[0] == labels[1]:
                _refuse(row.where, "an <NBFixPair> of a type with itself is refused (§9.1)")
            sigma, epsilon = row.number("sigma"), row.number("epsilon")
            self.nonbonded.nbfix.append((row, kind, labels, sigma, epsilon))

    # -- the section ----------------------------------------------------------------------

    def section(self, name: str | None, where: str) -> ForceField:
        tables = [self._atom_table(), *self._bonded_tables(), *self._pair_tables()]
        document: dict[str, Any] = {
            "name": name if name is not None else "+".join(self.names),
            "units": dict(OPENMM_UNITS),
            "source": self._source(),
        }
        if len(self.files) > 1:
            document["source_files"] = self.files
        weights = self._special_bonds()
        if weights is not None:
            document["special_bonds"] = weights
        if self.ignored:
            document["ignored"] = self.ignored
        return assemble(document, [t for t in tables if t is not None], where=where)

    def _source(self) -> dict[str, Any]:
        source: dict[str, Any] = {"format": "openmm-xml"}
        if len(self.files) == 1:
            only = self.files[0]
            infos = only["info_sources"]
            source["uri"] = infos[0] if len(infos) == 1 else only["uri"]
            source["sha256"] = only["sha256"]
        return source

    def _atom_table(self) -> TableBuilder:
        table = TableBuilder("atom", "full")
        for t, row in self.types.items():
            values = {k: v for k, v in row.items()}
            if self.nonbonded.charges:
                values["charge"] = self.nonbonded.charges.get(t)
            table.add((), values, name=t)
        return table

    def _bonded_tables(self) -> list[TableBuilder | None]:
        charmm_angles = self._join_urey_bradley()
        out = [self.bonds.builder, self.angles.builder, charmm_angles]
        out += [t.builder for t in (self.propers, self.rb, self.rb_long, self.impropers)]
        out += [self.harmonic_impropers.builder, self.cmaps.builder]
        return [t if t is not None and t.rows else None for t in out]

    def _join_urey_bradley(self) -> TableBuilder | None:
        """Angles with a Urey-Bradley term move to ``angle.charmm`` (never priced twice)."""
        if not self.urey_bradley:
            return None
        angles = self.angles.builder
        by_labels: dict[tuple[str, ...], int] = {}
        for index, row in enumerate(angles.rows):
            ends = (row["itom"], row["jtom"], row["ktom"])
            by_labels.setdefault(ends, index)
            by_labels.setdefault(ends[::-1], index)  # OpenMM matches either direction
        joined = _table("angle", "charmm", 3)
        moved: set[int] = set()
        for node, kind, labels, k, d in self.urey_bradley:
            found = by_labels.get(labels)
            if found is not None and angles.endpoint_key != kind:
                _refuse(node.where, f"keys on {kind}; the angles key on {angles.endpoint_key}")
            base = {"k": 0.0, "theta0": None} if found is None else angles.rows[found]
            values = {"k": base["k"], "theta0": base["theta0"], "k_ub": k, "r_ub": d}
            joined.add(node, kind, labels, values)
            if found is not None:
                moved.add(found)
        kept = [row for i, row in enumerate(angles.rows) if i not in moved]
        rebuilt = TableBuilder("angle", "harmonic", endpoint_key=angles.endpoint_key, arity=3)
        for row in kept:
            rebuilt.add((row["itom"], row["jtom"], row["ktom"]), _values(row), name=row["name"])
        self.angles.builder = rebuilt
        return joined.builder

    def _pair_tables(self) -> list[TableBuilder | None]:
        nb = self.nonbonded
        if not nb.seen_nonbonded:
            if nb.seen_lj_force:
                _refuse("LennardJonesForce", "a <LennardJonesForce> needs a <NonbondedForce>")
            return []
        coulomb = {"coulomb": COULOMB}
        if nb.seen_lj_force:
            return [self._charmm_lj(), TableBuilder("pair", "coul/charmm", coulomb, arity=2)]
        mixing = self.mixing[0] if self.mixing is not None else "arithmetic"
        lj = TableBuilder("pair", "lj/cut", {"mixing": mixing}, arity=2)
        for t, (sigma, epsilon, _) in nb.lj.items():
            lj.add((t, t), {"epsilon": epsilon, "sigma": sigma}, name=t)
        return [lj, TableBuilder("pair", "coul/cut", coulomb, arity=2)]

    def _charmm_lj(self) -> TableBuilder:
        nb = self.nonbonded
        for t, (_, epsilon, where) in nb.lj.items():
            if epsilon != 0.0:
                _refuse(
                    where,
                    f"type {t!r} has epsilon {epsilon!r} in <NonbondedForce> beside a"
                    " <LennardJonesForce>: two LJ forces are refused (§9.1)",
                )
        lj = TableBuilder("pair", "lj/charmm", {"mixing": "arithmetic"}, arity=2)
        differs = False
        for t, (values, _) in nb.charmm.items():
            row = {k: values.get(k) for k in ("epsilon", "sigma", "epsilon14", "sigma14")}
            differs |= any(
                row[k + "14"] is not None and row[k + "14"] != row[k] for k in ("epsilon", "sigma")
            )
            lj.add((t, t), row, name=t)
        for _, kind, labels, sigma, epsilon in nb.nbfix:
            for a in self.types_of(kind, labels[0]):
                for b in self.types_of(kind, labels[1]):
                    lj.add((a, b), {"epsilon": epsilon, "sigma": sigma}, name=f"{a}~{b}")
        if differs:
            lj.params["one_four"] = "epsilon14"
        return lj

    def _special_bonds(self) -> dict[str, list[float]] | None:
        scales = self.nonbonded.scales
        if "coulomb14scale" not in scales:
            return None
        lj = scales.get("lj_force14scale", scales["lj14scale"])[0]
        return {"lj": [0.0, 0.0, lj], "coul": [0.0, 0.0, scales["coulomb14scale"][0]]}


def _values(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("name", "itom", "jtom", "ktom")}


def _fourier_terms(row: _Node) -> list[tuple[float, float, float]]:
    """``[(periodicity, phase in rad, k), ...]`` of a ``<Proper>``/``<Improper>``, in order."""
    if "c0" in row.attrib:
        _refuse(row.where, "a c0..c3 (OPLS-form) periodic torsion is not translated yet")
    allowed = _labels_attributes(4)
    terms = []
    m = 1
    while f"k{m}" in row.attrib:
        allowed |= {f"k{m}", f"periodicity{m}", f"phase{m}"}
        terms.append((row.number(f"periodicity{m}"), row.number(f"phase{m}"), row.number(f"k{m}")))
        m += 1
    row.check_attributes(allowed)
    if not terms:
        _refuse(row.where, f"<{row.elem.tag}> has no k1/periodicity1/phase1 term")
    return terms


def _improper_order(labels: Sequence[str], *, as_written: bool) -> tuple[str, ...]:
    """OpenMM's improper (c1 centre) as the IR's AMBER order (c2, c3, c1, c4) (§7.5, §9.1)."""
    c1, c2, c3, c4 = labels
    return (c1, c2, c3, c4) if as_written else (c2, c3, c1, c4)


def _cmap_grid(row: _Node) -> list[list[float]]:
    """OpenMM's ``energy[i + N·j]`` (φ = i·360°/N) as the IR's φ-major grid from −180° (§9.1)."""
    try:
        values = [float(v) for v in (row.elem.text or "").split()]
    except ValueError:
        _refuse(row.where, "a <Map> holds numbers only")
    n = math.isqrt(len(values))
    if n * n != len(values) or n < 2 or n % 2:
        _refuse(row.where, f"a <Map> of {len(values)} values is not an even N x N grid (§9.1)")
    if not all(math.isfinite(v) for v in values):
        _refuse(row.where, "a <Map> value is not finite")
    grid = [[0.0] * n for _ in range(n)]
    half = n // 2
    for j in range(n):
        for i in range(n):
            grid[(i + half) % n][(j + half) % n] = values[i + n * j]
    return grid


_HANDLERS: Final = {
    "HarmonicBondForce": _Reader.harmonic_bonds,
    "HarmonicAngleForce": _Reader.harmonic_angles,
    "AmoebaUreyBradleyForce": _Reader.urey_bradleys,
    "PeriodicTorsionForce": _Reader.periodic_torsions,
    "RBTorsionForce": _Reader.rb_torsions,
    "CustomTorsionForce": _Reader.custom_torsions,
    "CMAPTorsionForce": _Reader.cmap_torsions,
    "NonbondedForce": _Reader.nonbonded_force,
    "LennardJonesForce": _Reader.lennard_jones_force,
}


def from_openmm_xml(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    name: str | None = None,
    ignore_scripts: bool = False,
    charmm_pi_impropers: bool = False,
) -> ForceField:
    """Translate OpenMM ForceField XML files into one force-field section (forcefield.md §9.1).

    The files are read together, as ``openmm.app.ForceField(*paths)`` loads
    them: atom types from all, forces of one kind merged into one table.

    Parameters
    ----------
    paths
        One file or several (``protein.ff14SB.xml``, ``tip3p.xml``); an
        ``<Include file=...>`` is resolved beside the including file.
    name
        The force field's name; default: the ``<ForceField name>`` of each
        file, else its stem, joined by ``+``.
    ignore_scripts
        Skip ``<Script>``/``<InitializationScript>`` (refused by default: the
        translator cannot know what they do); the skipped elements are
        listed under the document key ``ignored``.
    charmm_pi_impropers
        Store a ``k*(theta-theta0)^2`` improper with theta0 = π as
        ``improper.harmonic`` chi0 = 180° (CHARMM's wrapped form); refused by
        default since OpenMM's unwrapped expression differs for θ < 0.

    Returns
    -------
    ForceField
        Units nm, kJ/mol, degree, e, dalton; ``source.format`` ``openmm-xml``
        (with ``uri`` and ``sha256`` for a single file; every file's are
        under ``source_files`` otherwise).

    Raises
    ------
    InvalidRecord
        Anything §9.1 refuses or this translator cannot map; the message names
        the file, element (``Force/Row[i]``), attribute and rule.
    NotFound
        A file does not exist.

    Examples
    --------
    >>> ff = from_openmm_xml(["amber14/protein.ff14SB.xml", "amber14/tip3p.xml"])  # doctest: +SKIP
    >>> ff.term("bond", "protein-C-protein-O")["k"]  # doctest: +SKIP
    285014.4
    """
    listed = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not listed:
        raise InvalidRecord("no OpenMM XML file given", path="paths")
    reader = _Reader(ignore_scripts=ignore_scripts, charmm_pi_impropers=charmm_pi_impropers)
    nodes = [n for p in listed for n in reader.read(Path(p))]
    for _, node in nodes:
        reader.atom_types(node)
    for _, node in nodes:
        for child in node.children(None):
            reader.force(child)
    return reader.section(name, ", ".join(os.fspath(p) for p in listed))
