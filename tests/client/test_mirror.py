"""The client mirrors the local API: public names and signatures, sync and async.

For each pair (local class, client class) the public members and the
protocol dunders are compared: a member missing on either side, a property
on one side and a method on the other, or different parameters (names,
kinds, defaults) is a difference. Each must be listed in
``INTENDED_DIFFERENCES`` with its reason; a listed difference that no
longer exists fails too, so the table stays true.

The async classes are compared under the style guide's renames
(``close``/``aclose``, ``__iter__``/``__aiter__``, ``__enter__``/``__aenter__``):
an ``async def`` with the local method's parameters is a match.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from mrecd.api import Catalog, Collection, FrameSlice, StoredRecord, Trajectory
from mrecd_client import (
    AsyncClient,
    AsyncRemoteCollection,
    AsyncRemoteFrameSlice,
    AsyncRemoteRecord,
    AsyncRemoteTrajectory,
    Client,
    RemoteCollection,
    RemoteFrameSlice,
    RemoteRecord,
    RemoteTrajectory,
)

DUNDERS = ("__len__", "__getitem__", "__iter__", "__contains__", "__enter__", "__exit__")
ASYNC_RENAMES = {
    "aclose": "close",
    "__aiter__": "__iter__",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
}

NO_COLLECTION_OVERWRITE = (
    "no overwrite=: the service never replaces a collection (an operator deletes the file)"
)
NO_COLLECTION_DELETE = "no route deletes a collection: removing a training set is the operator's"
OPERATOR = "compacting the LMDB file is the server operator's job (it holds the file)"
NO_PATH = "a served collection has no local file: url names it"
NAMED = "the collection's name and URL on the service (a local one is named by its path)"
TO_DICT = (
    "the logical JSON form needs the binding's interchange code; read_many(range(len(col)))"
    " and index give the same content"
)
NO_RAW_KEYS = (
    "raw keys are served at /v1/records/{name}/zarr/{key} for any Zarr or HTTP client; the"
    " local signature takes mrecd.storage byte-range types, which the client must not import"
)
NO_SECTION_WRITES = (
    "the service writes sections only at creation (PUT); there is no route to replace one"
)
RUN_SURFACE = "observables and metrics are not served yet (run-surface routes are a later issue)"
AWAITED_PROPERTY = "I/O in async code is awaited: a coroutine method instead of a property"
LEASE = "the writer lease is the server's: it serializes the appends of every client"
ONCE = (
    "the local form of one producer batch; the client's append/extend already travel as"
    " idempotent-producer batches (claim() names the producer)"
)

#: pair -> member -> why the client differs there
INTENDED_DIFFERENCES: dict[str, dict[str, str]] = {
    "Catalog/Client": {
        "create_record": "no overwrite=: the service never replaces a record (delete, then create)",
        "key_info": NO_RAW_KEYS,
        "read_key": NO_RAW_KEYS,
        "pack": "packing is the server operator's job (mrecd pack); no route packs a record",
        "lease_free_writes": "how the server's writers share its store; the server serializes a"
        " client's appends",
        "create_collection": NO_COLLECTION_OVERWRITE,
        "delete_collection": NO_COLLECTION_DELETE,
        "close": "a client holds a connection pool to close; a catalog holds nothing",
        "__enter__": "a client is a context manager that closes its connection pool",
        "__exit__": "a client is a context manager that closes its connection pool",
    },
    "StoredRecord/RemoteRecord": {
        "write_meta": NO_SECTION_WRITES,
        "write_system": NO_SECTION_WRITES,
        "write_frame": NO_SECTION_WRITES,
        "write_forcefield": NO_SECTION_WRITES,
        "write_status": NO_SECTION_WRITES,
        "write_method": NO_SECTION_WRITES,
        "delete_section": NO_SECTION_WRITES,
        "write_observable": RUN_SURFACE,
        "delete_observable": RUN_SURFACE,
        "observables": RUN_SURFACE,
        "metrics": RUN_SURFACE,
    },
    "Trajectory/RemoteTrajectory": {
        "acquire_writer": LEASE,
        "release_writer": LEASE,
        "exclusive": LEASE,
        "extend_once": ONCE,
        "producer": "the idempotent producer this handle appends as (service contract)",
        "claim": "a restarted job claims its producer id with a higher epoch",
        "follow": "frames as they are committed, from the server-sent events stream",
    },
    "FrameSlice/RemoteFrameSlice": {},
    "Catalog/AsyncClient": {
        "create_record": "no overwrite=: the service never replaces a record (delete, then create)",
        "key_info": NO_RAW_KEYS,
        "read_key": NO_RAW_KEYS,
        "pack": "packing is the server operator's job (mrecd pack); no route packs a record",
        "lease_free_writes": "how the server's writers share its store; the server serializes a"
        " client's appends",
        "create_collection": NO_COLLECTION_OVERWRITE,
        "delete_collection": NO_COLLECTION_DELETE,
        "close": "an async client holds a connection pool to close (aclose)",
        "__enter__": "async with: closes the connection pool",
        "__exit__": "async with: closes the connection pool",
        "__iter__": "iteration needs I/O: await client.records()",
        "__contains__": "'in' cannot await: await client.contains(name)",
        "contains": "the awaitable form of 'name in client'",
    },
    "StoredRecord/AsyncRemoteRecord": {
        "write_meta": NO_SECTION_WRITES,
        "write_system": NO_SECTION_WRITES,
        "write_frame": NO_SECTION_WRITES,
        "write_forcefield": NO_SECTION_WRITES,
        "write_status": NO_SECTION_WRITES,
        "write_method": NO_SECTION_WRITES,
        "delete_section": NO_SECTION_WRITES,
        "write_observable": RUN_SURFACE,
        "delete_observable": RUN_SURFACE,
        "observables": RUN_SURFACE,
        "metrics": RUN_SURFACE,
        "sections": AWAITED_PROPERTY,
        "system": AWAITED_PROPERTY,
        "frame": AWAITED_PROPERTY,
        "forcefield": AWAITED_PROPERTY,
    },
    "Trajectory/AsyncRemoteTrajectory": {
        "acquire_writer": LEASE,
        "release_writer": LEASE,
        "exclusive": LEASE,
        "extend_once": ONCE,
        "producer": "the idempotent producer this handle appends as (service contract)",
        "claim": "a restarted job claims its producer id with a higher epoch",
        "follow": "frames as they are committed, from the server-sent events stream",
        "nstep": AWAITED_PROPERTY,
        "count": "Sequence mixin of the sync class; an async sequence has no such mixin",
        "index": "Sequence mixin of the sync class; an async sequence has no such mixin",
        "__contains__": "Sequence mixin of the sync class; 'in' cannot await",
    },
    "Collection/RemoteCollection": {
        "compact": OPERATOR,
        "path": NO_PATH,
        "to_dict": TO_DICT,
        "name": NAMED,
        "url": NAMED,
    },
    "Collection/AsyncRemoteCollection": {
        "compact": OPERATOR,
        "path": NO_PATH,
        "to_dict": TO_DICT,
        "name": NAMED,
        "url": NAMED,
        "index": AWAITED_PROPERTY,
        "forcefield": AWAITED_PROPERTY,
        "n_frames": AWAITED_PROPERTY,
        "refresh": "len is the count last seen ('len' cannot await); refresh() asks the server",
    },
    "FrameSlice/AsyncRemoteFrameSlice": {
        "count": "Sequence mixin of the sync class; an async sequence has no such mixin",
        "index": "Sequence mixin of the sync class; an async sequence has no such mixin",
        "__contains__": "Sequence mixin of the sync class; 'in' cannot await",
    },
}

PAIRS = [
    (Catalog, Client),
    (StoredRecord, RemoteRecord),
    (Trajectory, RemoteTrajectory),
    (FrameSlice, RemoteFrameSlice),
    (Catalog, AsyncClient),
    (StoredRecord, AsyncRemoteRecord),
    (Trajectory, AsyncRemoteTrajectory),
    (FrameSlice, AsyncRemoteFrameSlice),
    (Collection, RemoteCollection),
    (Collection, AsyncRemoteCollection),
]


def members(cls: type, renames: dict[str, str] | None = None) -> dict[str, Any]:
    """Public members and protocol dunders of ``cls``, under ``renames``."""
    renames = renames or {}
    names = {n for n in dir(cls) if not n.startswith("_")}
    names |= {n for n in (*DUNDERS, *renames) if hasattr(cls, n)}
    return {renames.get(n, n): inspect.getattr_static(cls, n) for n in names if hasattr(cls, n)}


def parameters(member: Any) -> list[tuple[str, Any, str]]:
    """Names, kinds and defaults of a method's parameters (annotations aside)."""
    function = member.fget if isinstance(member, property) else member
    if isinstance(function, (staticmethod, classmethod)):
        function = function.__func__
    signature = inspect.signature(function)
    return [(p.name, p.kind, repr(p.default)) for p in signature.parameters.values()]


