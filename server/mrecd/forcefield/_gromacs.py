"""Translator: GROMACS topology (``.top``/``.itp``) -> a force-field section (forcefield.md §9.3).

Reads the parameter sections (``[ defaults ]``, ``[ atomtypes ]``,
``[ bondtypes ]``, ``[ angletypes ]``, ``[ dihedraltypes ]``, ``[ pairtypes ]``,
``[ nonbond_params ]``) after a small preprocessor (``#include`` beside the
including file, ``#define``, ``#ifdef``/``#ifndef``/``#else``/``#endif``).
Molecule sections describe a system, not the force field, and are skipped
(listed under the document key ``ignored``). Units stay GROMACS's (nm,
kJ/mol, degree, e, dalton); harmonic constants lose GROMACS's ½.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NoReturn

from ..errors import InvalidRecord, NotFound
from ._build import TableBuilder, assemble, file_digest
from ._model import ForceField
from ._openmm import COULOMB, OPENMM_UNITS

__all__ = ["from_gromacs_top"]

_UNITS: Final = dict(OPENMM_UNITS)  # GROMACS states the same units (§9)
_MOLECULE_SECTIONS: Final = frozenset(
    {
        "moleculetype", "atoms", "bonds", "pairs", "pairs_nb", "angles", "dihedrals",
        "exclusions", "constraints", "settles", "virtual_sites2", "virtual_sites3",
        "virtual_sites4", "virtual_sitesn", "position_restraints", "distance_restraints",
        "dihedral_restraints", "orientation_restraints", "angle_restraints",
        "angle_restraints_z", "cmap", "system", "molecules", "intermolecular_interactions",
    }
)  # fmt: skip
_REFUSED_SECTIONS: Final = frozenset(
    {"implicit_genborn_params", "cmaptypes", "constrainttypes", "virtual_sitestypes"}
)
_SECTION: Final = re.compile(r"^\[\s*([A-Za-z0-9_]+)\s*\]$")
_TOLERANCE: Final = 1e-12


def _refuse(where: str, message: str) -> NoReturn:
    raise InvalidRecord(message, path=where)


@dataclass(frozen=True)
class _Line:
    fields: list[str]
    where: str  # file:line [ section ]

    def number(self, i: int) -> float:
        if i >= len(self.fields):
            _refuse(self.where, f"field {i + 1} is missing")
        try:
            value = float(self.fields[i])
        except ValueError:
            _refuse(self.where, f"field {i + 1} {self.fields[i]!r} is not a number")
        if not math.isfinite(value):
            _refuse(self.where, f"field {i + 1} {self.fields[i]!r} is not finite")
        return value

    def funct(self, i: int) -> int:
        value = self.number(i)
        if not value.is_integer():
            _refuse(self.where, f"function type {self.fields[i]!r} is not an integer")
        return int(value)


def _label(name: str) -> str:
    return "" if name == "X" else name  # GROMACS's wildcard (§4)


class _Preprocessor:
    """``cpp``'s part that topologies use: includes, defines, conditionals."""

    def __init__(self, defines: Mapping[str, str]) -> None:
        self.defines = dict(defines)
        self.files: list[Path] = []

    def lines(self, path: Path, depth: int = 0) -> Iterator[tuple[str, str]]:
        if depth > 32:
            _refuse(str(path), "#include nested more than 32 deep (a cycle?)")
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError):
            raise NotFound(f"no GROMACS topology file at {path}", path=str(path)) from None
        self.files.append(path)
        active: list[bool] = []
        for number, raw in _joined(text):
            where = f"{path}:{number}"
            line = raw.split(";", 1)[0].strip()
            if line.startswith("#"):
                yield from self._directive(line, where, path, active, depth)
            elif line and all(active):
                yield where, self._expand(line)
        if active:
            _refuse(str(path), "#ifdef without #endif")

    def _directive(
        self, line: str, where: str, path: Path, active: list[bool], depth: int
    ) -> Iterator[tuple[str, str]]:
        word, _, rest = line[1:].strip().partition(" ")
        rest = rest.strip()
        if word in ("ifdef", "ifndef"):
            active.append((rest in self.defines) == (word == "ifdef"))
        elif word == "else":
            if not active:
                _refuse(where, "#else without #ifdef")
            active[-1] = not active[-1]
        elif word == "endif":
            if not active:
                _refuse(where, "#endif without #ifdef")
            active.pop()
        elif not all(active):
            return
        elif word == "define":
            name, _, value = rest.partition(" ")
            self.defines[name] = value.strip()
        elif word == "undef":
            self.defines.pop(rest, None)
        elif word == "include":
            target = rest.strip('"<>')
            yield from self.lines(path.parent / target, depth + 1)
        else:
            _refuse(where, f"preprocessor directive #{word} is not supported")

    def _expand(self, line: str) -> str:
        return " ".join(self.defines.get(token, token) for token in line.split())


