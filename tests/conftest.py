"""Shared test helpers: where the fixtures live, and small frame factories."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA = FIXTURES / "schema"


def schema_cases(kind: str, prefix: str) -> list[Path]:
    """The fixture files ``schema/<kind>/<prefix>-*.json`` (``prefix`` is valid or invalid)."""
    return sorted((SCHEMA / kind).glob(f"{prefix}-*.json"))


def load_json(path: Path) -> Any:
    """Parse a fixture file."""
    return json.loads(path.read_text())


@pytest.fixture
def tmp_store(tmp_path: Path) -> Iterator[Path]:
    """A fresh directory for a store."""
    root = tmp_path / "store"
    root.mkdir()
    yield root


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A real S3-protocol server (moto) on 127.0.0.1 for the session; its endpoint URL."""
    import os

    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    saved = {k: os.environ.get(k) for k in _S3_ENV}
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_REGION="us-east-1",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ENDPOINT_URL=endpoint,
        AWS_ALLOW_HTTP="true",
    )
    yield endpoint
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    server.stop()


_S3_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ALLOW_HTTP",
)


@pytest.fixture
def s3_bucket(moto_endpoint: str) -> str:
    """A fresh bucket on the moto server; its ``s3://`` URL."""
    import uuid

    import httpx

    name = f"b-{uuid.uuid4().hex[:20]}"
    httpx.put(f"{moto_endpoint}/{name}", timeout=60).raise_for_status()  # a loaded machine
    return f"s3://{name}"