def differences(local: type, remote: type) -> dict[str, str]:
    """member -> how ``remote`` differs from ``local`` there."""
    is_async = remote.__name__.startswith("Async")
    mine = members(local)
    theirs = members(remote, ASYNC_RENAMES if is_async else None)
    out = {n: "only in the client" for n in theirs.keys() - mine.keys()}
    out |= {n: "missing in the client" for n in mine.keys() - theirs.keys()}
    for name in mine.keys() & theirs.keys():
        a, b = mine[name], theirs[name]
        if isinstance(a, property) != isinstance(b, property):
            out[name] = "property in one, method in the other"
        elif not isinstance(a, property) and (
            (not is_async and inspect.iscoroutinefunction(b))
            or (is_async and inspect.iscoroutinefunction(a))
        ):
            out[name] = "a coroutine where a plain method is expected"
        elif parameters(a) != parameters(b):
            out[name] = f"{parameters(b)} is not {parameters(a)}"
    return out


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0].__name__}/{p[1].__name__}")
def test_names_and_signatures_mirror_the_local_api(pair: tuple[type, type]) -> None:
    local, remote = pair
    found = differences(local, remote)
    listed = INTENDED_DIFFERENCES[f"{local.__name__}/{remote.__name__}"]
    assert {n: d for n, d in found.items() if n not in listed} == {}
    assert sorted(set(listed) - set(found)) == [], "stale INTENDED_DIFFERENCES entries"


