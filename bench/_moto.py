"""A moto S3 server on loopback with one bucket, for the object-storage benchmarks."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

import httpx


@contextmanager
def moto_bucket(bucket: str = "bench") -> Iterator[str]:
    """Run moto's ``ThreadedMotoServer`` on 127.0.0.1 with ``bucket`` made; yield ``s3://bucket``.

    The AWS_* variables obstore reads are set to it for the duration of the block.
    """
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_REGION="us-east-1",
        AWS_ENDPOINT_URL=f"http://{host}:{port}",
        AWS_ALLOW_HTTP="true",
    )
    try:
        httpx.put(f"http://{host}:{port}/{bucket}").raise_for_status()
        yield f"s3://{bucket}"
    finally:
        server.stop()
