"""Batch admission (``SequenceState.admit_many``, ``quantize_rows``): what a batch stores and
refuses is what admitting its frames one by one stores and refuses."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.model import Declaration, Frame, SequenceState, quantize
from mrecd.model._precision import quantize_rows

N = 3000


def _edge_rows(precision: float, rows: int) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    out = [rng.uniform(-50, 50, N) for _ in range(rows)]
    q = math.ldexp(1.0, math.frexp(precision)[1] - 1)
    huge = math.ldexp(1.0, 52) * q  # inf at the largest precisions
    edge = out[rows // 2].copy()
    edge[:7] = [np.nan, np.inf, -np.inf, huge, -huge, 2.0**60, -0.0]
    edge[7:12] = [-1e-300, 5e-324, np.nextafter(huge, 0), 0.5 * q, 1.5 * q]
    out[rows // 2] = edge
    return out


@pytest.mark.parametrize("precision", [1e-3, 1e-2, 0.5, 3.0, 2.0**-1000, 2.0**1000])
def test_quantize_rows_is_quantize_of_each_row_bit_for_bit(precision: float) -> None:
    rows = _edge_rows(precision, 40)  # more rows than one tile
    got = quantize_rows(rows, precision)
    assert len(got) == len(rows)
    for row, stored in zip(rows, got, strict=True):
        want = quantize(row, precision)
        assert stored.shape == want.shape
        assert stored.view(np.uint64).tobytes() == want.view(np.uint64).tobytes()
        assert not stored.flags.writeable


def _declaration() -> Declaration:
    f64 = {"dtype": "f64", "trailing": [], "precision": 1e-3}
    u64 = {"dtype": "u64", "trailing": []}
    return Declaration.from_dict(
        {
            "blocks": {
                "atoms": {"columns": {"x": f64, "y": f64, "z": {**f64, "nullable": True}}},
                "bonds": {"columns": {"atomi": u64, "atomj": u64}},
            },
            "meta": {},
        }
    )


def _frames(n: int) -> list[Frame]:
    """A run whose bonds change twice, with a masked column and a frame of another size."""
    rng = np.random.default_rng(3)
    bonds = {
        "atomi": np.arange(0, 8, 2, dtype=np.uint64),
        "atomj": np.arange(1, 9, 2, dtype=np.uint64),
    }
    later = {"atomi": np.arange(4, dtype=np.uint64), "atomj": np.arange(4, dtype=np.uint64) + 1}
    out = []
    for i in range(n):
        atoms_n = 5 if i == n // 3 else 9
        pos = rng.uniform(0, 10, (3, atoms_n))
        atoms: dict[str, Any] = {"x": pos[0], "y": pos[1], "z": pos[2]}
        if i == n // 2:
            atoms["z"] = mrecd.Column(pos[2], validity=np.arange(atoms_n) % 2 == 0)
        if i == n - 3:
            atoms["y"] = atoms["x"]  # one array presented as two columns
        out.append(Frame({"atoms": atoms, "bonds": later if i > 2 * n // 3 else bonds}, step=3 * i))
    return out


def _same(a: mrecd.Block, b: mrecd.Block) -> bool:
    return a.same_content(b) and list(a) == list(b)


def test_a_batch_stores_what_frame_by_frame_admission_stores() -> None:
    frames = _frames(40)
    one, many = SequenceState(_declaration()), SequenceState(_declaration())
    singles = [one.admit(f, path=f"frame {i}") for i, f in enumerate(frames)]
    batched = many.admit_many(frames[:25]) + many.admit_many(frames[25:])
    assert len(batched) == len(singles)
    for a, b in zip(singles, batched, strict=True):
        assert (a.ordinal, a.step, a.time, a.box) == (b.ordinal, b.step, b.time, b.box)
        assert a.blocks.keys() == b.blocks.keys()
        for name in a.blocks:
            assert _same(a.blocks[name], b.blocks[name]), (a.ordinal, name)
        for name in a.frame:
            assert _same(a.frame[name], b.frame[name])
    assert sum("bonds" in u.blocks for u in batched) == 2  # first frame, then one change
    assert (many.nstep, many.last_step) == (one.nstep, one.last_step)
    assert all(_same(one.current[n], many.current[n]) for n in one.current)


def _bad(kind: str, frame: Frame) -> Frame:
    blocks = {name: dict(block.columns) for name, block in frame.items()}
    if kind == "undeclared column":
        blocks["atoms"]["vx"] = blocks["atoms"]["x"]
    elif kind == "missing column":
        del blocks["atoms"]["y"]
    elif kind == "undeclared block":
        blocks["velocities"] = {"vx": np.zeros(9)}
    elif kind == "mask not nullable":
        blocks["atoms"]["x"] = mrecd.Column(
            blocks["atoms"]["x"].values, validity=[True] * 8 + [False]
        )
    elif kind == "step":
        return Frame(blocks, step=0)
    elif kind == "time":
        return Frame(blocks, step=frame.step, time=1.0)
    return Frame(blocks, step=frame.step)


@pytest.mark.parametrize(
    "kind",
    [
        "undeclared column",
        "missing column",
        "undeclared block",
        "mask not nullable",
        "step",
        "time",
    ],
)
def test_a_bad_frame_mid_batch_is_refused_as_admitting_it_alone_refuses_it(kind: str) -> None:
    frames = _frames(30)
    frames[17] = _bad(kind, frames[17])
    alone = SequenceState(_declaration())
    with pytest.raises(mrecd.InvalidRecord) as one:
        for i, f in enumerate(frames):
            alone.admit(f, path=f"frame {100 + i}")
    state = SequenceState(_declaration())
    trial = state.copy()
    with pytest.raises(mrecd.InvalidRecord) as many:
        trial.admit_many(frames, first=100)
    assert type(many.value) is type(one.value)
    assert (many.value.message, many.value.path) == (one.value.message, one.value.path)
    assert many.value.path is not None and many.value.path.startswith("frame 117")
    assert (state.nstep, state.last_step, state.current) == (0, None, {})