def _joined(text: str) -> Iterator[tuple[int, str]]:
    """Lines with ``\\`` continuations joined, numbered by their first line."""
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield start, pending + line
        pending = ""
    if pending:
        yield start, pending


@dataclass
class _Top:
    """The parameter sections of one topology, read line by line."""

    defaults: _Line | None = None
    atomtypes: dict[str, dict[str, Any]] = field(default_factory=dict)
    lj: dict[str, tuple[float, float]] = field(default_factory=dict)
    pairtypes: dict[tuple[str, str], tuple[float, float, str]] = field(default_factory=dict)
    nonbond: dict[tuple[str, str], tuple[float, float, str]] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    tables: dict[str, TableBuilder] = field(default_factory=dict)
    last_dihedral: tuple[tuple[str, ...], int, str] | None = None

    def table(self, category: str, style: str, arity: int) -> TableBuilder:
        key = f"{category}.{style}"
        if key not in self.tables:
            self.tables[key] = TableBuilder(category, style, arity=arity)
        return self.tables[key]

    # -- sections -------------------------------------------------------------------------

    def line(self, section: str, line: _Line) -> None:
        handler = _HANDLERS.get(section)
        if handler is not None:
            handler(self, line)
        elif section in _MOLECULE_SECTIONS:
            if section not in self.ignored:
                self.ignored.append(section)
        elif section in _REFUSED_SECTIONS:
            _refuse(line.where, f"[ {section} ] is not translated (§9.3)")
        else:
            _refuse(line.where, f"[ {section} ] is not a topology section this translator knows")

    def push_defaults(self, line: _Line) -> None:
        if self.defaults is not None:
            _refuse(line.where, f"a second [ defaults ] (first at {self.defaults.where})")
        nbfunc, rule = line.funct(0), line.funct(1)
        if nbfunc != 1:
            _refuse(line.where, f"nbfunc {nbfunc} (Buckingham) is refused (§9.3)")
        if rule not in (2, 3):
            _refuse(line.where, f"comb-rule {rule}: only 2 and 3 (sigma/epsilon) map (§9.3)")
        self.defaults = line

    def _defaults(self) -> tuple[str, bool, float, float]:
        if self.defaults is None:
            _refuse("[ defaults ]", "a topology needs [ defaults ] before its types")
        fields = self.defaults.fields
        gen = fields[2].lower() in ("yes", "y") if len(fields) > 2 else False
        fudge_lj = self.defaults.number(3) if len(fields) > 3 else 1.0
        fudge_qq = self.defaults.number(4) if len(fields) > 4 else 1.0
        mixing = "arithmetic" if self.defaults.funct(1) == 2 else "geometric"
        return mixing, gen, fudge_lj, fudge_qq

    def push_atomtype(self, line: _Line) -> None:
        f = line.fields
        ptype = next((i for i in (3, 5, 4) if i < len(f) and _is_ptype(f[i])), None)
        if ptype is None:
            _refuse(line.where, "no particle-type field (A, S, V, D) where GROMACS expects one")
        bonded = ptype == 5 or (ptype == 4 and f[1][:1].isalpha())
        number = ptype == 5 or (ptype == 4 and not bonded)
        if f[ptype] != "A":
            _refuse(line.where, f"particle type {f[ptype]!r}: only atoms (A) map (§9.3)")
        if len(f) != ptype + 3:
            _refuse(line.where, f"expected {ptype + 3} fields, found {len(f)}")
        row: dict[str, Any] = {"class": f[1] if bonded else f[0]}
        if number:
            z = line.funct(ptype - 3)
            row["atomic_number"] = z if z > 0 else None
        row |= {"mass": line.number(ptype - 2), "charge": line.number(ptype - 1), "ptype": "A"}
        self.atomtypes[f[0]] = row
        self.lj[f[0]] = (line.number(ptype + 1), line.number(ptype + 2))

    def push_bondtype(self, line: _Line) -> None:
        ends, funct = (_label(f) for f in line.fields[:2]), line.funct(2)
        if funct == 1:
            values = {"k": line.number(4) / 2.0, "r0": line.number(3)}
            self.table("bond", "harmonic", 2).add(tuple(ends), values)
        elif funct == 3:
            values = {"d0": line.number(4), "alpha": line.number(5), "r0": line.number(3)}
            self.table("bond", "morse", 2).add(tuple(ends), values)
        else:
            _refuse(line.where, f"[ bondtypes ] function {funct}: only 1 and 3 map (§9.3)")

    def push_angletype(self, line: _Line) -> None:
        ends, funct = tuple(_label(f) for f in line.fields[:3]), line.funct(3)
        values = {"k": line.number(5) / 2.0, "theta0": line.number(4)}
        if funct == 1:
            self.table("angle", "harmonic", 3).add(ends, values)
        elif funct == 5:
            values |= {"k_ub": line.number(7) / 2.0, "r_ub": line.number(6)}
            self.table("angle", "charmm", 3).add(ends, values)
        else:
            _refuse(line.where, f"[ angletypes ] function {funct}: only 1 and 5 map (§9.3)")

    def push_dihedraltype(self, line: _Line) -> None:
        f = line.fields
        # A two-name line (GROMACS's older form) has its function type third.
        if len(f) < 5 or _is_int(f[2]) or not _is_int(f[4]):
            _refuse(line.where, "[ dihedraltypes ] lines name four atom types here (§9.3)")
        ends, funct = tuple(_label(f) for f in line.fields[:4]), line.funct(4)
        previous, self.last_dihedral = self.last_dihedral, (ends, funct, line.where)
        if funct in (1, 9):
            self._periodic(line, ends, funct, previous)
        elif funct == 4:
            values = {"k": line.number(6), "periodicity": line.number(7), "phase": line.number(5)}
            self.table("improper", "periodic", 4).add(ends, values)
        elif funct == 2:
            chi0 = line.number(5)
            if chi0 not in (0.0, 180.0):
                _refuse(line.where, f"improper xi0 {chi0!r}: only 0 and 180 degrees map (§9.3)")
            self.table("improper", "harmonic", 4).add(
                ends, {"k": line.number(6) / 2.0, "chi0": chi0}
            )
        elif funct == 3:
            self._ryckaert_bellemans(line, ends)
        elif funct == 5:
            values = {f"k{n}": line.number(4 + n) for n in range(1, 5)}
            self.table("dihedral", "opls", 4).add(ends, values)
        else:
            _refuse(line.where, f"[ dihedraltypes ] function {funct} does not map (§9.3)")

    def _periodic(
        self,
        line: _Line,
        ends: tuple[str, ...],
        funct: int,
        previous: tuple[tuple[str, ...], int, str] | None,
    ) -> None:
        table = self.table("dihedral", "periodic", 4)
        term = (line.number(6), line.number(7), line.number(5))  # k, n, phase
        if funct == 9 and previous is not None and previous[:2] == (ends, 9):
            row = table.rows[-1]
            m = 1 + sum(1 for k in row if k.startswith("periodicity"))
            row |= {f"k{m}": term[0], f"periodicity{m}": term[1], f"phase{m}": term[2]}
            return
        table.add(ends, {"k1": term[0], "periodicity1": term[1], "phase1": term[2]})

    def _ryckaert_bellemans(self, line: _Line, ends: tuple[str, ...]) -> None:
        c = [line.number(5 + n) for n in range(6)]
        a = {f"a{n + 1}": -c[n] if n % 2 else c[n] for n in range(6)}  # ψ = φ − 180° (§9.3)
        if c[5] == 0.0:
            del a["a6"]
            self.table("dihedral", "multi/harmonic", 4).add(ends, a)
        else:
            self.table("dihedral", "nharmonic", 4).add(ends, a)

    def push_pairtype(self, line: _Line) -> None:
        if line.funct(2) != 1:
            _refuse(line.where, "[ pairtypes ] function 2 does not map (§9.3)")
        self._cross(self.pairtypes, line, "pairtypes")

    def push_nonbond(self, line: _Line) -> None:
        if line.funct(2) != 1:
            _refuse(line.where, "[ nonbond_params ] other than function 1 does not map (§9.3)")
        self._cross(self.nonbond, line, "nonbond_params")

    def _cross(
        self, into: dict[tuple[str, str], tuple[float, float, str]], line: _Line, what: str
    ) -> None:
        i, j = line.fields[:2]
        key = (i, j) if i <= j else (j, i)
        sigma, epsilon = line.number(3), line.number(4)
        before = into.get(key)
        if before is not None and before[:2] != (sigma, epsilon):
            _refuse(line.where, f"[ {what} ] {i} {j} restates {before[2]} differently (§9.3)")
        into[key] = (sigma, epsilon, line.where)

    # -- the section ----------------------------------------------------------------------

    def section(self, name: str, sources: list[Path]) -> ForceField:
        mixing, gen, fudge_lj, fudge_qq = self._defaults()
        atoms = TableBuilder("atom", "full")
        for t, row in self.atomtypes.items():
            atoms.add((), row, name=t)
        pair_tables = self._pairs(mixing, gen, fudge_lj)
        document: dict[str, Any] = {
            "name": name,
            "units": dict(_UNITS),
            "source": _source(sources),
            "special_bonds": {
                "lj": [0.0, 0.0, fudge_lj if gen else 1.0],
                "coul": [0.0, 0.0, fudge_qq],
            },
        }
        if self.ignored:
            document["ignored"] = [f"[ {s} ]" for s in self.ignored]
        tables = [atoms, *(t for t in self.tables.values() if t.rows), *pair_tables]
        return assemble(document, tables, where=str(sources[0]))

    def _pairs(self, mixing: str, gen: bool, fudge_lj: float) -> list[TableBuilder]:
        fourteen = self._fourteen(mixing, gen, fudge_lj)
        style = "lj/charmm" if fourteen else "lj/cut"
        params: dict[str, Any] = {"mixing": mixing}
        if fourteen:
            params["one_four"] = "epsilon14"
        lj = TableBuilder("pair", style, params, arity=2)
        for t, (sigma, epsilon) in self.lj.items():
            row = {"epsilon": epsilon, "sigma": sigma} | fourteen.pop((t, t), {})
            lj.add((t, t), row, name=t)
        for (i, j), (sigma, epsilon, _) in self.nonbond.items():
            if i != j:
                row = {"epsilon": epsilon, "sigma": sigma} | fourteen.pop((i, j), {})
                lj.add((i, j), row, name=f"{i}~{j}")
        for (i, j), row in fourteen.items():
            lj.add((i, j), row, name=f"{i}~{j}")
        coul = "coul/charmm" if style == "lj/charmm" else "coul/cut"
        return [lj, TableBuilder("pair", coul, {"coulomb": COULOMB}, arity=2)]

    def _fourteen(
        self, mixing: str, gen: bool, fudge_lj: float
    ) -> dict[tuple[str, str], dict[str, float]]:
        """The 1-4 values rows must state so that ``fudgeLJ × LJ(ε14, σ14)`` is GROMACS's."""
        if not self.pairtypes:
            return {}
        if fudge_lj == 0.0:
            _refuse("[ defaults ]", "fudgeLJ 0 beside [ pairtypes ] is refused (§9.3)")
        weight = fudge_lj if gen else 1.0
        for (i, j), (_, _, where) in self.pairtypes.items():
            if i not in self.lj or j not in self.lj:
                _refuse(where, f"[ pairtypes ] {i} {j} names a type [ atomtypes ] does not define")
        wanted = {k: (s, e / weight) for k, (s, e, _) in self.pairtypes.items()}
        regular = {k: self._mixed(k, mixing, self.lj) for k in wanted}
        if all(_close(wanted[k], regular[k]) for k in wanted):
            return {}  # every pairtype equals the generated pair: pair.lj/cut stays (§9.3)
        self_14 = {t: wanted.get((t, t), self.lj[t]) for t in self.lj}
        out: dict[tuple[str, str], dict[str, float]] = {}
        for t, (s, e) in self_14.items():
            if (t, t) in wanted:
                out[(t, t)] = {"epsilon14": e, "sigma14": s}
        types = sorted(self.lj)
        for a_index, a in enumerate(types):
            for b in types[a_index + 1 :]:
                if not gen and (a, b) not in wanted:
                    continue  # no generated pairs: only pairtypes have 1-4 energies
                target = wanted.get((a, b)) or self._mixed((a, b), mixing, self.lj)
                if not _close(self._mixed((a, b), mixing, self_14), target):
                    out[(a, b)] = {"epsilon14": target[1], "sigma14": target[0]}
        return out

    @staticmethod
    def _mixed(
        key: tuple[str, str], mixing: str, table: Mapping[str, tuple[float, float]]
    ) -> tuple[float, float]:
        (si, ei), (sj, ej) = table[key[0]], table[key[1]]
        sigma = 0.5 * (si + sj) if mixing == "arithmetic" else math.sqrt(si * sj)
        return sigma, math.sqrt(ei * ej)


