"""Each contract module runs a fake of tests/fakes and its real adapter through the same cases.

The adapter runs on moto where moto has the calls; a module whose adapter moto cannot back says what
it runs on instead (gpusim for Batch service jobs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.aws import create_jobs_table

REGION = "us-east-1"


@pytest.fixture
def on_the_table(aws_credentials: None) -> Iterator[Callable[[Callable[[Any, str], Any]], Any]]:
    """Build an adapter over a fresh jobs table (made from template.yaml) in moto."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        table = create_jobs_table(client)
        yield lambda build: build(client, table)
