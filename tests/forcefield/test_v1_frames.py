"""Version-1 frames linked to a force field (forcefield.md §11.3)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from ff_helpers import section, table

from mrecd.errors import InvalidRecord
from mrecd.forcefield import ForceField, convert_v1_frame
from mrecd.model import Block, Column, Frame

C = 180 / math.pi


def _u64(*values: int) -> Column:
    return Column(np.array(values, dtype=np.uint64), "u64")


def _str(*values: str | None) -> Column:
    validity = None if None not in values else [v is not None for v in values]
    return Column(
        np.array([v or "" for v in values], dtype=np.dtypes.StringDType()),
        "string",
        validity=validity,
    )


def _f64(*values: float | None) -> Column:
    validity = None if None not in values else [v is not None for v in values]
    return Column(np.array([0.0 if v is None else v for v in values]), "f64", validity=validity)


def _mmff_frame(*, with_style: bool = True) -> Frame:
    def styled(n: int, style: str) -> dict[str, Column]:
        return {"style": _str(*[style] * n)} if with_style else {}

    return Frame(
        {
            "atoms": {"type": _str("C", "C", "H", "H"), "charge": _f64(0.0, 0.1, -0.1, 0.0)},
            "bonds": Block(
                {
                    "atomi": _u64(0, 1),
                    "atomj": _u64(1, 2),
                    **styled(2, "harmonic"),
                    "k": _f64(100.0, None),
                    "r0": _f64(1.5, 1.1),
                }
            ),
            "angles": Block(
                {
                    "atomi": _u64(0),
                    "atomj": _u64(1),
                    "atomk": _u64(2),
                    **styled(1, "mmff_angle"),
                    "theta0": _f64(1.9106),
                    "ka": _f64(0.5),
                }
            ),
            "impropers": Block(
                {
                    "atomi": _u64(0, 1),
                    "atomj": _u64(1, 0),
                    "atomk": _u64(2, 2),
                    "atoml": _u64(3, 3),
                    **styled(2, "mmff_oop"),
                    "koop": _f64(0.1, None),
                }
            ),
        },
        meta={"pe": -1.0},
    )


def _mmff_forcefield() -> tuple[dict[str, Any], dict[str, Block]]:
    data = section(
        ["bond.harmonic", "angle.mmff_angle", "improper.mmff_oop"],
        {
            "bond.harmonic": table(name=[], itom=[], jtom=[]),
            "angle.mmff_angle": table(name=[], itom=[], jtom=[], ktom=[]),
            "improper.mmff_oop": table(name=[], itom=[], jtom=[], ktom=[], ltom=[]),
        },
    )
    ff = ForceField.from_dict(data)  # the stored version-1 form, read without conversion
    return ff.to_section()


def _values(frame: Frame, block: str, column: str) -> list[Any]:
    col = frame[block][column]
    values = col.values.tolist()
    return (
        values
        if col.validity is None
        else [v if ok else None for v, ok in zip(values, col.validity, strict=True)]
    )


@pytest.mark.parametrize("with_forcefield", [True, False])
def test_an_mmff_system_converts_theta0_k_and_out_of_plane_rows(with_forcefield: bool) -> None:
    document, tables = _mmff_forcefield() if with_forcefield else (None, None)
    converted = convert_v1_frame(_mmff_frame(), document, tables)
    assert _values(converted, "angles", "theta0") == [1.9106 * C]
    assert _values(converted, "angles", "ka") == [0.5]
    assert _values(converted, "bonds", "k") == [
        50.0,
        None,
    ]  # per-instance harmonic k halved, null kept
    assert _values(converted, "bonds", "r0") == [1.5, 1.1]
    assert _values(converted, "impropers", "atomi") == [1, 0]  # centre first
    assert _values(converted, "impropers", "atomj") == [0, 1]
    assert converted["atoms"] == _mmff_frame()["atoms"]
    assert converted.meta == {"pe": -1.0}


def test_without_style_cells_or_force_field_rows_convert_from_their_own_columns() -> None:
    converted = convert_v1_frame(_mmff_frame(with_style=False))
    assert _values(converted, "angles", "theta0") == [1.9106 * C]  # angle values, resolved or not
    assert _values(converted, "bonds", "k") == [100.0, None]  # unresolved: not a harmonic k
    assert _values(converted, "impropers", "atomi") == [1, 1]  # only the row carrying koop swaps
    assert _values(converted, "impropers", "atomj") == [0, 0]


def test_rows_resolve_by_type_when_the_block_has_no_style() -> None:
    data = section(
        ["bond.harmonic", "angle.harmonic"],
        {
            "bond.harmonic": table(name=["b1"], itom=["C"], jtom=["C"], k=[1.0]),
            "angle.harmonic": table(
                name=["a1"], itom=["C"], jtom=["C"], ktom=["H"], k=[1.0], theta0=[1.0]
            ),
        },
        units={"angle": "degree"},
    )
    document, tables = ForceField.from_dict(data).to_section()
    frame = Frame(
        {
            "bonds": Block(
                {
                    "atomi": _u64(0, 0),
                    "atomj": _u64(1, 1),
                    "type": _str("b1", "other"),
                    "k": _f64(4.0, 4.0),
                }
            ),
            "angles": Block(
                {
                    "atomi": _u64(0),
                    "atomj": _u64(1),
                    "atomk": _u64(2),
                    "type": _str("a1"),
                    "k": _f64(0.01),
                    "theta0": _f64(109.5),
                }
            ),
        }
    )
    converted = convert_v1_frame(frame, document, tables)
    assert _values(converted, "bonds", "k") == [2.0, 4.0]
    assert _values(converted, "angles", "k") == [0.005 * C * C]
    assert _values(converted, "angles", "theta0") == [109.5]  # U degree: values stay


def test_two_styles_converting_one_cell_differently_are_refused() -> None:
    data = section(
        ["bond.harmonic", "bond.class2"],
        {
            "bond.harmonic": table(name=["b1"], itom=["C"], jtom=["C"]),
            "bond.class2": table(name=["b1"], itom=["C"], jtom=["C"]),
        },
    )
    document, tables = ForceField.from_dict(data).to_section()
    frame = Frame(
        {"bonds": Block({"atomi": _u64(0), "atomj": _u64(1), "type": _str("b1"), "k": _f64(1.0)})}
    )
    with pytest.raises(InvalidRecord, match="differently"):
        convert_v1_frame(frame, document, tables)
    null_cell = Frame(
        {"bonds": Block({"atomi": _u64(0), "atomj": _u64(1), "type": _str("b1"), "k": _f64(None)})}
    )
    assert _values(convert_v1_frame(null_cell, document, tables), "bonds", "k") == [None]


def test_a_cell_the_rules_would_rename_is_refused() -> None:
    frame = Frame(
        {
            "bonds": Block(
                {"atomi": _u64(0), "atomj": _u64(1), "style": _str("morse"), "D": _f64(1.0)}
            )
        }
    )
    with pytest.raises(InvalidRecord, match="renames 'D'"):
        convert_v1_frame(frame)


def test_fourier_style_cells_become_periodic_and_convert_as_it() -> None:
    frame = Frame(
        {
            "dihedrals": Block(
                {
                    "atomi": _u64(0, 1),
                    "atomj": _u64(1, 2),
                    "atomk": _u64(2, 3),
                    "atoml": _u64(3, 4),
                    "style": _str("fourier", "charmm"),
                    "phase1": _f64(math.pi, None),
                    "phase": _f64(None, math.pi),
                }
            )
        }
    )
    converted = convert_v1_frame(frame)
    assert _values(converted, "dihedrals", "style") == ["periodic", "charmm"]
    assert _values(converted, "dihedrals", "phase1") == [math.pi * C, None]
    assert _values(converted, "dihedrals", "phase") == [None, math.pi * C]


def test_a_preset_with_degrees_is_refused_for_frames_too() -> None:
    document = {"name": "x", "units": {"preset": "real", "angle": "degree"}, "styles": []}
    with pytest.raises(InvalidRecord, match="reject-v1-preset-angle-degree"):
        convert_v1_frame(_mmff_frame(), document, {})


def test_blocks_that_are_not_relations_are_untouched() -> None:
    frame = Frame(
        {
            "pairs": Block(
                {"atomi": _u64(0), "atomj": _u64(1), "epsilon": _f64(0.1), "phase": _f64(1.0)}
            ),
            "residues": Block({"phase": _f64(1.0)}),
        }
    )
    assert convert_v1_frame(frame) == frame
