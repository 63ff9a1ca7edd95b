"""Each contract module runs a fake of tests/fakes and its real adapter through the same cases.

The adapter runs on moto where moto has the calls; a module whose adapter moto cannot back says what
it runs on instead (gpusim for Batch service jobs). moto and the jobs table (made from template.yaml)
start once a module; each test starts from an empty table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.aws import clear_table, create_jobs_table, test_credentials

REGION = "us-east-1"


@pytest.fixture(scope="module")
def jobs_table() -> Iterator[tuple[Any, str]]:
    """moto and the jobs table, for one module."""
    with test_credentials(), mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        yield client, create_jobs_table(client)


@pytest.fixture
def on_the_table(jobs_table: tuple[Any, str]) -> Callable[[Callable[[Any, str], Any]], Any]:
    """Build an adapter over the module's jobs table, emptied for this test."""
    client, table = jobs_table
    clear_table(client, table)
    return lambda build: build(client, table)
