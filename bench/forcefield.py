"""Force-field lookups per second (forcefield.md §13) on a synthetic force field,
locally and over HTTP.

1,000 atom types, 5,000 bonded rows (1,500 bonds, 1,500 angles, 1,500 dihedrals
with a quarter wildcard rows, 500 impropers) and a ``pair.lj/charmm`` table of
1,000 self rows plus 500 cross rows. The floor is a plain ``dict`` probe per
query, measured in the same run: the ratio is the cost of a whole answer
(validation of the query, the row's values, the result object) over one probe.

Over HTTP, ``mrecd serve`` (a uvicorn subprocess on 127.0.0.1) serves the
force field as a record, and three ways of asking ``atom(type)`` are timed
in one run: the client's cached ``ForceField`` (fetched once, lookups run
locally), the same with a revalidation (``If-None-Match`` -> 304) before each
lookup, and the lookup route ``GET …/forcefield/atoms/{type}`` (one request
per lookup on a kept-alive connection).
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import numpy as np

import mrecd
from mrecd.forcefield import ForceField
from mrecd.model import Block, Column
from mrecd_client import Client

from .service import free_port, spawn  # the service bench's server harness

N_TYPES = 1_000
N_BONDS, N_ANGLES, N_DIHEDRALS, N_IMPROPERS = 1_500, 1_500, 1_500, 500
N_CROSS = 500
QUERIES = 20_000
HTTP_QUERIES = 1_000  # requests per HTTP row (each a round trip)


def _strings(values: Sequence[str]) -> Column:
    return Column(np.array(values, dtype=np.dtypes.StringDType()), "string")


def _floats(rng: random.Random, n: int, low: float, high: float) -> Column:
    return Column(np.array([rng.uniform(low, high) for _ in range(n)]), "f64")


def _relations(rng: random.Random, types: list[str], arity: int, n: int, wildcard: float) -> Block:
    ends = ["itom", "jtom", "ktom", "ltom"][:arity]
    rows: set[tuple[str, ...]] = set()
    while len(rows) < n:
        row = tuple(rng.choice(types) for _ in range(arity))
        if arity == 4 and rng.random() < wildcard:
            row = ("", row[1], row[2], "")
        rows.add(row)
    ordered = sorted(rows)
    columns: dict[str, Column] = {"name": _strings(["-".join(r) for r in ordered])}
    for i, column in enumerate(ends):
        columns[column] = _strings([r[i] for r in ordered])
    columns["k"] = _floats(rng, n, 1.0, 500.0)
    return Block(columns)


def build(seed: int = 7) -> tuple[ForceField, dict[str, list[Any]]]:
    """The synthetic force field and the query lists the benchmark runs."""
    rng = random.Random(seed)
    types = [f"T{i:04d}" for i in range(N_TYPES)]
    cross: set[tuple[str, str]] = set()
    while len(cross) < N_CROSS:
        a, b = sorted(rng.sample(types, 2))
        cross.add((a, b))
    cross_rows = sorted(cross)
    pair_names = types + [f"{a}:{b}" for a, b in cross_rows]
    tables = {
        "atom.full": Block(
            {
                "name": _strings(types),
                "element": _strings([rng.choice("CHNOS") for _ in types]),
                "mass": _floats(rng, N_TYPES, 1.0, 40.0),
                "charge": _floats(rng, N_TYPES, -1.0, 1.0),
            }
        ),
        "bond.harmonic": _relations(rng, types, 2, N_BONDS, 0.0),
        "angle.harmonic": _relations(rng, types, 3, N_ANGLES, 0.0),
        "dihedral.charmm": _relations(rng, types, 4, N_DIHEDRALS, 0.25),
        "improper.harmonic": _relations(rng, types, 4, N_IMPROPERS, 0.0),
        "pair.lj%2Fcharmm": Block(
            {
                "name": _strings(pair_names),
                "itom": _strings(types + [a for a, _ in cross_rows]),
                "jtom": _strings(types + [b for _, b in cross_rows]),
                "epsilon": _floats(rng, len(pair_names), 0.01, 0.3),
                "sigma": _floats(rng, len(pair_names), 2.0, 4.0),
            }
        ),
    }
    document = {
        "name": "synthetic",
        "units": {"preset": "real"},
        "special_bonds": {"lj": [0.0, 0.0, 0.5], "coul": [0.0, 0.0, 0.8333]},
        "styles": [
            {"category": c, "style": s}
            for c, s in (
                ("atom", "full"),
                ("bond", "harmonic"),
                ("angle", "harmonic"),
                ("dihedral", "charmm"),
                ("improper", "harmonic"),
            )
        ]
        + [{"category": "pair", "style": "lj/charmm", "params": {"mixing": "arithmetic"}}],
    }
    ff = ForceField(document, tables)
    angles = tables["angle.harmonic"]["name"].values.tolist()
    dihedrals = [
        tuple(tables["dihedral.charmm"][c].values[r] for c in ("itom", "jtom", "ktom", "ltom"))
        for r in range(N_DIHEDRALS)
    ]
    queries: dict[str, list[Any]] = {
        "atom": [rng.choice(types) for _ in range(QUERIES)],
        "term": [rng.choice(angles) for _ in range(QUERIES)],
        "pair_mixed": [tuple(rng.sample(types, 2)) for _ in range(QUERIES)],
        "pair_cross": [rng.choice(cross_rows)[:: rng.choice((1, -1))] for _ in range(QUERIES)],
        "match": [
            tuple(rng.choice(types) if e == "" else e for e in d)[:: rng.choice((1, -1))]
            for d in (rng.choice(dihedrals) for _ in range(QUERIES))
        ],
    }
    return ff, queries


def _rate(run: Callable[[Any], Any], queries: list[Any]) -> float:
    started = time.perf_counter()
    for query in queries:
        run(query)
    return len(queries) / (time.perf_counter() - started)


def main() -> None:
    """Print lookups per second for ``atom``, ``term``, ``pair`` and ``match``."""
    built, queries = build()
    document, tables = built.to_section()
    started = time.perf_counter()
    ff = ForceField(document, tables)
    constructed = time.perf_counter()
    ff.atom(queries["atom"][0])  # builds the index
    indexed = time.perf_counter()
    floor_dict = {q: q for q in queries["atom"]}
    floor = _rate(floor_dict.__getitem__, queries["atom"])
    runs: list[tuple[str, Callable[[Any], Any], str]] = [
        ("atom(type)", ff.atom, "atom"),
        ("term('angle', name)", lambda q: ff.term("angle", q), "term"),
        ("term('angle', name, 'harmonic')", lambda q: ff.term("angle", q, "harmonic"), "term"),
        ("pair(a, b): mixed", lambda q: ff.pair(*q), "pair_mixed"),
        ("pair(a, b): cross row", lambda q: ff.pair(*q), "pair_cross"),
        ("match('dihedral', 4 types)", lambda q: ff.match("dihedral", q), "match"),
    ]
    pair = ff.pair(*queries["pair_mixed"][0]).terms[0]
    cross = ff.pair(*queries["pair_cross"][0]).terms[0]
    assert pair.values["epsilon"].source == "mixed" and cross.cross
    print(f"{N_TYPES} atom types, {N_BONDS + N_ANGLES + N_DIHEDRALS + N_IMPROPERS} bonded rows,")
    print(f"{N_TYPES + N_CROSS} pair rows ({N_CROSS} cross); {QUERIES} queries per lookup.\n")
    print(f"- validate (ForceField construction): {(constructed - started) * 1e3:.1f} ms")
    print(f"- index build (first lookup): {(indexed - constructed) * 1e3:.1f} ms\n")
    print("| lookup | lookups/s | µs/lookup | floor (dict probe) / lookup |")
    print("|---|---:|---:|---:|")
    for label, run, key in runs:
        rate = _rate(run, queries[key])
        print(f"| {label} | {rate:,.0f} | {1e6 / rate:.1f} | {floor / rate:,.0f}× |")
    print(f"| floor: `dict[name]` | {floor:,.0f} | {1e6 / floor:.3f} | 1× |")
    _http(ff, queries["atom"])


def _http(ff: ForceField, types: list[str]) -> None:
    """``atom(type)`` over HTTP: cached client, revalidated client, lookup route, local."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "data"
        mrecd.open(store).create_record("synthetic", forcefield=ff).close()
        port = free_port()
        args = ["-m", "mrecd.cli", "serve", str(store), "--port", str(port)]
        url = f"http://127.0.0.1:{port}"
        with spawn(args, port, "/readyz", Path(tmp) / "serve.log"), Client(url) as client:
            record = client.record("synthetic")
            started = time.perf_counter()
            cached = record.forcefield
            fetched = time.perf_counter() - started
            assert cached is not None and cached == ff
            local_rate = _rate(ff.atom, types)
            cached_rate = _rate(cached.atom, types)

            def revalidated(t: str) -> Any:
                remote = record.forcefield
                assert remote is cached  # a 304: the object held
                return remote.atom(t)

            revalidated_rate = _rate(revalidated, types[:HTTP_QUERIES])
            with httpx.Client(base_url=f"{url}/v1/records/synthetic/forcefield") as http:

                def route(t: str) -> Any:
                    response = http.get(f"/atoms/{quote(t, safe='')}")
                    assert response.status_code == 200
                    return response.content

                route(types[0])  # builds the server's index
                route_rate = _rate(route, types[:HTTP_QUERIES])
    print(f"\nOver HTTP (`mrecd serve` subprocess; first fetch {fetched * 1e3:.0f} ms, MRF1):\n")
    print("| `atom(type)` asked of | lookups/s | µs/lookup |")
    print("|---|---:|---:|")
    for label, rate in (
        ("local `ForceField`", local_rate),
        ("client's cached `ForceField` (`ff = rec.forcefield` once)", cached_rate),
        ("client, `rec.forcefield` revalidated (304) per lookup", revalidated_rate),
        ("lookup route `GET …/forcefield/atoms/{type}`", route_rate),
    ):
        print(f"| {label} | {rate:,.0f} | {1e6 / rate:.1f} |")


if __name__ == "__main__":
    main()
