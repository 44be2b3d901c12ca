"""Pair parameters (forcefield.md §2.6, §6 rule 3, §6.2, §7.3–§7.4, §13 (c))."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from ff_helpers import FIXTURES, atoms, fixture, section, table

from mrecd.errors import InvalidRecord, NotFound
from mrecd.forcefield import ForceField, PairTerm


@pytest.fixture(scope="module")
def charmm() -> ForceField:
    return ForceField.from_dict(fixture("valid-charmm"))


def _lj(charmm: ForceField, a: str, b: str, **kwargs: Any) -> PairTerm:
    return charmm.pair(a, b, "lj/charmm", **kwargs).terms[0]


def _values(term: PairTerm) -> dict[str, Any]:
    return {k: (v.value, v.source) for k, v in term.values.items()}


# -- the chapter's CHARMM table ------------------------------------------------------------


def test_ct1_ct1_comes_from_its_row(charmm: ForceField) -> None:
    term = _lj(charmm, "CT1", "CT1")
    assert (term.outcome, term.row, term.cross) == ("found", 0, False)
    assert _values(term) == {
        "epsilon": (0.02, "row"),
        "sigma": (4.0538, "row"),
        "epsilon14": (0.01, "row"),
        "sigma14": (3.3854, "row"),
    }


def test_a_self_row_without_14_values_uses_its_own(charmm: ForceField) -> None:
    assert _values(_lj(charmm, "HA", "HA")) == {
        "epsilon": (0.022, "row"),
        "sigma": (2.3876, "row"),
        "epsilon14": (0.022, "self_row_default"),
        "sigma14": (2.3876, "self_row_default"),
    }


def test_an_unlike_pair_without_a_row_is_mixed(charmm: ForceField) -> None:
    term = _lj(charmm, "CT1", "HA")
    assert term.row is None and term.mixing == "arithmetic"
    assert term.value("sigma") == 3.2207
    assert term.value("epsilon") == 0.02097617696340303
    assert term.value("sigma14") == 2.8865  # ½(3.3854 + 2.3876), HA's 14 values defaulted
    assert term.value("epsilon14") == 0.014832396974191326  # √(0.01 · 0.022)
    assert {v.source for v in term.values.values()} == {"mixed"}


def test_a_reversed_cross_row_wins_and_its_nulls_are_mixed(charmm: ForceField) -> None:
    term = _lj(charmm, "NH1", "CT1")
    assert (term.row, term.cross, term.keys) == (3, True, ("NH1", "CT1"))
    assert _values(term) == {
        "epsilon": (0.06324555320336758, "mixed"),  # √(0.2 · 0.02)
        "sigma": (3.6750499999999997, "mixed"),  # ½(3.2963 + 4.0538)
        "epsilon14": (0.0447, "cross_row"),
        "sigma14": (3.3409, "cross_row"),
    }
    assert _values(_lj(charmm, "CT1", "NH1")) == _values(term)


def test_an_electrostatic_style_has_no_per_type_values(charmm: ForceField) -> None:
    term = charmm.pair("CT1", "HA").term("coul/cut")
    assert (term.outcome, term.values, term.priced_with) == ("found", {}, ())
    assert term.style_params == {"cutoff": 12.0}
    assert (term.special, term.weights) == ("coul", (0.0, 0.0, 0.0))


def test_every_pair_style_answers_in_style_order(charmm: ForceField) -> None:
    found = charmm.pair("CT1", "HA")
    assert [t.style for t in found.terms] == ["lj/charmm", "coul/cut"]
    assert found.units["energy"] == "kcal/mol"
    assert found.term("lj/charmm").special == "lj"
    with pytest.raises(KeyError):
        found.term("buck")


def test_unknown_types_and_styles_are_not_found(charmm: ForceField) -> None:
    with pytest.raises(NotFound, match=r"atom type 'XX' not found; searched atom\.full"):
        charmm.pair("CT1", "XX")
    with pytest.raises(NotFound, match=r"style \(pair, buck\)"):
        charmm.pair("CT1", "HA", "buck")
    no_pairs = ForceField.from_dict(section(["atom.full"], {"atom.full": atoms("A")}))
    with pytest.raises(NotFound, match="pair style"):
        no_pairs.pair("A", "A")


# -- TIP3P: an unregistered style, a missing self row ----------------------------------------


def test_tip3p_self_pair_is_found_but_not_priceable() -> None:
    term = ForceField.from_dict(fixture("valid-tip3p")).pair("OW", "OW").terms[0]
    assert (term.outcome, term.value("epsilon"), term.value("sigma")) == ("found", 0.1521, 3.1507)
    assert not term.registered and not term.priceable
    assert term.special == "lj" and term.weights == (0.0, 0.0, 0.5)
    assert term.to_dict()["priceable"] is False


def test_tip3p_pair_with_no_self_row_has_no_value_not_zero() -> None:
    term = ForceField.from_dict(fixture("valid-tip3p")).pair("OW", "HW").terms[0]
    assert term.outcome == "no_value"
    assert term.value("epsilon") is None and term.value("sigma") is None
    assert term.to_dict()["values"]["epsilon"] == {"value": None, "source": None}
    assert term.self_values == ({"epsilon": 0.1521, "sigma": 3.1507}, None)


# -- hand-checked mixing (§2.6) --------------------------------------------------------------

SELF = {"A": (0.1, 3.0), "B": (0.4, 4.0), "C": (0.9, 2.0)}  # type: (epsilon, sigma)


def _mixer(rule: str | None, style: str = "lj/cut") -> ForceField:
    params = {} if rule is None else {"params": {"mixing": rule}}
    names = list(SELF)
    return ForceField.from_dict(
        section(
            ["atom.full", ("pair", style, params)],
            {
                "atom.full": atoms(*names),
                f"pair.{style.replace('/', '%2F')}": table(
                    name=names,
                    itom=names,
                    jtom=names,
                    epsilon=[SELF[n][0] for n in names],
                    sigma=[SELF[n][1] for n in names],
                ),
            },
        )
    )


@pytest.mark.parametrize(
    ("rule", "a", "b", "sigma", "epsilon"),
    [
        # arithmetic (Lorentz–Berthelot): σ = ½(σi + σj), ε = √(εi·εj)
        ("arithmetic", "A", "B", (3.0 + 4.0) / 2, math.sqrt(0.1 * 0.4)),  # 3.5, 0.2
        ("arithmetic", "B", "C", (4.0 + 2.0) / 2, math.sqrt(0.4 * 0.9)),  # 3.0, 0.6
        ("arithmetic", "C", "A", (2.0 + 3.0) / 2, math.sqrt(0.9 * 0.1)),  # 2.5, 0.3
        # geometric: σ = √(σi·σj), ε = √(εi·εj)
        ("geometric", "A", "B", math.sqrt(3.0 * 4.0), math.sqrt(0.1 * 0.4)),  # √12, 0.2
        ("geometric", "B", "C", math.sqrt(4.0 * 2.0), math.sqrt(0.4 * 0.9)),  # √8, 0.6
        ("geometric", "C", "A", math.sqrt(2.0 * 3.0), math.sqrt(0.9 * 0.1)),  # √6, 0.3
        # sixthpower: σ⁶ = ½(σi⁶ + σj⁶), ε = 2√(εiεj)·σi³σj³ / (σi⁶ + σj⁶)
        #   A,B: σ⁶ = ½(729 + 4096) = 2412.5; ε = 2·0.2·27·64 / 4825 = 691.2 / 4825
        ("sixthpower", "A", "B", 2412.5 ** (1 / 6), 691.2 / 4825),
        #   B,C: σ⁶ = ½(4096 + 64) = 2080;    ε = 2·0.6·64·8 / 4160 = 614.4 / 4160
        ("sixthpower", "B", "C", 2080.0 ** (1 / 6), 614.4 / 4160),
        #   C,A: σ⁶ = ½(64 + 729) = 396.5;    ε = 2·0.3·8·27 / 793 = 129.6 / 793
        ("sixthpower", "C", "A", 396.5 ** (1 / 6), 129.6 / 793),
    ],
)
def test_mixing_rules_against_hand_computed_values(
    rule: str, a: str, b: str, sigma: float, epsilon: float
) -> None:
    term = _mixer(rule).pair(a, b).terms[0]
    assert (term.outcome, term.mixing) == ("found", rule)
    assert term.value("sigma") == pytest.approx(sigma, rel=1e-15)
    assert term.value("epsilon") == pytest.approx(epsilon, rel=1e-15)
    assert term.values["sigma"].source == term.values["epsilon"].source == "mixed"
    swapped = _mixer(rule).pair(b, a).terms[0]
    assert _values(swapped) == _values(term)  # mixing is symmetric


@pytest.mark.parametrize(
    ("rule", "sigma", "epsilon"),
    [
        ("arithmetic", 3.2207, 0.02097617696340303),
        ("geometric", 3.111085482592852, 0.02097617696340303),
        ("sixthpower", 3.6362256838173916, 0.00822797614042549),
    ],
)
def test_mixing_rules_reproduce_the_chapters_numbers(
    rule: str, sigma: float, epsilon: float
) -> None:
    data = section(
        ["atom.full", ("pair", "lj/cut", {"params": {"mixing": rule}})],
        {
            "atom.full": atoms("CT1", "HA"),
            "pair.lj%2Fcut": table(
                name=["CT1", "HA"],
                itom=["CT1", "HA"],
                jtom=["CT1", "HA"],
                epsilon=[0.02, 0.022],
                sigma=[4.0538, 2.3876],
            ),
        },
    )
    term = ForceField.from_dict(data).pair("CT1", "HA").terms[0]
    assert (term.value("sigma"), term.value("epsilon")) == (sigma, epsilon)  # to the last bit


def test_without_mixing_an_unlike_pair_has_no_value() -> None:
    term = _mixer(None).pair("A", "B").terms[0]
    assert (term.outcome, term.mixing, term.value("epsilon")) == ("no_value", None, None)
    assert _mixer(None).pair("A", "A").terms[0].outcome == "found"


def test_mixing_never_covers_other_parameters() -> None:
    data = section(
        ["atom.full", ("pair", "buck", {"params": {"mixing": "arithmetic"}})],
        {
            "atom.full": atoms("A", "B"),
            "pair.buck": table(
                name=["A", "B"],
                itom=["A", "B"],
                jtom=["A", "B"],
                a=[1.0, 2.0],
                rho=[0.3, 0.4],
                c=[5.0, 6.0],
            ),
        },
    )
    term = ForceField.from_dict(data).pair("A", "B").terms[0]
    assert term.outcome == "no_value"
    assert {k: v.value for k, v in term.values.items()} == {"a": None, "rho": None, "c": None}


def test_sixthpower_epsilon_needs_both_sigmas() -> None:
    data = section(
        ["atom.full", ("pair", "lj/cut", {"params": {"mixing": "sixthpower"}})],
        {
            "atom.full": atoms("A", "B"),
            "pair.lj%2Fcut": table(
                name=["A", "B"],
                itom=["A", "B"],
                jtom=["A", "B"],
                epsilon=[0.1, 0.4],
                sigma=[3.0, None],
            ),
        },
    )
    term = ForceField.from_dict(data).pair("A", "B").terms[0]
    assert term.value("epsilon") is None and term.outcome == "no_value"
    arithmetic = section(
        ["atom.full", ("pair", "lj/cut", {"params": {"mixing": "arithmetic"}})], data["tables"]
    )
    assert ForceField.from_dict(arithmetic).pair("A", "B").terms[0].value("epsilon") == math.sqrt(
        0.1 * 0.4
    )


# -- lj/charmm 1-4 values and one_four (§7.4, §13 (c) 7) ---------------------------------------


def _charmm14(one_four: str | None) -> ForceField:
    params: dict[str, Any] = {} if one_four is None else {"one_four": one_four}
    return ForceField.from_dict(
        section(
            ["atom.full", ("pair", "lj/charmm", {"params": params})],
            {
                "atom.full": atoms("A", "B"),
                "pair.lj%2Fcharmm": table(
                    name=["A", "B", "AB"],
                    itom=["A", "B", "A"],
                    jtom=["A", "B", "B"],
                    epsilon=[0.1, 0.4, None],
                    sigma=[3.0, 4.0, None],
                    epsilon14=[0.05, None, 0.07],
                    sigma14=[2.5, None, None],
                ),
            },
        )
    )


def test_lj_charmm_defaults_to_arithmetic_mixing() -> None:
    term = _charmm14(None).pair("A", "B").terms[0]
    assert term.mixing == "arithmetic"
    # ε from mixing √(0.1·0.4); ε14 from the cross row; σ14 mixed: ½(2.5 + 4.0), B's defaulted to σ.
    assert _values(term) == {
        "epsilon": (math.sqrt(0.1 * 0.4), "mixed"),
        "sigma": ((3.0 + 4.0) / 2, "mixed"),
        "epsilon14": (0.07, "cross_row"),
        "sigma14": ((2.5 + 4.0) / 2, "mixed"),
    }


@pytest.mark.parametrize(
    ("one_four", "is_14", "priced"),
    [
        (None, False, ("epsilon", "sigma")),
        (None, True, ("epsilon", "sigma")),
        ("regular", True, ("epsilon", "sigma")),
        ("epsilon14", False, ("epsilon", "sigma")),
        ("epsilon14", True, ("epsilon14", "sigma14")),
    ],
)
def test_one_four_decides_what_prices_a_1_4_pair(
    one_four: str | None, is_14: bool, priced: tuple[str, ...]
) -> None:
    found = _charmm14(one_four).pair("A", "B", is_14=is_14)
    assert found.is_14 is is_14
    assert found.terms[0].priced_with == priced


# -- class keys, overrides, weights ------------------------------------------------------------


def test_a_class_keyed_pair_table_resolves_through_the_atom_class() -> None:
    data = section(
        [
            "atom.full",
            {
                "category": "pair",
                "style": "lj/cut",
                "endpoint_key": "class",
                "params": {"mixing": "geometric"},
            },
        ],
        {
            "atom.full": atoms("CT_1", "CT_2", "HC", "Z", **{"class": ["CT", "CT", "HC", None]}),
            "pair.lj%2Fcut": table(
                name=["CT", "HC"],
                itom=["CT", "HC"],
                jtom=["CT", "HC"],
                epsilon=[0.1, 0.4],
                sigma=[4.0, 1.0],
            ),
        },
    )
    ff = ForceField.from_dict(data)
    like = ff.pair("CT_1", "CT_2").terms[0]  # one class: the self row
    assert (like.keys, like.row, like.value("sigma")) == (("CT", "CT"), 0, 4.0)
    unlike = ff.pair("HC", "CT_2").terms[0]
    assert unlike.value("sigma") == math.sqrt(1.0 * 4.0)
    assert ff.pair("Z", "CT_1").terms[0].outcome == "unresolved"


def test_pair_overrides_of_the_fixture_frame() -> None:
    frame = json.loads((FIXTURES / "frame" / "valid-pair-overrides.json").read_text())
    columns = frame["blocks"]["pairs"]["columns"]
    types = frame["blocks"]["atoms"]["columns"]["type"]["values"]

    def cell(name: str, row: int) -> Any:
        validity = columns[name].get("validity")
        return None if validity is not None and not validity[row] else columns[name]["values"][row]

    data = section(
        [
            "atom.full",
            ("pair", "lj/charmm", {"params": {"one_four": "epsilon14"}}),
            "pair.coul/cut",
        ],
        {
            "atom.full": atoms("CT3", "OH1", "HA3"),
            "pair.lj%2Fcharmm": table(
                name=["HA3"],
                itom=["HA3"],
                jtom=["HA3"],
                epsilon=[0.024],
                sigma=[2.388],
                epsilon14=[0.02],
                sigma14=[2.2],
            ),
            "pair.coul%2Fcut": table(name=[], itom=[], jtom=[]),
        },
        special_bonds={"lj": [0, 0, 1.0], "coul": [0, 0, 1.0]},
    )
    ff = ForceField.from_dict(data)
    answers = []
    for row in range(3):
        i, j = columns["atomi"]["values"][row], columns["atomj"]["values"][row]
        override = {
            k: cell(k, row)
            for k in ("epsilon", "sigma", "charge_product", "lj_scale", "coul_scale")
        }
        found = ff.pair(types[i], types[j], is_14=True, override=override)
        lj, coul = found.terms
        answers.append(
            (
                lj.value("epsilon14"),
                lj.values["epsilon14"].source,
                lj.scale,
                coul.scale,
                coul.charge_product,
            )
        )
    assert answers[1] == (
        0.03,
        "override",
        1.0,
        None,
        None,
    )  # q_i q_j = 0.09 · 0.43 from atoms.charge
    assert answers[2] == (0.02, "row", 0.5, 0.8333333333333334, None)  # style values, own scales
    assert answers[0] == (0.05, "override", 1.0, 1.0, 0.0387)


def test_an_override_is_final_and_leaves_unlisted_values() -> None:
    term = _mixer("arithmetic").pair("A", "B", override={"sigma": 9.0, "epsilon": None}).terms[0]
    assert _values(term)["sigma"] == (9.0, "override")
    assert _values(term)["epsilon"] == (math.sqrt(0.1 * 0.4), "mixed")


@pytest.mark.parametrize(
    "override",
    [
        {"lj": 1.0},
        {"epsilon": "0.1"},
        {"epsilon": True},
        {"epsilon": float("nan")},
        [("epsilon", 1.0)],
    ],
)
def test_bad_overrides_are_refused(override: Any) -> None:
    with pytest.raises(InvalidRecord):
        _mixer("arithmetic").pair("A", "B", override=override)


def test_special_classes_and_undeclared_weights() -> None:
    data = section(
        [
            "atom.full",
            "pair.morse",
            "pair.thole",
            ("pair", "my/coul", {"params": {"special": "coul"}}),
            ("pair", "my/vdw", {"expression": "4*epsilon*((sigma/r)^12-(sigma/r)^6)"}),
        ],
        {
            "atom.full": atoms("A", "B"),
            "pair.morse": table(name=[], itom=[], jtom=[]),
            "pair.thole": table(
                name=["A", "B"],
                itom=["A", "B"],
                jtom=["A", "B"],
                charge=[-0.5, 0.2],
                alpha=[1.0, 2.0],
                damp=[2.6, 2.6],
            ),
            "pair.my%2Fcoul": table(name=[], itom=[], jtom=[]),
            "pair.my%2Fvdw": table(name=[], itom=[], jtom=[]),
        },
    )
    terms = ForceField.from_dict(data).pair("A", "B").terms
    assert [(t.style, t.special, t.weights) for t in terms] == [
        ("morse", "lj", None),
        ("thole", "coul", None),
        ("my/coul", "coul", None),
        ("my/vdw", "lj", None),
    ]
    thole = terms[1]
    assert thole.outcome == "no_value"  # no mixing for thole; its term reads both self rows
    assert thole.self_values == (
        {"charge": -0.5, "alpha": 1.0, "damp": 2.6},
        {"charge": 0.2, "alpha": 2.0, "damp": 2.6},
    )
    assert terms[3].priceable and not terms[3].registered
    assert not terms[2].priceable


def test_wildcard_pair_endpoints_match_exactly() -> None:
    data = section(
        ["atom.full", "pair.lj/cut"],
        {
            "atom.full": atoms("A"),
            "pair.lj%2Fcut": table(name=["all"], itom=[""], jtom=[""], epsilon=[0.1], sigma=[3.0]),
        },
    )
    assert ForceField.from_dict(data).pair("A", "A").terms[0].outcome == "no_value"
