"""The app factory: :func:`create_app` wires settings, the catalog, routers and problem handlers."""

from __future__ import annotations

import faulthandler
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from anyio import to_thread
from fastapi import FastAPI
from starlette_compress import CompressMiddleware, add_compress_type

from .. import __version__, api
from ._collections import Collections
from ._forcefields import ForceFields
from ._metrics import ObserveRequests, ServiceMetrics
from ._packs import Packs
from ._runs import Runs
from .media import COMPRESSIBLE
from .problems import add_problem_schema, install_handlers, problem_responses
from .routes import collections, forcefield, ops, page, records, trajectory
from .settings import Settings

__all__ = ["create_app", "dump_stacks_on_sigusr1"]


def dump_stacks_on_sigusr1() -> None:
    """Print every thread's Python stack to stderr when the process gets ``SIGUSR1``.

    A worker that stops answering can then be asked where it is
    (``kill -USR1 <pid>``) without stopping it; faulthandler writes from its
    own C handler, so this works even while the event loop is blocked.
    """
    if not hasattr(signal, "SIGUSR1"):  # Windows
        return
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return  # stderr is no file (captured, replaced or closed): nowhere to write
    faulthandler.register(signal.SIGUSR1, all_threads=True)


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
        dump_stacks_on_sigusr1()
        catalog = await to_thread.run_sync(_open_catalog, settings)
        app.state.runs = Runs(catalog)
        app.state.packs = Packs(app.state.runs)
        app.state.collections = Collections(
            catalog, revalidate_seconds=settings.cache_revalidate_seconds
        )
        app.state.forcefields = ForceFields(catalog)
        try:
            yield
        finally:
            await app.state.collections.aclose()
            await app.state.runs.aclose()
            app.state.packs.close()

    app = FastAPI(
        title="mrecd",
        version=__version__,
        summary="Molecular simulation records: create, append frames, read them back.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.metrics = ServiceMetrics()
    install_handlers(app)
    app.include_router(ops.router, responses=problem_responses(500))
    # every /v1 route may refuse a token (401, 403), a name or parameter (422) or fail (500, 503)
    common = problem_responses(401, 403, 422, 500, 503)
    app.include_router(trajectory.router, prefix="/v1", responses=common)  # before /{section}
    app.include_router(forcefield.router, prefix="/v1", responses=common)  # before /{section}
    app.include_router(records.router, prefix="/v1", responses=common)
    app.include_router(collections.router, prefix="/v1", responses=common)
    page.install(app)  # public static files: the data calls carry the token
    _add_middleware(app)
    app.openapi = _with_problem_schema(app)  # type: ignore[method-assign]
    return app


def _open_catalog(settings: Settings) -> api.Catalog:
    """The catalog of ``settings.store``, with its snapshot cache when one is configured."""
    return api.open(
        settings.store,
        cache_dir=settings.cache_dir,
        revalidate_seconds=settings.cache_revalidate_seconds,
    )


def _add_middleware(app: FastAPI) -> None:
    """Compression inside, observation outside (it counts the bytes as sent on the wire)."""
    for media_type in COMPRESSIBLE:
        add_compress_type(media_type)
    # gzip and zstd only (as service.md says); SSE is flushed per event, never buffered
    app.add_middleware(CompressMiddleware, minimum_size=500, brotli=False)
    app.add_middleware(ObserveRequests, metrics=app.state.metrics)


def _with_problem_schema(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """``app.openapi`` that also carries the ``Problem`` schema the error responses name."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _constrain_parameters(add_problem_schema(generate()))
        return app.openapi_schema

    return openapi


#: the rules the routes enforce on these parameters, stated in the document (one place)
_PARAMETER_RULES: dict[tuple[str, str], dict[str, Any]] = {
    # api.check_record_name: [A-Za-z0-9._-], no leading '.', no '..', at most 200
    ("path", "name"): {"pattern": r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?$", "maxLength": 200},
    ("header", "if-match"): {"pattern": r'^(W/)?"?[0-9]+"?$'},
    ("header", "last-event-id"): {"pattern": r"^[0-9]+$"},
}


def _constrain_parameters(document: dict[str, Any]) -> dict[str, Any]:
    """Add the rules of :data:`_PARAMETER_RULES` to every parameter they name; ``document``."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                schema = parameter.setdefault("schema", {})
                if parameter["in"] == "header":  # an absent header is unset, never "null"
                    schema = _not_null(schema)
                    parameter["schema"] = schema
                rule = _PARAMETER_RULES.get((parameter["in"], parameter["name"].lower()))
                for option in schema.get("anyOf", [schema]):
                    if rule is not None and option.get("type") == "string":
                        option.update(rule)
    return document


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without its ``null`` alternative (``str | None`` as FastAPI writes it)."""
    options = [o for o in schema.get("anyOf", []) if o.get("type") != "null"]
    if len(options) != 1:
        return schema
    rest = {k: v for k, v in schema.items() if k != "anyOf"}
    return {**options[0], **rest}
