"""A record's system value: the plain-system fast path builds what the general
decoder builds, leaves everything else to it, and a broken system is still
refused on the record's first read."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from collection_helpers import H2O2, X0, atoms, frame, new, raw, system

import mrecd
from mrecd.bindings.lmdb import system_key
from mrecd.bindings.lmdb._system import decode_system, plain_system
from mrecd.codecs import decode_frame, encode_frame


def mrf1(header: dict[str, Any] | str, payload: bytes = b"") -> bytes:
    """Frame bytes of a header (a dict, or its exact text) and a payload."""
    text = (header if isinstance(header, str) else json.dumps(header)).encode()
    prefix = b"MRF1" + struct.pack("<I", len(text)) + text
    return prefix + bytes(-len(prefix) & 7) + payload


def strings(n: int = 4, **extra: Any) -> dict[str, Any]:
    """A system header: one ``atoms`` block of ``element`` strings."""
    column = {"dtype": "string", "shape": [n], "values": ["O", "O", "H", "H"][:n]}
    atoms = {"count": n, "structural_shape": None, "columns": {"element": column}}
    return {"blocks": {"atoms": atoms}, **extra}


PLAIN = {
    "strings, string meta": mrecd.Frame(
        {"atoms": {"element": np.array(["O", "O", "H", "H"])}},
        meta={"smiles": "OO", "name": "peroxide"},
    ),
    "no meta": mrecd.Frame({"atoms": {"element": np.array(["O", "H"])}}),
    "numbers and strings, two blocks": mrecd.Frame(
        {
            "atoms": {
                "element": np.array(["C", "H", "H"]),
                "charge": np.array([-0.5, 0.25, 0.25]),
                "type_id": np.arange(3, dtype=np.uint64),
                "flags": np.array([1, -2, 3], dtype=np.int32),
            },
            "residues": {"res_name": np.array(["MET"])},
        },
        meta={"formula": "CH2"},
    ),
    "empty block": mrecd.Frame({"atoms": {"element": np.array([], dtype=str)}}),
}


@pytest.mark.parametrize("system", PLAIN.values(), ids=PLAIN.keys())
def test_plain_system_is_the_general_decoders_frame(system: mrecd.Frame) -> None:
    buf = encode_frame(system)
    fast, general = plain_system(buf), decode_frame(buf)
    assert fast is not None  # the fast path took it
    assert fast == general == system
    assert list(fast.meta_types.items()) == list(general.meta_types.items())
    for name, block in general.items():
        assert list(fast[name]) == list(block)
        for column, expected in block.items():
            got = fast[name][column]
            assert got.dtype == expected.dtype
            assert got.values.dtype == expected.values.dtype
            assert not got.values.flags.writeable
            np.testing.assert_array_equal(got.values, expected.values)
    assert decode_system(buf, 2, "records[0]") == general


NOT_PLAIN = {
    "a cell": mrecd.Frame(
        {"atoms": {"element": np.array(["O"])}}, box={"vectors": (np.eye(3) * 10.0).tolist()}
    ),
    "a bool column": mrecd.Frame({"atoms": {"free": np.array([True, False])}}),
    "precision": encode_frame(
        mrecd.Frame(
            {"atoms": mrecd.Block({"charge": mrecd.Column(np.array([0.5]), "f64", precision=1e-3)})}
        )
    ),
    "a 2-d column": mrecd.Frame({"atoms": {"v": np.zeros((2, 3))}}),
    "an f64 meta value": mrecd.Frame({"atoms": {"element": np.array(["O"])}}, meta={"q": 0.5}),
    "targets": mrecd.Frame(
        {
            "atoms": {"element": np.array(["O", "O"])},
            "bonds": mrecd.Block(
                {"atomi": np.array([0], dtype=np.uint64), "atomj": np.array([1], dtype=np.uint64)},
                targets={"atomi": "atoms", "atomj": "atoms"},
            ),
        }
    ),
    "whitespace around the header": mrf1(" " + json.dumps(strings())),
    "meta without its tags": mrf1(strings(meta={"smiles": "OO"})),
    "tags of other keys": mrf1(strings(meta={"a": "x"}, meta_types={"b": "string"})),
}


@pytest.mark.parametrize("system", NOT_PLAIN.values(), ids=NOT_PLAIN.keys())
def test_other_systems_take_the_general_decoder(system: mrecd.Frame | bytes) -> None:
    buf = system if isinstance(system, bytes) else encode_frame(system)
    assert plain_system(buf) is None
    assert decode_system(buf, 2, "records[0]") == decode_frame(buf)


BROKEN = {
    "fewer strings than rows": (
        mrf1(json.dumps(strings(meta={})).replace('"H", "H"]', '"H"]')),
        mrecd.FrameBytesError,
        "4 strings",
    ),
    "a number tagged string": (
        mrf1(strings(meta={"smiles": 1}, meta_types={"smiles": "string"})),
        mrecd.InvalidRecord,
        "not a string",
    ),
    "a step": (mrf1(strings(meta={}, step=0)), mrecd.InvalidRecord, "no step or time"),
    "a bare NaN": (
        mrf1(json.dumps(strings()).replace('"structural_shape": null', '"structural_shape": NaN')),
        mrecd.FrameBytesError,
        "not UTF-8 JSON",
    ),
    "a buffer past the end": (
        mrf1(
            {
                "blocks": {
                    "atoms": {
                        "count": 2,
                        "columns": {"charge": {"dtype": "f64", "shape": [2], "offset": 8}},
                    }
                },
                "meta": {},
            },
            bytes(16),
        ),
        mrecd.FrameBytesError,
        "past the end",
    ),
}


@pytest.mark.parametrize(("value", "error", "message"), BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_system_is_refused_on_the_first_read(
    tmp_path: Path, value: bytes, error: type[Exception], message: str
) -> None:
    path = tmp_path / "s.mrec.lmdb"
    with new(path, declaration=H2O2) as col:
        col.append({"system": system(), "trajectory": [frame(0, pe=1.0, atoms=atoms(X0))]})
    with raw(path, write=True) as txn:
        txn.put(system_key(0), value)
    assert plain_system(value) is None
    with mrecd.open_collection(path) as col:
        with pytest.raises(error, match=message):
            col.read_many([0])
        with pytest.raises(error, match=message):
            col[0]


def test_every_bench_shaped_system_reads_as_written(tmp_path: Path) -> None:
    path = tmp_path / "b.mrec.lmdb"
    rng = np.random.default_rng(5)
    systems = [
        mrecd.Frame(
            {"atoms": {"element": rng.choice(np.array(["C", "H", "N", "O"]), n)}},
            meta={"formula": f"C{n}"},
        )
        for n in (1, 7, 30)
    ]
    with new(path, declaration=H2O2) as col:
        col.extend(
            {
                "system": s,
                "trajectory": [frame(0, pe=-1.0, atoms=atoms(np.zeros(s["atoms"].count)))],
            }
            for s in systems
        )
    with mrecd.open_collection(path) as col:
        assert [rec.system for rec in col.read_many(range(3))] == systems
