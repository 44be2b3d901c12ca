"""Operations: liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ..deps import RunsDep
from ..problems import PROBLEM
from ._common import blocking

__all__ = ["router"]

router = APIRouter(tags=["ops"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"content": {PROBLEM: {}}}})
async def readyz(runs: RunsDep) -> JSONResponse:
    """Readiness: the store answers a cheap request (503 problem otherwise)."""
    await blocking(runs.catalog.check)
    return JSONResponse({"status": "ready", "store": runs.catalog.url})
