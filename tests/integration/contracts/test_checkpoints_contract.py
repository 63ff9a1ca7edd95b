"""CheckpointReader: the fake and S3Checkpoints on moto agree on which checkpoint is the newest.

Moto dates an object by its own clock (``moto.s3.models.utcnow``); the cases set that clock to the time
each checkpoint is written. ListObjectsV2 gives LastModified in whole seconds, so the times are whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import moto.s3.models
import pytest
from moto import mock_aws
from shareplane.adapters.s3_checkpoints import S3Checkpoints, split_s3_uri

from tests.fakes.checkpoints import FakeCheckpoints

REGION = "us-east-1"
BUCKET = "search-ml-training"
PREFIX = f"s3://{BUCKET}/prodexp2/ckpt/p2-5/"
T0 = 1773720000.0


@dataclass
class ReaderUnderTest:
    """A checkpoint reader and how a trainer writes a checkpoint object it reads."""

    reader: Any
    write: Callable[[str, float], None]


@pytest.fixture(params=["fake", "on moto"])
def under_test(request: pytest.FixtureRequest, aws_credentials: None) -> Iterator[ReaderUnderTest]:
    if request.param == "fake":
        fake = FakeCheckpoints()
        yield ReaderUnderTest(fake, fake.write)
        return
    monkeypatch = request.getfixturevalue("monkeypatch")
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        for bucket in (BUCKET, BUCKET + "-other"):
            s3.create_bucket(Bucket=bucket)

        moto_clock = moto.s3.models.utcnow

        def write(uri: str, at: float) -> None:
            written = datetime.fromtimestamp(at, UTC).replace(tzinfo=None)  # moto's clock is naive UTC
            monkeypatch.setattr(moto.s3.models, "utcnow", lambda: written)
            try:
                bucket, key = split_s3_uri(uri)
                s3.put_object(Bucket=bucket, Key=key, Body=b"weights")
            finally:
                monkeypatch.setattr(moto.s3.models, "utcnow", moto_clock)

        yield ReaderUnderTest(S3Checkpoints(s3), write)


def test_the_newest_object_under_the_prefix_at_any_depth_wins(under_test: ReaderUnderTest) -> None:
    under_test.write(PREFIX + "step-100.pt", T0 - 600)
    under_test.write(PREFIX + "shards/step-300/rank-0.pt", T0 - 60)
    under_test.write(PREFIX + "step-200.pt", T0 - 300)
    assert under_test.reader.newest(PREFIX) == T0 - 60
    assert under_test.reader.newest(PREFIX, None) == T0 - 60


def test_a_checkpoint_uri_is_listed_as_a_folder(under_test: ReaderUnderTest) -> None:
    # GIVEN run-10's checkpoints beside run-1's (empty) folder, whose URI lacks the trailing slash
    run_1 = f"s3://{BUCKET}/prodexp2/ckpt/run-1"
    under_test.write(f"s3://{BUCKET}/prodexp2/ckpt/run-10/step-1.pt", T0 - 30)
    # THEN run-1 has no checkpoint, with or without the slash
    assert under_test.reader.newest(run_1) is None and under_test.reader.newest(run_1 + "/") is None
    under_test.write(run_1 + "/step-1.pt", T0 - 600)
    assert under_test.reader.newest(run_1) == T0 - 600


@pytest.mark.parametrize(
    ("bound", "newest"),
    [(T0 - 60, T0 - 60), (T0 - 61, T0 - 300), (T0 - 300, T0 - 300), (T0 - 601, None)],
    ids=["at the bound", "a second before the newest", "exactly an older one", "before them all"],
)
def test_only_checkpoints_written_by_the_bound_count(
    under_test: ReaderUnderTest, bound: float, newest: float | None
) -> None:
    for at in (T0 - 600, T0 - 300, T0 - 60):
        under_test.write(PREFIX + f"step-{int(T0 - at)}.pt", at)
    assert under_test.reader.newest(PREFIX, bound) == newest


def test_nothing_readable_under_the_prefix_is_no_checkpoint(under_test: ReaderUnderTest) -> None:
    under_test.write(f"s3://{BUCKET}-other/prodexp2/ckpt/p2-5/step-1.pt", T0)
    under_test.write(f"s3://{BUCKET}/prodexp1/ckpt/p2-5/step-1.pt", T0)
    assert under_test.reader.newest(PREFIX) is None
    assert under_test.reader.newest("s3://no-such-bucket/ckpt/") is None
    assert under_test.reader.newest("/local/ckpt/") is None
