"""Fixtures for the client: a real uvicorn on 127.0.0.1, and one harness for sync and async.

Test bodies are ``async def`` and parametrized over ``kind`` (``"sync"`` /
``"async"``); they call the client through :func:`wait` (awaits a
coroutine, passes a value through), :func:`collect` (drains an iterator or
an async iterator) and :func:`section` (a property of the sync record, a
coroutine method of the async one), so one body exercises both clients.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mrecd
from _uvicorn import serve_app
from mrecd.service import Settings, create_app
from mrecd_client import AsyncClient, Client


def make_frame(step: int, n: int = 4, *, pe: float | None = None) -> mrecd.Frame:
    """A trajectory frame: ``n`` atoms with positions and ids, meta ``pe``, ``step``, ``time``."""
    rng = np.random.default_rng(step)
    xyz = {c: rng.uniform(0, 20, n) for c in "xyz"}
    return mrecd.Frame(
        {"atoms": {**xyz, "id": np.arange(n, dtype=np.uint64)}},
        meta={"pe": float(-step) if pe is None else pe},
        step=step,
        time=0.5 * step,
    )


@contextmanager
def serve(store: Path, **settings: Any) -> Iterator[str]:
    """A real uvicorn serving ``store`` on 127.0.0.1 in a thread; its base URL."""
    app = create_app(Settings(store=str(store), events_poll_seconds=0.05, **settings))
    with serve_app(app, timeout_graceful_shutdown=2) as url:
        yield url


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def live_server(store_dir: Path) -> Iterator[str]:
    """An open service (no tokens) on ``store_dir``; its base URL."""
    with serve(store_dir) as url:
        yield url


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    """Which client a test body drives."""
    return str(request.param)


@pytest.fixture
async def make_client(kind: str) -> AsyncIterator[Callable[..., Any]]:
    """``make_client(url, **options)``: a ``Client`` or an ``AsyncClient``, closed afterwards."""
    made: list[Any] = []

    def factory(url: str, **options: Any) -> Any:
        client = (Client if kind == "sync" else AsyncClient)(url, **options)
        made.append(client)
        return client

    yield factory
    for client in made:
        await wait(client.close() if kind == "sync" else client.aclose())


@pytest.fixture
async def client(live_server: str, make_client: Callable[..., Any]) -> Any:
    """A client of ``live_server`` of the parametrized kind."""
    return make_client(live_server)


async def wait(value: Any) -> Any:
    """``await value`` when it is awaitable (the async client), else ``value``."""
    return await value if inspect.isawaitable(value) else value


async def collect(items: Any) -> list[Any]:
    """Every item of an iterable or an async iterable."""
    if hasattr(items, "__aiter__"):
        return [item async for item in items]
    return list(items)


async def section(record: Any, name: str) -> Any:
    """Section ``name`` of a record: a property (sync) or a coroutine method (async)."""
    value = getattr(record, name)
    return await value() if inspect.iscoroutinefunction(value) else value


async def contains(client: Any, name: str) -> bool:
    """``name in client`` (sync) or ``await client.contains(name)`` (async)."""
    if isinstance(client, AsyncClient):
        return await client.contains(name)
    return name in client


async def take(items: Any, n: int) -> list[Any]:
    """The first ``n`` items of an iterator or async iterator, which is then closed."""
    out: list[Any] = []
    if hasattr(items, "__aiter__"):
        try:
            async for item in items:
                out.append(item)
                if len(out) == n:
                    break
        finally:
            await items.aclose()
        return out
    try:
        for item in items:
            out.append(item)
            if len(out) == n:
                break
    finally:
        items.close()
    return out
