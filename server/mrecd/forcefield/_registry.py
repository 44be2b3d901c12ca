"""What the chapter fixes about categories and styles (forcefield.md §3–§5, §7)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "ANNOTATIONS",
    "CATEGORY_ARITY",
    "COUL_STYLES",
    "ENDPOINT_COLUMNS",
    "ENDPOINT_KEYS",
    "LJ_STYLES",
    "MIXING_RULES",
    "ONE_FOUR_MODES",
    "REGISTERED",
    "VDW_LJ_STYLES",
    "is_registered",
]

#: Endpoint columns of a style table, in position order (§3.4).
ENDPOINT_COLUMNS: Final[tuple[str, ...]] = ("itom", "jtom", "ktom", "ltom", "mtom")

#: Arity of each registered category (§5). Any other category is legal; its
#: arity is the number of endpoint columns it carries.
CATEGORY_ARITY: Final[dict[str, int]] = {
    "atom": 0,
    "bond": 2,
    "angle": 3,
    "dihedral": 4,
    "improper": 4,
    "pair": 2,
    "constraint": 2,
    "virtual_site": 0,
    "drude": 2,
    "cmap": 5,
}

#: Annotation columns: ``string``, nullable, one value per row (§3.5).
ANNOTATIONS: Final = frozenset({"class", "element", "smarts", "smirks", "overrides", "desc", "doi"})

ENDPOINT_KEYS: Final = frozenset({"type", "class", "smirks"})
MIXING_RULES: Final = frozenset({"arithmetic", "geometric", "sixthpower"})
ONE_FOUR_MODES: Final = frozenset({"regular", "epsilon14"})

#: Registered styles and their per-type parameters (§7.2). ``None``: the
#: parameter set is open-ended (``dihedral.periodic`` terms, ``nharmonic``).
REGISTERED: Final[dict[tuple[str, str], tuple[str, ...] | None]] = {
    ("atom", "full"): ("mass", "charge"),
    ("bond", "harmonic"): ("k", "r0"),
    ("bond", "morse"): ("d0", "alpha", "r0"),
    ("bond", "class2"): ("r0", "k2", "k3", "k4"),
    ("angle", "harmonic"): ("k", "theta0"),
    ("angle", "charmm"): ("k", "theta0", "k_ub", "r_ub"),
    ("angle", "class2"): ("theta0", "k2", "k3", "k4"),
    ("dihedral", "periodic"): None,
    ("dihedral", "opls"): ("k1", "k2", "k3", "k4"),
    ("dihedral", "rb"): ("c0", "c1", "c2", "c3", "c4", "c5"),
    ("dihedral", "charmm"): ("k", "periodicity", "phase", "w"),
    ("dihedral", "harmonic"): ("k", "sign", "periodicity"),
    ("dihedral", "multi/harmonic"): ("a1", "a2", "a3", "a4", "a5"),
    ("dihedral", "nharmonic"): None,
    ("dihedral", "class2"): ("k1", "phi1", "k2", "phi2", "k3", "phi3"),
    ("improper", "harmonic"): ("k", "chi0"),
    ("improper", "cvff"): ("k", "sign", "periodicity"),
    ("improper", "periodic"): ("k", "periodicity", "phase"),
    ("improper", "trefoil"): None,
    ("pair", "lj/cut"): ("epsilon", "sigma"),
    ("pair", "lj/charmm"): ("epsilon", "sigma", "epsilon14", "sigma14"),
    ("pair", "coul/charmm"): (),
    ("pair", "lj/class2"): ("epsilon", "sigma"),
    ("pair", "buck"): ("a", "rho", "c"),
    ("pair", "morse"): ("d0", "alpha", "r0"),
    ("pair", "coul/cut"): (),
    ("pair", "coul/long/pme"): (),
    ("pair", "thole"): ("charge", "alpha", "damp"),
    ("constraint", "fixed"): ("r0",),
    ("virtual_site", "average2"): ("w1", "w2"),
    ("virtual_site", "average3"): ("w1", "w2", "w3"),
    ("virtual_site", "outofplane3"): ("w12", "w13", "wcross"),
    ("drude", "harmonic"): ("k", "alpha", "thole"),
    ("cmap", "charmm"): ("grid",),
}

#: Pair styles of special class ``lj`` / ``coul`` (§7.3).
LJ_STYLES: Final = frozenset({"lj/cut", "lj/charmm", "lj/class2", "buck", "morse"})
COUL_STYLES: Final = frozenset({"coul/cut", "coul/charmm", "coul/long/pme", "thole"})
#: Van-der-Waals styles whose ``epsilon``/``sigma`` a pair override replaces (§6.2).
VDW_LJ_STYLES: Final = frozenset({"lj/cut", "lj/class2", "lj/charmm"})


def is_registered(category: str, style: str) -> bool:
    """Whether ``(category, style)`` is a registered style of §7.2."""
    return (category, style) in REGISTERED
