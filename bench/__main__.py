"""Run the benchmarks: ``python -m bench [name ...]`` (all when no name is given)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path


def _names() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_"))


def main(argv: list[str]) -> int:
    names = argv or _names()
    unknown = set(names) - set(_names())
    if unknown:
        print(f"unknown benchmark(s) {sorted(unknown)}; have {_names()}", file=sys.stderr)
        return 2
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        print(f"\n## {name}\n", flush=True)
        started = time.perf_counter()
        module.main()
        print(f"\n({name}: {time.perf_counter() - started:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
