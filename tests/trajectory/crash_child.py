"""A writer that appends deterministic frames until it is killed (crash-safety tests, soak script).

``python crash_child.py ROOT SEED``: reopens the trajectory at ``ROOT``, appends
``expected_frame(i)`` for ordinals from the committed ``nstep`` on, with a
random ``K`` and random durable flushes, printing ``DURABLE <nstep>`` after each
durable flush returns. The frames depend only on their ordinal, so a parent
can replay what every committed frame must be.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

import mrecd

DECLARATION: dict[str, Any] = {
    "blocks": {
        "atoms": {
            "columns": {
                "x": {"dtype": "f64", "trailing": [], "precision": 0.001},
                "y": {"dtype": "f64", "trailing": []},
                "element": {"dtype": "string", "trailing": []},
            }
        },
        "bonds": {
            "columns": {
                "atomi": {"dtype": "u64", "trailing": []},
                "atomj": {"dtype": "u64", "trailing": []},
            }
        },
        "flags": {"columns": {"on": {"dtype": "bool", "trailing": [], "nullable": True}}},
    },
    "meta": {"pe": {"dtype": "f64", "fill": "NaN"}, "tag": {"dtype": "string"}},
}


def presented_frame(i: int) -> mrecd.Frame:
    """The frame presented at ordinal ``i`` (sparse: blocks come and go)."""
    rng = np.random.default_rng(i)
    blocks: dict[str, Any] = {}
    if i % 11 != 5:
        n = 3 + (i // 40) % 3  # row count changes every 40 frames: regular -> indexed
        blocks["atoms"] = {
            "x": rng.uniform(-9, 9, n),
            "y": rng.normal(size=n),
            "element": ["C"] * n,
        }
    if i % 17 == 0:
        m = i % 3
        blocks["bonds"] = {
            "atomi": np.arange(m, dtype=np.uint64),
            "atomj": np.arange(m, dtype=np.uint64) + 1,
        }
    if i % 13 == 3:
        valid = rng.integers(0, 2, 2).astype(bool)
        blocks["flags"] = {"on": mrecd.Column(rng.integers(0, 2, 2).astype(bool), validity=valid)}
    meta: dict[str, Any] = {"tag": f"t{i}"}
    if i % 3:
        meta["pe"] = float(rng.normal())
    box = mrecd.Box(np.eye(3) * (10.0 + i // 25)) if i % 25 == 0 else None
    step = 2 * i + (1 if i >= 30 else 0)  # the step progression breaks at ordinal 30
    return mrecd.Frame(blocks, meta=meta, box=box, step=step, time=0.25 * i)


def expected_frames(n: int) -> list[mrecd.Frame]:
    """The resolved frames 0..n-1 a reader must return (carry-forward replayed)."""
    declaration = mrecd.Declaration.from_dict(DECLARATION)
    current: dict[str, mrecd.Block] = {}
    box = None
    out = []
    for i in range(n):
        f = declaration.conform(presented_frame(i))
        current.update(f.blocks)
        box = f.box if f.box is not None else box
        out.append(
            mrecd.Frame(
                dict(current),
                meta=f.meta,
                meta_types=f.meta_types,
                box=box,
                step=f.step,
                time=f.time,
            )
        )
    return out


def main(root: Path, seed: int) -> None:
    from mrecd.api._trajectory import create_trajectory, open_trajectory

    rng = np.random.default_rng(seed)
    if not (root / "trajectory" / "zarr.json").exists():
        create_trajectory(root, DECLARATION)
    traj = open_trajectory(root, flush_every=int(rng.integers(1, 25)))
    i = len(traj)
    print(f"READY {i}", flush=True)
    while True:
        traj.append(presented_frame(i))
        i += 1
        if rng.random() < 0.08:
            print(f"DURABLE {traj.flush()}", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
