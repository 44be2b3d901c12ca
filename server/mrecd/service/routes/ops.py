"""Operations: liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from .._metrics import CONTENT_TYPE, ServiceMetrics
from .._runs import Runs
from .._serve import is_loopback
from ..deps import RunsDep, SettingsDep, check_scope
from ..problems import problem_responses
from ..settings import Settings
from ._common import blocking

__all__ = ["router"]

router = APIRouter(tags=["ops"])

_METRICS_EXAMPLE = (
    "# HELP mrecd_frames_appended_total Frames committed to trajectories.\n"
    "# TYPE mrecd_frames_appended_total counter\n"
    "mrecd_frames_appended_total 64.0\n"
)


@router.get(
    "/healthz",
    responses={200: {"content": {"application/json": {"example": {"status": "ok"}}}}},
)
async def healthz() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    responses={
        200: {
            "content": {
                "application/json": {"example": {"status": "ready", "store": "file:///data"}}
            }
        },
        **problem_responses(503),
    },
)
async def readyz(runs: RunsDep) -> dict[str, str]:
    """Readiness: the store answers a cheap request (503 problem otherwise)."""
    await blocking(runs.catalog.check)
    return {"status": "ready", "store": runs.catalog.url}


def _open_writers(runs: Runs) -> int:
    return sum(1 for record in runs._open.values() if not record.read_only)


def _check_metrics_access(settings: Settings, request: Request) -> None:
    """Anonymous scrapes as ``metrics_anonymous`` allows; otherwise a ``read`` token."""
    if settings.metrics_anonymous == "always":
        return
    anonymous = "authorization" not in request.headers
    client = request.client.host if request.client is not None else ""
    if anonymous and settings.metrics_anonymous == "loopback" and is_loopback(client):
        return
    check_scope(settings, request, "read", "")


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "description": "Prometheus text exposition format 0.0.4",
            "content": {CONTENT_TYPE: {"schema": {"type": "string"}, "example": _METRICS_EXAMPLE}},
        },
        **problem_responses(401, 403),
    },
)
async def metrics(request: Request, runs: RunsDep, settings: SettingsDep) -> Any:
    """Prometheus metrics of this process: requests, latency, frames, commits, open writers.

    Without tokens configured it is open like every route. With tokens, an
    anonymous scrape is allowed as ``MRECD_METRICS_ANONYMOUS`` says
    (``loopback``: from this host only, the default; ``always``; ``never``);
    otherwise it needs a token with ``read`` on every name (prefix ``""``).
    """
    _check_metrics_access(settings, request)
    observed: ServiceMetrics = request.app.state.metrics
    observed.open_writers.set(_open_writers(runs))
    return Response(observed.render(), media_type=CONTENT_TYPE)
