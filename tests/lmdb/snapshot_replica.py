"""A replica in its own process: serves a catalog's published collections from its cache.

Run as ``python snapshot_replica.py URL CACHE_DIR``; each line ``NAME`` on
standard input answers one JSON line: the records it reads and the snapshot
served (or the error).
"""

from __future__ import annotations

import json
import sys

import mrecd


def main() -> None:
    url, cache_dir = sys.argv[1], sys.argv[2]
    catalog = mrecd.open(url, cache_dir=cache_dir, revalidate_seconds=0.2)
    for line in sys.stdin:
        name = line.strip()
        try:
            with catalog.collection(name) as collection:
                answer = {
                    "records": [r.meta.get("tag") for r in collection],
                    "sha256": collection.snapshot["sha256"],  # type: ignore[attr-defined]
                    "path": collection.path,
                }
        except mrecd.MrecdError as exc:
            answer = {"error": type(exc).__name__, "message": str(exc)}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
