"""schemathesis against the app's own OpenAPI document: no 5xx, every error problem+json.

One test walks every operation with Hypothesis (schemathesis generates the
requests from the document, positive and negative) on the in-process ASGI
app, so it runs in CI without sockets; it counts the requests made and
insists on at least :data:`REQUESTS`. A seeded record makes half of the
named requests reach the record's data instead of a 404.
"""

from __future__ import annotations

import json
import time
import uuid
import zlib
from collections import Counter
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from mrecd.service import Settings, create_app
from mrecd.service.openapi import document as openapi_document

from .conftest import PROBLEM, make_frame

#: requests the suite makes at least
REQUESTS = 1000
SEEDED = "seeded-run"
#: an SSE stream never ends: cut it after this many seconds (what arrived by then is checked)
STREAM_SECONDS = 0.1


def _schema() -> Any:
    app = create_app(Settings(store=f"memory://schemathesis-{uuid.uuid4().hex}", page_limit=50))
    return schemathesis.openapi.from_asgi("/openapi.json", app)


def _seed(schema: Any) -> None:
    """Record :data:`SEEDED` with three frames, through the app itself."""
    put = schema["/v1/records/{name}"]["PUT"].Case(path_parameters={"name": SEEDED}, body={})
    assert put.call().status_code == 201
    post = schema["/v1/records/{name}/trajectory/frames"]["POST"].Case(
        path_parameters={"name": SEEDED},
        body=[make_frame(step).to_dict() for step in (0, 10, 20)],
        media_type="application/json",
    )
    response = post.call()
    assert response.status_code == 200, response.text


def _aim(case: Any) -> None:
    """Point about half of the named requests at the seeded record (never a DELETE)."""
    params = case.path_parameters or {}
    if "name" not in params:
        return
    if case.method == "DELETE":
        if params["name"] == SEEDED:
            params["name"] = "not-" + SEEDED
        return
    if zlib.crc32(repr(sorted(params.items())).encode()) % 2:
        params["name"] = SEEDED


def _fault(response: Any) -> str | None:
    """What is wrong with ``response`` (``None``: nothing)."""
    status = response.status_code
    if status >= 500:
        return f"a server error: {response.text[:300]}"
    if status < 400:
        return None
    kind = (response.headers.get("content-type") or [None])[0]
    if kind != PROBLEM:
        return f"an error of type {kind}: {response.text[:300]}"
    problem = response.json()
    if not {"type", "title", "status", "detail"} <= set(problem) or problem["status"] != status:
        return f"a malformed problem: {problem}"
    return None


def _has_inputs(operation: Any) -> bool:
    return bool(list(operation.iter_parameters())) or bool(operation.body)


def _walk(
    operation: Any, examples: int, made: Counter[str], statuses: Counter[int], faults: list[str]
) -> None:
    """Up to ``examples`` generated requests (positive and negative) of one operation."""
    label = operation.label
    modes = st.sampled_from([GenerationMode.POSITIVE, GenerationMode.NEGATIVE])

    @given(case=modes.flatmap(lambda mode: operation.as_strategy(generation_mode=mode)))
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        _aim(case)
        try:
            response = case.call(timeout=STREAM_SECONDS if "events" in label else 30)
        except Exception as exc:  # in-process, a server failure is raised after its 500
            faults.append(f"{case.method} {case.formatted_path} {case.headers} raised {exc!r}")
            return
        made[label] += 1
        statuses[response.status_code] += 1
        fault = _fault(response)
        if fault is not None:
            faults.append(f"{case.method} {case.formatted_path} {case.query} -> {fault}")

    run()


def test_generated_requests_never_fail_the_server() -> None:
    schema = _schema()
    _seed(schema)
    operations = [result.ok() for result in schema.get_all_operations()]
    # operations without parameters give one request each; the rest share the budget
    varied = sum(1 for op in operations if _has_inputs(op))
    examples = -(-REQUESTS // varied) + 3
    made: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    faults: list[str] = []
    started = time.monotonic()
    for operation in operations:
        _walk(operation, examples, made, statuses, faults)
    assert not faults, "\n".join(faults[:40])
    assert statuses[200] >= REQUESTS // 10, statuses  # the seeded record is reached
    assert sum(made.values()) >= REQUESTS, made
    assert len(made) == len(operations)
    assert time.monotonic() - started < 300  # CI budget; ~60 s on a quiet machine


class _Answer:
    """Just what :func:`_fault` reads of a response."""

    def __init__(self, status: int, kind: str, body: dict[str, Any]) -> None:
        self.status_code, self.headers, self._body = status, {"content-type": [kind]}, body
        self.text = str(body)

    def json(self) -> dict[str, Any]:
        return self._body


def test_the_check_catches_what_it_must() -> None:
    good = {
        "type": "urn:mrecd:problem:not-found",
        "title": "Not found",
        "status": 404,
        "detail": "x",
    }
    assert _fault(_Answer(200, "application/json", {})) is None
    assert _fault(_Answer(404, PROBLEM, good)) is None
    assert "server error" in str(_fault(_Answer(500, PROBLEM, {**good, "status": 500})))
    assert "of type application/json" in str(_fault(_Answer(404, "application/json", good)))
    assert "malformed" in str(_fault(_Answer(404, PROBLEM, {"title": "Not found"})))
    assert "malformed" in str(_fault(_Answer(409, PROBLEM, good)))


def test_every_operation_documents_errors_and_an_example() -> None:
    """What schemathesis reads: each error is problem+json, each operation has an example."""
    document = json.loads(openapi_document())
    assert "Problem" in document["components"]["schemas"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            label = f"{method.upper()} {path}"
            responses = operation["responses"]
            errors = {s: r for s, r in responses.items() if s[0] in "45"}
            assert "500" in errors, label
            if path.startswith("/v1/"):
                assert {"401", "403", "422"} <= set(errors), label
            for status, response in errors.items():
                assert list(response["content"]) == [PROBLEM], (label, status)
                assert response["content"][PROBLEM]["example"]["status"] == int(status)
            examples = [
                c
                for s, r in responses.items()
                if s[0] == "2"
                for c in r.get("content", {}).values()
            ]
            assert method == "delete" or any("example" in c for c in examples), label
