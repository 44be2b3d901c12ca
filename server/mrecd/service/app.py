"""The app factory: :func:`create_app` wires settings, the catalog, routers and problem handlers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import FastAPI

from .. import __version__, api
from ._runs import Runs
from .problems import install_handlers
from .routes import ops, records, trajectory
from .settings import Settings

__all__ = ["create_app"]


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service for ``settings`` (default: read from the ``MRECD_*`` environment).

    The lifespan opens one :class:`~mrecd.api.Catalog` for the app and
    closes every record it held open (committing durably) at shutdown.

    Parameters
    ----------
    settings
        What to serve and how.

    Returns
    -------
    FastAPI
        The ASGI app; run it with uvicorn or drive it with ``httpx.ASGITransport``.
    """
    settings = settings if settings is not None else Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        catalog = await to_thread.run_sync(api.open, settings.store)
        app.state.runs = Runs(catalog)
        try:
            yield
        finally:
            await app.state.runs.aclose()

    app = FastAPI(
        title="mrecd",
        version=__version__,
        summary="Molecular simulation records: create, append frames, read them back.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    install_handlers(app)
    app.include_router(ops.router)
    app.include_router(trajectory.router, prefix="/v1")  # before records' /{name}/{section}
    app.include_router(records.router, prefix="/v1")
    return app
