"""Problem documents (RFC 9457): one handler per error type, every error ``problem+json``.

:class:`~mrecd.errors.MrecdError` renders through its own ``to_problem()``;
request validation errors are 422 naming the field; :class:`HTTPProblem`
covers what only HTTP has (401, 403 scopes, 406, 413, 415, 416); anything
unexpected is a 500 problem that reveals nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import MrecdError, PreconditionFailed

__all__ = ["PROBLEM", "HTTPProblem", "install_handlers", "problem_response"]

PROBLEM: Final = "application/problem+json"
_BASE: Final = "urn:mrecd:problem:"
_log = logging.getLogger("mrecd.service")


class HTTPProblem(Exception):  # noqa: N818 - a problem document, as RFC 9457 names it
    """An HTTP-level refusal (no :class:`~mrecd.errors.MrecdError` fits): 401, 406, 413 ...

    Parameters
    ----------
    status
        The HTTP status.
    slug
        The problem type is ``urn:mrecd:problem:<slug>``.
    title, detail
        Short summary and what exactly was wrong.
    headers
        Extra response headers (``WWW-Authenticate``, ``Content-Range``).
    extensions
        Further members of the problem document (``offered`` for a 406).
    """

    def __init__(
        self,
        status: int,
        slug: str,
        title: str,
        detail: str,
        *,
        headers: Mapping[str, str] | None = None,
        extensions: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status, self.slug, self.title, self.detail = status, slug, title, detail
        self.headers = dict(headers or {})
        self.extensions = dict(extensions or {})

    def to_problem(self) -> dict[str, Any]:
        """The problem document: ``type``, ``title``, ``status``, ``detail`` and extensions."""
        return {
            "type": _BASE + self.slug,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            **self.extensions,
        }


def problem_response(
    problem: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """A ``problem+json`` response carrying ``problem`` with its ``status``."""
    return JSONResponse(
        dict(problem), status_code=int(problem["status"]), media_type=PROBLEM, headers=headers
    )


async def _mrecd_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MrecdError)
    headers = {}
    if isinstance(exc, PreconditionFailed) and exc.nstep is not None:
        headers["X-Mrecd-Nstep"] = str(exc.nstep)
    if exc.status >= 500:
        _log.warning("%s %s: %s", request.method, request.url.path, exc)
    return problem_response(exc.to_problem(), headers)


async def _http_problem(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPProblem)
    return problem_response(exc.to_problem(), exc.headers)


async def _validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    first = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ()))
    detail = f"{where}: {first.get('msg', 'invalid')}" if where else "invalid request"
    problem = {
        "type": _BASE + "invalid-request",
        "title": "Invalid request",
        "status": 422,
        "detail": detail,
        "path": where or None,
        "errors": [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": e.get("msg")} for e in errors
        ],
    }
    return problem_response(problem)


async def _starlette(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    problem = {
        "type": _BASE + f"http-{exc.status_code}",
        "title": str(exc.detail),
        "status": exc.status_code,
        "detail": f"{request.method} {request.url.path}: {exc.detail}",
    }
    return problem_response(problem, exc.headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    _log.exception("%s %s failed", request.method, request.url.path)
    problem = {
        "type": _BASE + "error",
        "title": "Internal error",
        "status": 500,
        "detail": "the server failed; the request may be retried",
    }
    return problem_response(problem)


def install_handlers(app: FastAPI) -> None:
    """Register every problem handler on ``app``."""
    app.add_exception_handler(MrecdError, _mrecd_error)
    app.add_exception_handler(HTTPProblem, _http_problem)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _starlette)
    app.add_exception_handler(Exception, _unexpected)