@pytest.mark.parametrize(
    "pair",
    [
        (RemoteTrajectory, AsyncRemoteTrajectory),
        (RemoteRecord, AsyncRemoteRecord),
        (RemoteCollection, AsyncRemoteCollection),
    ],
    ids=lambda p: p[1].__name__,
)
def test_async_methods_are_coroutines_where_the_sync_ones_do_io(pair: tuple[type, type]) -> None:
    sync, async_ = pair
    for name in (
        *("read", "steps", "times", "series", "append", "extend", "flush", "refresh"),
        *("read_many", "create_collection", "collection", "collections"),
    ):
        if hasattr(sync, name):
            assert inspect.iscoroutinefunction(getattr(async_, name)), name
            assert not inspect.iscoroutinefunction(getattr(sync, name)), name


def test_the_mirror_check_sees_a_difference() -> None:
    class Drifted(RemoteTrajectory):
        def read(self, i: int, *, blocks: Any = None) -> Any:  # type: ignore[override]
            return None

        def extra(self) -> None:
            return None

    found = differences(Trajectory, Drifted)
    assert "read" in found and found["extra"] == "only in the client"

    class Renamed(AsyncRemoteTrajectory):
        async def refresh(self, now: bool = True) -> int:  # type: ignore[override]
            return 0

    assert "refresh" in differences(Trajectory, Renamed)
