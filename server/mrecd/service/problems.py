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
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import MrecdError, PreconditionFailed

__all__ = [
    "PROBLEM",
    "HTTPProblem",
    "Problem",
    "add_problem_schema",
    "install_handlers",
    "problem_response",
    "problem_responses",
]

PROBLEM: Final = "application/problem+json"
_BASE: Final = "urn:mrecd:problem:"
_log = logging.getLogger("mrecd.service")


class Problem(BaseModel):
    """An RFC 9457 problem document, as every error response carries it."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="urn:mrecd:problem:<slug>; clients map it back to an error class")
    title: str = Field(description="short summary of the problem type")
    status: int = Field(description="the HTTP status")
    detail: str = Field(description="what exactly was wrong: names the field and the rule")
    path: str | None = Field(default=None, description="the field or key at fault, when known")


#: What each status means here, and an example problem of it (for the OpenAPI document).
_STATUSES: Final[dict[int, tuple[str, str, str, str]]] = {
    400: ("Frame bytes that do not decode", "invalid-frame-bytes", "Invalid frame bytes",
          "a frame stream ends inside a length prefix"),
    401: ("No or unknown bearer token", "unauthorized", "Unauthorized",
          "read access needs a bearer token"),
    403: ("The token lacks the scope or the name prefix", "forbidden", "Forbidden",
          "the token does not grant append on 'run-1'"),
    404: ("No such record, section, frame or key", "not-found", "Not found",
          "no record named 'run-1'"),
    406: ("Accept names none of the offered media types", "not-acceptable", "Not acceptable",
          "Accept 'text/csv' names none of the offered types: application/x-mrec-frame"),
    405: ("The record is read-only (packed)", "read-only", "Read-only",
          "record 'run-1' is packed: it takes no appends"),
    409: ("The record exists, or a step repeats or decreases", "already-exists",
          "Already exists", "record 'run-1' exists"),
    412: ("If-Match or ?nstep= names an nstep that does not hold", "precondition-failed",
          "Precondition failed", "expected nstep 3, the trajectory holds 5 frames"),
    413: ("Body, frames per request above the limits", "content-too-large",
          "Content too large", "the body exceeds the limit of 268435456 bytes"),
    415: ("Content-Type carries no frames", "unsupported-media-type", "Unsupported media type",
          "Content-Type 'text/plain' carries no frames"),
    416: ("Range lies outside the object", "range-not-satisfiable", "Range not satisfiable",
          "the requested range lies outside the object's 1024 bytes"),
    422: ("Invalid input: names the field and the rule", "invalid-request", "Invalid request",
          "query.limit: Input should be greater than 0"),
    500: ("The server failed; the request may be retried", "error", "Internal error",
          "the server failed; the request may be retried"),
    503: ("The store is unreachable; retry later", "store-unavailable", "Store unavailable",
          "the store at s3://bucket did not answer"),
}  # fmt: skip


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` for error ``statuses``: problem+json, a description, an example."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        description, slug, title, detail = _STATUSES[status]
        example = {"type": _BASE + slug, "title": title, "status": status, "detail": detail}
        out[status] = {
            "description": description,
            "content": {
                PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}, "example": example}
            },
        }
    return out


def add_problem_schema(document: dict[str, Any]) -> dict[str, Any]:
    """Add the :class:`Problem` schema that :func:`problem_responses` refers to; ``document``."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas["Problem"] = Problem.model_json_schema()
    return document


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
