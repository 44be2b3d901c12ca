"""The ``system`` section from an MDAnalysis topology, and an MDAnalysis topology from it.

Per-atom columns of ``system/atoms`` carry MDAnalysis's atom, residue and
segment attributes under the conventional names (conventions.md §3); the
connectivity goes to ``bonds``, ``angles``, ``dihedrals`` and ``impropers``
blocks whose endpoint columns ``atomi``... reference rows of ``atoms``
(declared as ``targets``, so the range check is part of the record).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from ..errors import InvalidRecord
from ..model import Block, Frame
from ._mda import mdanalysis

__all__ = ["ATTRIBUTES", "RELATIONS", "SYSTEM_UNITS", "empty_topology", "system_of"]

Level = Literal["atoms", "residues", "segments"]


@dataclass(frozen=True)
class Attribute:
    """One MDAnalysis topology attribute and the ``system/atoms`` column that carries it."""

    mda: str
    column: str
    dtype: str
    level: Level


#: What crosses between an MDAnalysis topology and ``system/atoms``. ``segid``,
#: ``record_type`` and ``moltype`` have no conventional name; they keep MDAnalysis's.
ATTRIBUTES: Final[tuple[Attribute, ...]] = (
    Attribute("ids", "id", "u64", "atoms"),
    Attribute("names", "name", "string", "atoms"),
    Attribute("types", "type", "string", "atoms"),
    Attribute("type_indices", "type_id", "u64", "atoms"),
    Attribute("elements", "element", "string", "atoms"),
    Attribute("charges", "charge", "f64", "atoms"),
    Attribute("formalcharges", "formal_charge", "i64", "atoms"),
    Attribute("masses", "mass", "f64", "atoms"),
    Attribute("chainIDs", "chain", "string", "atoms"),
    Attribute("altLocs", "altloc", "string", "atoms"),
    Attribute("occupancies", "occupancy", "f64", "atoms"),
    Attribute("tempfactors", "b_factor", "f64", "atoms"),
    Attribute("record_types", "record_type", "string", "atoms"),
    Attribute("resids", "res_id", "u64", "residues"),
    Attribute("resnames", "res_name", "string", "residues"),
    Attribute("icodes", "icode", "string", "residues"),
    Attribute("molnums", "mol_id", "u64", "residues"),
    Attribute("moltypes", "moltype", "string", "residues"),
    Attribute("segids", "segid", "string", "segments"),
)

#: Connectivity blocks: MDAnalysis attribute name = block name, and its endpoint columns.
RELATIONS: Final[dict[str, tuple[str, ...]]] = {
    "bonds": ("atomi", "atomj"),
    "angles": ("atomi", "atomj", "atomk"),
    "dihedrals": ("atomi", "atomj", "atomk", "atoml"),
    "impropers": ("atomi", "atomj", "atomk", "atoml"),
}

#: MDAnalysis's base units, which its readers convert every format to.
SYSTEM_UNITS: Final = {"length": "angstrom", "time": "ps", "charge": "e", "mass": "dalton"}


# -- MDAnalysis -> system ------------------------------------------------------------------------


def _topology_attr(universe: Any, name: str) -> Any | None:
    """The topology attribute ``name`` as the parser read it, or ``None`` (absent or guessed)."""
    # MDAnalysis has no public way to ask whether a value was read or guessed;
    # a guessed `types`/`masses` (GRO, PDB) is a guess, not the source's data.
    attr = getattr(universe._topology, name, None)
    if attr is None or bool(np.all(getattr(attr, "is_guessed", False))):
        return None
    return attr


def _column(universe: Any, attribute: Attribute) -> npt.NDArray[Any] | None:
    if _topology_attr(universe, attribute.mda) is None:
        return None
    values = np.asarray(getattr(universe.atoms, attribute.mda))
    if attribute.dtype == "string":
        return np.array([str(v) for v in values.tolist()], dtype=np.dtypes.StringDType())
    if attribute.dtype == "f64":
        return values.astype(np.float64)
    if attribute.dtype == "u64" and values.size and int(values.min()) < 0:
        raise InvalidRecord(
            f"MDAnalysis reports negative {attribute.mda}; {attribute.column} is unsigned"
            " (conventions.md §2): renumber them before ingesting",
            path=f"system/atoms/{attribute.column}",
        )
    return values.astype(np.uint64 if attribute.dtype == "u64" else np.int64)


def _relation(universe: Any, name: str, endpoints: tuple[str, ...]) -> Block | None:
    attr = _topology_attr(universe, name)
    if attr is None:
        return None
    # the parser's own rows, in file order (a TopologyGroup would sort them, slowly)
    rows = np.asarray(attr.values, dtype=np.uint64)
    if rows.size == 0:
        return None
    rows = rows.reshape(-1, len(endpoints))
    return Block(
        {c: np.ascontiguousarray(rows[:, k]) for k, c in enumerate(endpoints)},
        targets=dict.fromkeys(endpoints, "atoms"),
    )


def system_of(universe: Any) -> Frame:
    """The ``system`` section of ``universe``'s topology: ``atoms`` plus connectivity blocks.

    Only attributes the topology file provided become columns (MDAnalysis's
    guesses, such as GRO and PDB ``types`` and ``masses``, are left out); the
    meta document states MDAnalysis's units (Å, ps, e, dalton).
    """
    found = ((a.column, _column(universe, a)) for a in ATTRIBUTES)
    columns = {column: values for column, values in found if values is not None}
    blocks: dict[str, Block] = {
        "atoms": Block(columns, count=int(universe.atoms.n_atoms), path="system/atoms")
    }
    for name, endpoints in RELATIONS.items():
        block = _relation(universe, name, endpoints)
        if block is not None:
            blocks[name] = block
    return Frame(blocks, meta={"units": dict(SYSTEM_UNITS)}, meta_types={"units": "json"})


# -- system -> MDAnalysis --------------------------------------------------------------------------


def _starts(keys: list[npt.NDArray[Any]], n: int) -> npt.NDArray[np.intp]:
    """Indices where a run of equal ``keys`` begins (a new residue or segment)."""
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
    for key in keys:
        change[1:] |= key[1:] != key[:-1]
    return np.flatnonzero(change)


def _mda_values(attribute: Attribute, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    if attribute.dtype == "string":
        return np.array(values.tolist(), dtype=object)
    if attribute.dtype in ("u64", "i64"):
        return values.astype(np.int64)
    return values


def _columns(system: Frame | None, n_atoms: int) -> dict[Attribute, npt.NDArray[Any]]:
    atoms = None if system is None else system.get("atoms")
    if atoms is None:
        return {}
    if atoms.count != n_atoms:
        raise InvalidRecord(
            f"system/atoms has {atoms.count} rows but the trajectory's frames hold {n_atoms} atoms",
            path="system/atoms",
        )
    return {a: atoms[a.column].values for a in ATTRIBUTES if a.column in atoms}


def empty_topology(system: Frame | None, n_atoms: int) -> Any:
    """An MDAnalysis Universe without a trajectory whose topology is ``system`` (or bare atoms).

    Residues are runs of atoms sharing every residue-level column (``res_id``,
    ``res_name``, ``icode``, ``mol_id``, ``moltype``) and ``segid``; segments
    are the distinct ``segid`` values in order of first appearance.
    """
    mda = mdanalysis()
    columns = _columns(system, n_atoms)
    grouping = [v for a, v in columns.items() if a.level != "atoms"]
    residue_starts = _starts(grouping, n_atoms)
    atom_resindex = np.repeat(
        np.arange(len(residue_starts)), np.diff(np.append(residue_starts, n_atoms))
    )
    segids = next((v for a, v in columns.items() if a.level == "segments"), None)
    if segids is None:
        residue_segindex = np.zeros(len(residue_starts), dtype=np.intp)
        segment_starts = residue_starts[:1]
    else:
        _, first, residue_segindex = np.unique(
            segids[residue_starts], return_index=True, return_inverse=True
        )
        order = np.argsort(first)  # number segments by first appearance, not alphabetically
        residue_segindex = np.argsort(order)[residue_segindex]
        segment_starts = residue_starts[np.sort(first)]
    universe = mda.Universe.empty(
        n_atoms,
        n_residues=len(residue_starts),
        n_segments=max(1, len(segment_starts)),
        atom_resindex=atom_resindex,
        residue_segindex=residue_segindex,
        trajectory=False,
    )
    picks: Mapping[Level, npt.NDArray[np.intp]] = {
        "atoms": np.arange(n_atoms),
        "residues": residue_starts,
        "segments": segment_starts,
    }
    for attribute, values in columns.items():
        picked = values[picks[attribute.level]]
        universe.add_TopologyAttr(attribute.mda, _mda_values(attribute, picked))
    _add_relations(universe, system)
    return universe


def _add_relations(universe: Any, system: Frame | None) -> None:
    for name, endpoints in RELATIONS.items():
        block = None if system is None else system.get(name)
        if block is None or not all(c in block for c in endpoints):
            continue
        rows = np.column_stack([block[c].values.astype(np.int64) for c in endpoints])
        universe.add_TopologyAttr(name, [tuple(r) for r in rows.tolist()])
