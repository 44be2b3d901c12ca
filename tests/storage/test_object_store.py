"""ObjectStore beyond the conformance suite: URLs, secrets, error mapping, multipart uploads."""

from __future__ import annotations

import io
import os
import re
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mrecd.errors import (
    InvalidRecord,
    NotFound,
    PermissionDenied,
    PreconditionFailed,
    RetryableError,
    StoreUnavailable,
)
from mrecd.storage._object import ObjectStore

FAST_FAIL = {"max_retries": 1, "backoff": {"init_backoff": timedelta(milliseconds=1)}}


class TestFromUrl:
    """Building stores only: nothing here touches the network."""

    @pytest.mark.parametrize(
        ("url", "config", "backend", "bucket_key", "bucket"),
        [
            ("s3://bucket/lab/runs", {}, "S3Store", "bucket", "bucket"),
            ("gs://bucket/lab/runs", {}, "GCSStore", "bucket", "bucket"),
            ("az://container/lab/runs", {"account_name": "acct"}, "AzureStore", "container_name",
             "container"),
        ],
    )  # fmt: skip
    def test_bucket_and_prefix_of_each_scheme(
        self, url: str, config: dict[str, str], backend: str, bucket_key: str, bucket: str
    ) -> None:
        store = ObjectStore.from_url(url, **config)
        info = store.info()
        assert info["backend"] == backend and info["config"][bucket_key] == bucket
        assert store.prefix == "lab/runs" and store.url == url
        child = store.child("run-42.mrec")
        assert isinstance(child, ObjectStore) and child.prefix == "lab/runs/run-42.mrec"

    def test_timeouts_and_retries_are_configured(self) -> None:
        info = ObjectStore.from_url("s3://bucket", retry_config={"max_retries": 2}).info()
        assert info["client_options"]["connect_timeout"] == "10s"
        assert info["client_options"]["timeout"] == "5m"
        assert info["retry_config"]["max_retries"] == 2
        assert info["retry_config"]["retry_timeout"] == timedelta(minutes=2)

    def test_info_and_repr_hold_no_secret(self) -> None:
        store = ObjectStore.from_url(
            "s3://bucket/p", access_key_id="AKIAEXAMPLE", secret_access_key="s3cr3t-value"
        )
        azure = ObjectStore.from_url(
            "az://c/p", account_name="acct", account_key="YWNjb3VudGtleQ=="
        )
        for text in (repr(store.info()), repr(store), repr(azure.info()), repr(azure)):
            assert "s3cr3t-value" not in text and "YWNjb3VudGtleQ==" not in text
        assert repr(store) == "ObjectStore('s3://bucket/p', backend=S3Store, read_only=False)"

    def test_azure_without_an_account_is_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for name in ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT", "AZURE_ACCOUNT_NAME"):
            monkeypatch.delenv(name, raising=False)
        with pytest.raises(InvalidRecord, match=r"cannot open the object store: .*Account"):
            ObjectStore.from_url("az://container/prefix")

    def test_a_client_option_among_store_keys_is_refused(self) -> None:
        with pytest.raises(InvalidRecord, match="allow_http belong in client_options"):
            ObjectStore.from_url("s3://bucket", allow_http=True)


def _answering(status: int) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 answering ``status`` to everything; its URL."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            body = b"<Error><Code>AccessDenied</Code><Message>no</Message></Error>"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _answer  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def refusing_endpoint() -> Iterator[str]:
    yield from _answering(403)


@pytest.fixture
def failing_endpoint() -> Iterator[str]:
    yield from _answering(503)


def _store_at(endpoint: str) -> ObjectStore:
    return ObjectStore.from_url(
        "s3://bucket/p",
        endpoint=endpoint,
        access_key_id="a",
        secret_access_key="b",
        region="us-east-1",
        client_options={"allow_http": True},
        retry_config=FAST_FAIL,
    )


class TestErrors:
    def test_refused_credentials_are_permission_denied(self, refusing_endpoint: str) -> None:
        store = _store_at(refusing_endpoint)
        for call in (lambda: store.get("k"), lambda: store.put("k", b"x"), store.list_dir):
            with pytest.raises(PermissionDenied, match="check the credentials"):
                call()

    def test_a_failing_store_is_retryable(self, failing_endpoint: str) -> None:
        store = _store_at(failing_endpoint)
        calls = {
            "get": lambda: store.get("k"),
            "head": lambda: store.head("k"),
            "keys": lambda: list(store.keys()),
        }
        for name, call in calls.items():
            try:
                answer = call()
            except StoreUnavailable as caught:
                assert re.match(r"object store \w+ failed", caught.message), caught.message
                assert isinstance(caught, RetryableError)
                assert "\n" not in str(caught)  # obstore's debug dump stays out
            else:  # seen once under load: name the call and what it returned
                pytest.fail(f"{name} on a store answering 503 returned {answer!r}")

    def test_an_unreachable_endpoint_is_retryable(self) -> None:
        store = _store_at("http://127.0.0.1:1")
        with pytest.raises(StoreUnavailable, match="object store write failed"):
            store.put("k", b"x")

    def test_a_missing_bucket_is_not_found(self, moto_endpoint: str) -> None:
        store = ObjectStore.from_url("s3://no-such-bucket-here")
        assert store.get("k") is None
        with pytest.raises(NotFound, match="bucket"):
            store.put("k", b"x")
        with pytest.raises(NotFound, match="bucket"):
            store.list_dir()


class _Exploding(io.RawIOBase):
    """A file that fails after ``limit`` bytes (a source lost mid-upload)."""

    def __init__(self, limit: int) -> None:
        self._left = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._left <= 0:
            raise OSError("source lost")
        n = min(len(buffer), self._left)
        buffer[:n] = b"\x01" * n
        self._left -= n
        return n


class TestPutFile:
    @pytest.fixture
    def s3(self, s3_bucket: str, monkeypatch: pytest.MonkeyPatch) -> ObjectStore:
        monkeypatch.setattr(ObjectStore, "part_size", 5 << 20)
        return ObjectStore.from_url(f"{s3_bucket}/lab")

    def test_a_large_file_goes_up_in_parts(self, s3: ObjectStore) -> None:
        data = os.urandom(11 << 20)
        etag = s3.put_file("big", io.BytesIO(data))
        info = s3.head("big")
        assert info is not None and info.size == len(data) and info.etag == etag
        assert etag.strip('"').endswith("-3")  # a multipart ETag: three parts, no MD5
        assert s3.get("big") == data

    def test_a_failing_source_leaves_no_object(self, s3: ObjectStore) -> None:
        with pytest.raises(OSError, match="source lost"):
            s3.put_file("big", io.BufferedReader(_Exploding(12 << 20)))
        assert s3.head("big") is None

    def test_create_only_put_file(self, s3: ObjectStore) -> None:
        s3.put_file("once", io.BytesIO(b"first"), mode="create")
        with pytest.raises(PreconditionFailed, match="the key exists"):
            s3.put_file("once", io.BytesIO(b"second"), mode="create")
        assert s3.get("once") == b"first"
