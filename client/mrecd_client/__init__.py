"""Typed httpx client for the mrecd service: :class:`Client` and :class:`AsyncClient`.

Both mirror the local API (:class:`mrecd.api.Catalog`, ``StoredRecord``,
``Trajectory``) name for name; sections and frames come back as the same
:class:`mrecd.Frame`, :class:`mrecd.Declaration` and :class:`mrecd.ForceField`
classes, and remote errors raise the same :mod:`mrecd.errors` classes as
local ones. One sans-I/O core builds every request and parses every answer;
the two clients add only the sending path. Appends travel as an idempotent
producer (see :class:`Producer`): batches in flight, resent safely.

The client depends only on the model, the codecs, httpx and httpx-sse.
"""

from ._async import AsyncClient, AsyncRemoteFrameSlice, AsyncRemoteRecord, AsyncRemoteTrajectory
from ._core import Appended, Producer, RetryPolicy
from ._sync import Client, RemoteFrameSlice, RemoteRecord, RemoteTrajectory

__all__ = [
    "Appended",
    "AsyncClient",
    "AsyncRemoteFrameSlice",
    "AsyncRemoteRecord",
    "AsyncRemoteTrajectory",
    "Client",
    "Producer",
    "RemoteFrameSlice",
    "RemoteRecord",
    "RemoteTrajectory",
    "RetryPolicy",
]
