"""Block names of style tables: ``<category>.<percent-encoded style>`` (forcefield.md §3.1)."""

from __future__ import annotations

import pytest
from ff_helpers import atoms, section, table
from hypothesis import given
from hypothesis import strategies as st

from mrecd.errors import InvalidRecord
from mrecd.forcefield import (
    ForceField,
    block_name,
    decode_style,
    encode_style,
    parse_block_name,
)


@pytest.mark.parametrize(
    ("category", "style", "name"),
    [
        ("bond", "harmonic", "bond.harmonic"),
        ("pair", "lj/cut/coul/long", "pair.lj%2Fcut%2Fcoul%2Flong"),
        ("x", "a.b", "x.a%2Eb"),
        ("x", "x~y", "x.x%7Ey"),
        ("x", "100%", "x.100%25"),
        ("x", "é", "x.%C3%A9"),
        ("x", "a b", "x.a%20b"),
        ("x", "A-z_09", "x.A-z_09"),
    ],
)
def test_block_names_encode_and_decode_as_specified(category: str, style: str, name: str) -> None:
    assert block_name(category, style) == name
    assert parse_block_name(name) == (category, style)


def test_the_encoding_differs_from_urllib_quote() -> None:
    # quote() keeps "." and "~"; the spec's codec escapes them.
    assert encode_style("a.b~c") == "a%2Eb%7Ec"


@given(st.text(min_size=1))
def test_every_style_round_trips(style: str) -> None:
    encoded = encode_style(style)
    assert set(encoded) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_%")
    assert decode_style(encoded) == style


@pytest.mark.parametrize(
    "encoded",
    [
        "lj/cut",  # "/" must be escaped
        "a%2",  # truncated escape
        "a%2f",  # lowercase hex
        "a%41",  # "A" is never escaped
        "%FF",  # not UTF-8
        "é",  # raw non-ASCII
    ],
)
def test_decoding_refuses_what_the_encoder_never_writes(encoded: str) -> None:
    with pytest.raises(InvalidRecord):
        decode_style(encoded)


@pytest.mark.parametrize("name", ["nodot", "Bond.harmonic", ".harmonic", "bond."])
def test_parse_block_name_refuses_malformed_names(name: str) -> None:
    with pytest.raises(InvalidRecord):
        parse_block_name(name)


def test_a_style_table_is_located_by_its_encoded_name() -> None:
    ff = ForceField.from_dict(
        section(
            ["atom.full", "pair.lj/cut"],
            {
                "atom.full": atoms("A"),
                "pair.lj%2Fcut": table(name=["A"], itom=["A"], jtom=["A"], epsilon=[0.1]),
            },
        )
    )
    assert ff.table("pair", "lj/cut").count == 1
    assert ff.style("pair", "lj/cut").block == "pair.lj%2Fcut"


def test_a_table_under_the_unencoded_name_is_not_the_styles_table() -> None:
    data = section(
        ["pair.lj/cut"],
        {"pair.lj/cut": table(name=["A"], itom=["A"], jtom=["A"])},
    )
    with pytest.raises(InvalidRecord, match=r"F10"):
        ForceField.from_dict(data)


def test_a_stray_block_survives_a_round_trip() -> None:
    data = section(
        ["atom.full"],
        {"atom.full": atoms("A"), "foo.bar": table(anything=[1.0, float("1e300")])},
    )
    ff = ForceField.from_dict(data)
    assert "foo.bar" in ff.tables
    again = ForceField.from_dict(ff.to_dict())
    assert again == ff
    assert again.tables["foo.bar"]["anything"].values.tolist() == [1.0, 1e300]