def _close(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return all(
        math.isclose(x, y, rel_tol=_TOLERANCE, abs_tol=0.0) for x, y in zip(a, b, strict=True)
    )


def _is_ptype(text: str) -> bool:
    return len(text) == 1 and text.isalpha()


def _is_int(text: str) -> bool:
    return text.lstrip("+-").isdigit()


def _source(paths: list[Path]) -> dict[str, Any]:
    return {"format": "gromacs-top", "uri": os.fspath(paths[0]), "sha256": file_digest(paths[0])}


_HANDLERS: Final = {
    "defaults": _Top.push_defaults,
    "atomtypes": _Top.push_atomtype,
    "bondtypes": _Top.push_bondtype,
    "angletypes": _Top.push_angletype,
    "dihedraltypes": _Top.push_dihedraltype,
    "pairtypes": _Top.push_pairtype,
    "nonbond_params": _Top.push_nonbond,
}


def from_gromacs_top(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    defines: Mapping[str, str] | None = None,
) -> ForceField:
    """Translate the parameter sections of a GROMACS topology (forcefield.md §9.3).

    Parameters
    ----------
    path
        A ``.top`` or ``.itp`` file; ``#include`` files are read beside the
        including file.
    name
        The force field's name; default: the file's stem.
    defines
        Preprocessor symbols set before reading (as ``grompp -D``).

    Returns
    -------
    ForceField
        Units nm, kJ/mol, degree, e, dalton; ``source.format`` ``gromacs-top``.

    Raises
    ------
    InvalidRecord
        A line §9.3 refuses or this translator cannot map; the message names
        the file, line, section and rule.
    NotFound
        A file does not exist.
    """
    top = _Top()
    pre = _Preprocessor(defines or {})
    section = ""
    for where, text in pre.lines(Path(path)):
        header = _SECTION.match(text)
        if header is not None:
            section = header.group(1).lower()
            continue
        if not section:
            _refuse(where, "a line before the first [ section ]")
        top.line(section, _Line(text.split(), f"{where} [ {section} ]"))
    return top.section(name if name is not None else Path(path).stem, pre.files)
