"""An S3 API server for the tests: moto's, on loopback, in this process (see docs/batch.md
for why this one). Started per test module; a bucket per test."""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


def need_s3() -> None:
    """moto and s3fs, or a skip (a failure with FOUR_REQUIRE_SERVICES=1)."""
    missing = [m for m in ("moto", "s3fs", "flask") if importlib.util.find_spec(m) is None]
    if missing:
        reason = f"{', '.join(missing)} not installed (pip install -e '.[dev]')"
        if os.environ.get("FOUR_REQUIRE_SERVICES") == "1":
            pytest.fail(f"required service missing: {reason}")
        pytest.skip(reason)


@contextmanager
def s3_server() -> Iterator[dict[str, str]]:
    """A running S3 server; the environment that points S3 clients at it."""
    need_s3()
    from moto.server import ThreadedMotoServer  # type: ignore[import-not-found,unused-ignore]

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "four-test",
        "AWS_SECRET_ACCESS_KEY": "four-test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    try:
        yield env
    finally:
        server.stop()


def new_bucket(env: dict[str, str]) -> str:
    """A new empty bucket on the server; its s3:// URL."""
    import boto3  # type: ignore[import-untyped,unused-ignore]

    name = f"four-{uuid.uuid4().hex[:12]}"
    client = boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_DEFAULT_REGION"],
    )
    client.create_bucket(Bucket=name)
    return f"s3://{name}"
