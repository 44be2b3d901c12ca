"""Typed httpx client for the mrecd service: :class:`Client` and :class:`AsyncClient`.

Both mirror the local API (:class:`mrecd.api.Catalog`, ``StoredRecord``,
``Trajectory``) name for name; sections and frames come back as the same
:class:`mrecd.Frame`, :class:`mrecd.Declaration` and :class:`mrecd.ForceField`
classes, and remote errors raise the same :mod:`mrecd.errors` classes as
local ones. One sans-I/O core builds every request and parses every answer;
the two clients add only the sending path. Appends travel as an idempotent
producer (see :class:`Producer`): batches in flight, resent safely.

The client depends only on the model, the codecs, httpx and httpx-sse.

Example
-------
>>> from mrecd_client import Client                          # doctest: +SKIP
>>> with Client("http://127.0.0.1:8000", token="s3cret") as client:
...     run = client.create_record("run-42", exist_ok=True)  # first frames declare it
...     traj = run.trajectory
...     traj.claim("job-42", epoch=restarts)                 # optional: a restarted job
...     for frame in frames:
...         traj.append(frame)                               # batched, 4 batches in flight
...     traj.flush()                                         # waits; raises the first error
...     last = traj[-1]; pe = traj.series("pe")
...     for frame in traj.follow():                          # new frames as committed
...         ...

``AsyncClient`` is the same with ``await`` (``await traj.append(frame)``,
``async for frame in traj.follow()``, ``await client.aclose()``).
"""

from ._async import AsyncClient, AsyncRemoteFrameSlice, AsyncRemoteRecord, AsyncRemoteTrajectory
from ._async_collections import AsyncRemoteCollection
from ._core import Appended, Producer, RetryPolicy
from ._sync import Client, RemoteFrameSlice, RemoteRecord, RemoteTrajectory
from ._sync_collections import RemoteCollection

__all__ = [
    "Appended",
    "AsyncClient",
    "AsyncRemoteCollection",
    "AsyncRemoteFrameSlice",
    "AsyncRemoteRecord",
    "AsyncRemoteTrajectory",
    "Client",
    "Producer",
    "RemoteCollection",
    "RemoteFrameSlice",
    "RemoteRecord",
    "RemoteTrajectory",
    "RetryPolicy",
]
