"""The embedded AWS's HTTP server: moto's app on waitress, connections kept alive, no request held."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from shareplane_cli.local.cloudtrail import TrailEmulation
from shareplane_cli.local.stack import _MotoServer


@pytest.fixture(scope="module")
def s3() -> Iterator[Any]:
    server = _MotoServer(TrailEmulation())
    server.start()
    host, port = server.get_host_and_port()
    client = boto3.client(
        "s3",
        endpoint_url=f"http://{host}:{port}",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        # One attempt and a short wait: a held request fails the test in seconds, not in minutes.
        config=Config(retries={"max_attempts": 1}, read_timeout=5),
    )
    client.create_bucket(Bucket="drops")
    yield client
    server.stop()


def test_an_empty_object_is_put_at_once_though_boto3_expects_a_100_continue(s3: Any) -> None:
    # boto3 sends a folder marker with Expect: 100-continue and Content-Length: 0
    s3.put_object(Bucket="drops", Key="submit/ProdExp1/", Body=b"")
    assert s3.head_object(Bucket="drops", Key="submit/ProdExp1/")["ContentLength"] == 0
    # ... and a body still waits for its 100 Continue, as before
    s3.put_object(Bucket="drops", Key="submit/ProdExp1/a.yaml", Body=b"name: a\n")
    assert s3.get_object(Bucket="drops", Key="submit/ProdExp1/a.yaml")["Body"].read() == b"name: a\n"


def test_calls_share_one_kept_alive_connection(s3: Any) -> None:
    manager = s3._endpoint.http_session._manager  # noqa: SLF001 - urllib3's pool behind the client
    s3.list_buckets()
    pool = manager.connection_from_url(s3.meta.endpoint_url)
    opened = pool.num_connections
    for n in range(20):
        s3.put_object(Bucket="drops", Key=f"k{n}", Body=b"x")
    assert opened >= 1 and pool.num_connections == opened
