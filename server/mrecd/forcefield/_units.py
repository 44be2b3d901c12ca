"""The ``units`` object of a force field (forcefield.md §2.2) and its presets.

A reader never converts a number: units are checked (pint-parseable, of the
right kind, equivalent to the preset beside them) and reported, nothing more.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any, Final

from ..errors import InvalidRecord
from ..model import parse_unit

__all__ = ["PRESETS", "QUANTITIES", "check_units", "expand_units", "unit_equivalent"]

#: The quantity keys of ``units``, in table order.
QUANTITIES: Final[tuple[str, ...]] = ("length", "energy", "angle", "charge", "mass", "time")

#: The unit presets: the eight LAMMPS ``units`` styles, plus ``openmm`` (spec README,
#: "Decisions": the ninth preset of the newest reference). ``lj`` is reduced: only
#: ``angle`` has a unit.
PRESETS: Final[dict[str, dict[str, str]]] = {
    "real": dict(
        zip(QUANTITIES, ("angstrom", "kcal/mol", "degree", "e", "dalton", "fs"), strict=True)
    ),
    "metal": dict(zip(QUANTITIES, ("angstrom", "eV", "degree", "e", "dalton", "ps"), strict=True)),
    "si": dict(zip(QUANTITIES, ("m", "J", "degree", "C", "kg", "s"), strict=True)),
    "cgs": dict(zip(QUANTITIES, ("cm", "erg", "degree", "statcoulomb", "g", "s"), strict=True)),
    "electron": dict(
        zip(QUANTITIES, ("bohr", "hartree", "degree", "e", "dalton", "fs"), strict=True)
    ),
    "micro": dict(
        zip(
            QUANTITIES,
            (
                "micrometer",
                "picogram * micrometer**2 / microsecond**2",
                "degree",
                "picocoulomb",
                "picogram",
                "microsecond",
            ),
            strict=True,
        )
    ),
    "nano": dict(
        zip(
            QUANTITIES,
            ("nm", "attogram * nm**2 / ns**2", "degree", "e", "attogram", "ns"),
            strict=True,
        )
    ),
    "lj": {"angle": "degree"},
    "openmm": dict(zip(QUANTITIES, ("nm", "kJ/mol", "degree", "e", "dalton", "ps"), strict=True)),
}

# Energies and masses are also stated per mole (kcal/mol, g/mol); a quantity's
# unit must have the dimension of some preset's unit of that quantity, alone or
# per amount of substance. Not a stated rule (§2.2 only asks for pint-parseable
# strings), but "length": "kcal/mol" is a unit of the wrong kind, never intended.
_PER_MOLE_OK: Final = frozenset({"energy", "mass"})


@functools.cache
def _dimensions(quantity: str) -> frozenset[tuple[tuple[str, float], ...]]:
    kinds: set[tuple[tuple[str, float], ...]] = set()
    for preset in PRESETS.values():
        if quantity in preset:
            dims = dict(parse_unit(preset[quantity]).dimensionality)
            kinds.add(_key(dims))
            if quantity in _PER_MOLE_OK:
                dims["[substance]"] = dims.get("[substance]", 0) - 1
                kinds.add(_key(dims))
    return frozenset(kinds)


def _key(dims: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
    return tuple(sorted((k, float(v)) for k, v in dims.items() if v))


def unit_equivalent(a: str, b: str) -> bool:
    """Whether two unit strings name the same unit after pint normalization.

    Same dimension and a conversion factor of 1 (to 1 part in 10¹²).
    """
    unit_a, unit_b = parse_unit(a), parse_unit(b)
    if _key(dict(unit_a.dimensionality)) != _key(dict(unit_b.dimensionality)):
        return False
    factor = float((1.0 * unit_a).to(unit_b).magnitude)
    return math.isclose(factor, 1.0, rel_tol=1e-12)


def _check_quantity(quantity: str, unit: Any, path: str) -> None:
    where = f"{path}.{quantity}"
    if not isinstance(unit, str) or not unit.strip():
        raise InvalidRecord(f"the unit of {quantity} must be a non-empty string (§2.2)", path=where)
    try:
        parsed = parse_unit(unit)
    except InvalidRecord as exc:
        raise InvalidRecord(
            f"{exc.message} (§2.2: unit strings are pint-parseable)", path=where
        ) from None
    if _key(dict(parsed.dimensionality)) not in _dimensions(quantity):
        raise InvalidRecord(f"{unit!r} is not a unit of {quantity}", path=where)


def _check_beside_preset(preset: str, quantity: str, unit: str, path: str) -> None:
    where = f"{path}.{quantity}"
    expected = PRESETS[preset].get(quantity)
    if expected is None:
        # lj is reduced: stating a length (say) beside it contradicts the preset.
        raise InvalidRecord(
            f"preset {preset!r} has no {quantity} unit (reduced units); {unit!r} contradicts it"
            " (§2.2)",
            path=where,
        )
    if not unit_equivalent(unit, expected):
        hint, rule = (
            ("; version-2 angle values are in degrees", "F4") if quantity == "angle" else ("", "F3")
        )
        raise InvalidRecord(
            f"{unit!r} beside preset {preset!r} must be pint-equivalent to {expected!r}{hint}"
            f" ({rule}, §2.2)",
            path=where,
        )


def check_units(units: Any, *, path: str = "forcefield.units") -> dict[str, Any]:
    """Validate a version-2 ``units`` object; return a copy.

    Parameters
    ----------
    units
        The document's ``units`` value.
    path
        Field path for error messages.

    Returns
    -------
    dict
        The object as given; keys other than ``preset`` and the six quantities
        are preserved unchecked.

    Raises
    ------
    InvalidRecord
        Not an object; neither ``preset`` nor a quantity (F2); an unknown
        preset (F5); a quantity that is not a pint unit of its kind; a
        quantity beside a preset that is not pint-equivalent to the preset's
        (F3, F4).
    """
    if not isinstance(units, Mapping):
        raise InvalidRecord("units is required: an object (F1, §2.2)", path=path)
    out = dict(units)
    stated = [q for q in QUANTITIES if q in out]
    if "preset" not in out and not stated:
        raise InvalidRecord(
            "units must state a preset or at least one quantity (F2, §2.2)", path=path
        )
    preset = out.get("preset")
    if "preset" in out and (not isinstance(preset, str) or preset not in PRESETS):
        raise InvalidRecord(
            f"preset {preset!r} is not one of {', '.join(PRESETS)} (F5, §2.2)",
            path=f"{path}.preset",
        )
    for quantity in stated:
        _check_quantity(quantity, out[quantity], path)
        if isinstance(preset, str):
            _check_beside_preset(preset, quantity, out[quantity], path)
    return out


def expand_units(units: Mapping[str, Any]) -> dict[str, str]:
    """The unit of every quantity the section resolves: the preset expanded, then stated keys.

    A validated ``units`` object is assumed. The result keeps ``preset`` when
    stated; quantities the section leaves unresolved are absent.
    """
    out: dict[str, str] = {}
    preset = units.get("preset")
    if isinstance(preset, str):
        out["preset"] = preset
        out.update(PRESETS.get(preset, {}))
    for quantity in QUANTITIES:
        value = units.get(quantity)
        if isinstance(value, str):
            out[quantity] = value
    return out
