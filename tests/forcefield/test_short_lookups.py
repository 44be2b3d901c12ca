"""The short form of lookup answers: ``ff.atom(t)["mass"]``, ``ff.pair(a, b)["epsilon"]``."""

from __future__ import annotations

import pytest
from ff_helpers import atoms, pairs, section, table

from mrecd.forcefield import AmbiguousLookup, ForceField


def _ff() -> ForceField:
    return ForceField.from_dict(
        section(
            [
                "atom.full",
                "bond.harmonic",
                "bond.morse",
                ("pair", "lj/cut", {"params": {"mixing": "geometric"}}),
                "pair.coul/cut",
                "pair.lj/class2",
            ],
            {
                "atom.full": atoms("A", "B", mass=[12.0, None], element=["C", "H"]),
                "bond.harmonic": table(name=["A-B"], itom=["A"], jtom=["B"], k=[300.0], r0=[1.1]),
                "bond.morse": table(
                    name=["A-B", "B-B"],
                    itom=["A", "B"],
                    jtom=["B", "B"],
                    d0=[1.0, 2.0],
                    alpha=[2.0, 2.0],
                    r0=[1.0, 0.7],
                ),
                "pair.lj%2Fcut": pairs(
                    [("A", "A", "A"), ("B", "B", "B")], epsilon=[0.1, 0.4], sigma=[3.0, 2.0]
                ),
                "pair.coul%2Fcut": pairs([]),
                "pair.lj%2Fclass2": pairs([("A", "A", "A")], epsilon=[0.2], sigma=[3.5]),
            },
        )
    )


def test_one_row_answers_directly() -> None:
    ff = _ff()
    assert ff.atom("A")["mass"] == 12.0
    assert ff.atom("A")["element"] == "C"
    assert ff.term("bond", "B-B")["d0"] == 2.0
    assert ff.match("bond", ("B", "B"))["r0"] == 0.7


def test_a_null_cell_is_none_and_a_missing_column_a_key_error() -> None:
    ff = _ff()
    assert ff.atom("B")["mass"] is None
    with pytest.raises(KeyError, match="'charge'"):
        ff.atom("A")["charge"]
    assert ff.atom("A").rows[0].get("charge", "absent") == "absent"


def test_a_parameter_only_one_answer_states_is_not_ambiguous() -> None:
    ff = _ff()
    # bond.harmonic and bond.morse both hold A-B; only harmonic has k
    assert ff.term("bond", "A-B")["k"] == 300.0
    assert ff.term("bond", "A-B")["d0"] == 1.0


def test_several_rows_stating_a_parameter_are_ambiguous() -> None:
    ff = _ff()
    with pytest.raises(
        AmbiguousLookup, match=r"'r0' is stated by 2 answers .*bond.harmonic\[A-B\]"
    ):
        ff.term("bond", "A-B")["r0"]
    assert ff.term("bond", "A-B", "morse")["r0"] == 1.0  # a style picks one
    with pytest.raises(AmbiguousLookup, match="'r0'"):
        ff.match("bond", ("A", "B"))["r0"]


def test_pair_short_form_reads_the_one_style_with_the_parameter() -> None:
    ff = _ff()
    with pytest.raises(AmbiguousLookup, match="'epsilon'"):
        ff.pair("A", "A")["epsilon"]  # lj/cut and lj/class2 both price it
    lj = ff.pair("A", "B", "lj/cut")
    assert lj["epsilon"] == pytest.approx(0.2)  # geometric: sqrt(0.1 * 0.4)
    assert lj.terms[0]["sigma"] == pytest.approx(6.0**0.5)
    with pytest.raises(KeyError, match="no 'charge_product'"):
        ff.pair("A", "B")["charge_product"]
