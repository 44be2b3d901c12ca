"""Request dependencies: settings, the open records, and scope-checking bearer auth.

Named with ``Annotated`` aliases so that routes read as what they need
(``runs: RunsDep``, ``_: Append``). Tests swap :func:`get_settings` through
``app.dependency_overrides`` or build the app with other settings.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Request

from ._runs import Runs
from .problems import HTTPProblem
from .settings import SCOPES, Scope, Settings

__all__ = ["Admin", "Append", "Read", "RunsDep", "SettingsDep", "get_runs", "get_settings"]


# async (no I/O): FastAPI would otherwise run each of these on a worker thread per request
async def get_settings(request: Request) -> Settings:
    """The settings the app was built with."""
    settings: Settings = request.app.state.settings
    return settings


async def get_runs(request: Request) -> Runs:
    """The records this process holds open (made in the app's lifespan)."""
    runs: Runs = request.app.state.runs
    return runs


SettingsDep = Annotated[Settings, Depends(get_settings)]
RunsDep = Annotated[Runs, Depends(get_runs)]


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if header is None:
        return None
    kind, _, token = header.partition(" ")
    if kind.lower() != "bearer" or not token.strip():
        raise _unauthorized("the Authorization header is not 'Bearer <token>'")
    return token.strip()


def _unauthorized(detail: str) -> HTTPProblem:
    return HTTPProblem(
        401, "unauthorized", "Unauthorized", detail, headers={"WWW-Authenticate": "Bearer"}
    )


def _granted(settings: Settings, token: str, scope: Scope, name: str) -> bool | None:
    """Whether ``token`` may ``scope`` on ``name``; ``None`` when no grant knows the token."""
    known = False
    for grant in settings.tokens:
        secret = grant.token.get_secret_value().encode()
        if hmac.compare_digest(secret, token.encode()):
            known = True
            if SCOPES.index(grant.scope) >= SCOPES.index(scope) and name.startswith(grant.prefix):
                return True
    return False if known else None


def check_scope(settings: Settings, request: Request, scope: Scope, name: str) -> None:
    """Refuse the request unless its token grants ``scope`` on record ``name``.

    Raises
    ------
    HTTPProblem
        401 without a (known) token, 403 when the token lacks the scope or prefix.
    """
    if not settings.tokens:
        return
    token = _bearer(request)
    if token is None:
        if scope == "read" and settings.anonymous_read:
            return
        raise _unauthorized(f"{scope} access needs a bearer token")
    granted = _granted(settings, token, scope, name)
    if granted is None:
        raise _unauthorized("the bearer token is not known")
    if not granted:
        raise HTTPProblem(
            403, "forbidden", "Forbidden", f"the token does not grant {scope} on {name!r}"
        )


def _requires(scope: Scope) -> Callable[..., Coroutine[Any, Any, None]]:
    async def dependency(request: Request, settings: SettingsDep) -> None:
        check_scope(settings, request, scope, request.path_params.get("name", ""))

    return dependency


Read = Annotated[None, Depends(_requires("read"))]
Append = Annotated[None, Depends(_requires("append"))]
Admin = Annotated[None, Depends(_requires("admin"))]
