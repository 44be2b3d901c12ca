"""Prometheus metrics and the access log: one registry per app, one middleware per request.

Each app owns a :class:`ServiceMetrics` (its own ``CollectorRegistry``, so
many apps in one process never register a name twice). The
:class:`ObserveRequests` middleware times every request, counts it by route
template and status, writes one JSON line on the ``mrecd.access`` logger,
and makes the app's metrics current for the request, which is how
:func:`observe_commit`, called from the commit path without any handle,
finds them.
"""

from __future__ import annotations

import json
import logging
import time
from contextvars import ContextVar
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "CONTENT_TYPE",
    "ObserveRequests",
    "ServiceMetrics",
    "observe_commit",
]

#: The Prometheus text exposition format, version 0.0.4.
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
_NSTEP: Final = b"x-mrecd-nstep"
_access = logging.getLogger("mrecd.access")

#: seconds; from a cached frame read (sub-ms) to a large durable commit
_LATENCY_BUCKETS: Final = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
_FRAME_BUCKETS: Final = tuple(float(2**k) for k in range(0, 17, 2))  # 1 .. 65536 frames
_REQUEST_BUCKETS: Final = (1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 64.0)


class ServiceMetrics:
    """The metrics of one app, in a registry of their own.

    Attributes
    ----------
    registry
        What ``/metrics`` renders.
    requests
        ``mrecd_http_requests_total{method, route, status}``.
    latency
        ``mrecd_http_request_duration_seconds{method, route}``: until the last body byte.
    frames
        ``mrecd_frames_appended_total``: frames committed.
    commit_frames, commit_requests
        Frames, and POST requests, per commit (a group commit carries several).
    open_writers
        ``mrecd_open_writers``: records this process holds open for writing.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.requests = Counter(
            "mrecd_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=reg,
        )
        self.latency = Histogram(
            "mrecd_http_request_duration_seconds",
            "Time from a request's arrival to its last response byte.",
            ["method", "route"],
            buckets=_LATENCY_BUCKETS,
            registry=reg,
        )
        self.frames = Counter(
            "mrecd_frames_appended", "Frames committed to trajectories.", registry=reg
        )
        self.commit_frames = Histogram(
            "mrecd_commit_frames", "Frames per commit.", buckets=_FRAME_BUCKETS, registry=reg
        )
        self.commit_requests = Histogram(
            "mrecd_commit_requests",
            "POST requests per commit (more than one when group-committed).",
            buckets=_REQUEST_BUCKETS,
            registry=reg,
        )
        self.open_writers = Gauge(
            "mrecd_open_writers", "Records held open for writing.", registry=reg
        )

    def render(self) -> bytes:
        """The registry in the Prometheus text format (:data:`CONTENT_TYPE`)."""
        return generate_latest(self.registry)


_current: ContextVar[ServiceMetrics | None] = ContextVar("mrecd_metrics", default=None)


def observe_commit(frames: int, requests: int) -> None:
    """Count one completed commit of ``frames`` frames for ``requests`` POST requests.

    Counts into the metrics of the app serving the current request (none
    outside a request: then it does nothing). Any thread or task whose
    context descends from the request may call it.
    """
    metrics = _current.get()
    if metrics is None:
        return
    metrics.frames.inc(frames)
    metrics.commit_frames.observe(frames)
    metrics.commit_requests.observe(requests)


def _route(scope: Scope) -> str:
    """The full route template that served ``scope`` (``unmatched``: a 404 of no route).

    A route of an included router may know only its template below the
    router's prefix; the prefix is the part of the path its pattern leaves.
    """
    route = scope.get("route")
    template, pattern = getattr(route, "path_format", None), getattr(route, "path_regex", None)
    if not isinstance(template, str) or pattern is None:
        return "unmatched"
    path: str = scope["path"]
    for cut in (i for i, char in enumerate(path) if char == "/"):
        if pattern.match(path[cut:]):
            return path[:cut] + template
    return template


def _client(scope: Scope) -> str | None:
    client = scope.get("client")
    return None if not client else f"{client[0]}:{client[1]}"


class ObserveRequests:
    """ASGI middleware: metrics and one ``mrecd.access`` JSON line per HTTP request.

    The line has ``method``, ``path``, ``route``, ``status``, ``duration_ms``,
    ``bytes`` (response body as sent), ``nstep`` (the ``X-Mrecd-Nstep``
    response header, when present) and ``client``; it is also attached to the
    log record as ``record.access`` for structured handlers. A streamed
    response is logged when its stream ends.

    Parameters
    ----------
    app
        The application to wrap.
    metrics
        Where to count.
    """

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        seen: dict[str, Any] = {"status": 500, "bytes": 0, "nstep": None}

        async def observed(message: Message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
                for name, value in message.get("headers", ()):
                    if name.lower() == _NSTEP:
                        seen["nstep"] = int(value) if value.isdigit() else value.decode("latin-1")
            elif message["type"] == "http.response.body":
                seen["bytes"] += len(message.get("body", b""))
            await send(message)

        token = _current.set(self.metrics)
        try:
            await self.app(scope, receive, observed)
        finally:
            _current.reset(token)
            self._record(scope, seen, time.perf_counter() - started)

    def _record(self, scope: Scope, seen: dict[str, Any], seconds: float) -> None:
        method, route = scope["method"], _route(scope)
        self.metrics.requests.labels(method, route, str(seen["status"])).inc()
        self.metrics.latency.labels(method, route).observe(seconds)
        if not _access.isEnabledFor(logging.INFO):
            return
        entry = {
            "method": method,
            "path": scope["path"],
            "route": route,
            "status": seen["status"],
            "duration_ms": round(seconds * 1000, 3),
            "bytes": seen["bytes"],
            "nstep": seen["nstep"],
            "client": _client(scope),
        }
        _access.info(json.dumps(entry, separators=(",", ":")), extra={"access": entry})
