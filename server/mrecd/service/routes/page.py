"""The built-in web page: ``/`` and its static files (``/static/...``), outside ``/v1``.

The page is public static content; every data call it makes carries the
user's bearer token, so the page routes need no scope and stay out of the
OpenAPI document (they are not part of the API).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["STATIC", "install"]

#: the page's files, shipped in the wheel with the package
STATIC: Final = Path(__file__).resolve().parent.parent / "static"

router = APIRouter(include_in_schema=False)

#: the page re-validates its own files (cheap 304s) so an upgrade shows at once
_REVALIDATE: Final = {"Cache-Control": "no-cache"}


@router.get("/")
async def index() -> FileResponse:
    """The page: records, runs, frames, collections and force fields."""
    return FileResponse(STATIC / "index.html", headers=_REVALIDATE)


def install(app: FastAPI) -> None:
    """Serve the page at ``/`` and its files under ``/static`` on ``app``.

    Parameters
    ----------
    app
        The service app.
    """
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
