"""A client-only install (``pip install mrecd``, no ``server`` extra) is enough for mrecd_client.

Each check runs in a fresh interpreter on this tree's sources, so modules
the test session already loaded cannot hide an import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

#: What the `server` extra installs, and our own layers that use it.
SERVER_ONLY = (
    "zarr",
    "lmdb",
    "obstore",
    "fastapi",
    "uvicorn",
    "starlette",
    "numcodecs",
    "google_crc32c",
    "tqdm",
    "mrecd.storage",
    "mrecd.bindings",
    "mrecd.api",
    "mrecd.server",
    "mrecd.service",
)


def _run(code: str) -> str:
    paths = [str(ROOT / "server"), str(ROOT / "client")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _loaded_after(statement: str) -> list[str]:
    code = f"""
        import json, sys
        {statement}
        names = set(sys.modules)
        print(json.dumps(sorted(m for m in {SERVER_ONLY!r} if m in names)))
    """
    return list(json.loads(_run(code)))


@pytest.mark.parametrize(
    "statement",
    ["import mrecd_client", "import mrecd", "import mrecd.model", "import mrecd.codecs"],
)
def test_light_imports_load_no_server_part(statement: str) -> None:
    assert _loaded_after(statement) == []


def test_building_clients_loads_no_server_part() -> None:
    statement = (
        "import mrecd_client; "
        "c = mrecd_client.Client('http://127.0.0.1:9', token='t'); "
        "a = mrecd_client.AsyncClient('http://127.0.0.1:9'); "
        "c.close()"
    )
    assert _loaded_after(statement) == []


def test_the_local_api_does_load_them() -> None:
    # the control: the check above sees these modules when they are imported
    assert {"zarr", "lmdb", "mrecd.bindings", "mrecd.api"} <= set(_loaded_after("import mrecd.api"))


def test_the_client_side_works_with_the_server_extra_missing() -> None:
    code = """
        import importlib.abc, sys

        SERVER = {"zarr", "lmdb", "obstore", "fastapi", "uvicorn", "starlette"}
        SERVER |= {"numcodecs", "google_crc32c", "tqdm"}

        class NotInstalled(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in SERVER:
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, NotInstalled())
        import mrecd, mrecd_client
        from mrecd.errors import MrecdError

        with mrecd_client.Client("http://127.0.0.1:9", token="t", retries=0) as client:
            try:
                client.records()
            except mrecd.RetryableError:
                pass  # nothing listens there: the transport failure maps into the error tree

        frame = mrecd.Frame({"atoms": {"x": [0.0, 1.5]}}, meta={"pe": -1.0}, step=3)
        back = mrecd.decode_frame(mrecd.encode_frame(frame))
        assert back.step == 3 and back["atoms"]["x"].values.tolist() == [0.0, 1.5]
        record = mrecd.Record.from_dict({"meta": {}, "system": frame.to_dict()})
        assert record.system is not None
        error = MrecdError.from_problem(mrecd.NotFound("no run", path="r1").to_problem())
        assert isinstance(error, mrecd.NotFound) and isinstance(error, KeyError)
        try:
            import zarr
        except ModuleNotFoundError:
            print("blocked")
    """
    assert _run(code).strip() == "blocked"
