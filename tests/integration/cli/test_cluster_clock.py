"""Where commands read "now": the emulator's clock over HTTP when the stack exports it, else this machine's;
and the embedded S3 dating its objects by the cluster's clock."""

from __future__ import annotations

import email.utils
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC

import boto3
import pytest
from gpusim import BatchModel, ModelOptions, RealtimeEngine
from gpusim.engine import SteppedClock
from gpusim.server import GpuSimServer
from moto import mock_aws
from shareplane_cli.aws import Target
from shareplane_cli.clock import CLOCK_URL_VARIABLE, cluster_clock, read_clock
from shareplane_cli.errors import CliError, ExitCode
from shareplane_cli.local import s3_clock

#: The emulator's virtual time 0, in epoch ms (2026-03-01T00:00:00Z).
EPOCH_MS = 1_772_323_200_000
SPEED = 100.0


@pytest.fixture
def emulator() -> Iterator[tuple[GpuSimServer, SteppedClock]]:
    """gpusim on a clock only the test moves, at 100 virtual seconds per wall second."""
    wall = SteppedClock()
    model = BatchModel(RealtimeEngine(speed=SPEED, wall_clock=wall), ModelOptions(epoch_ms=EPOCH_MS))
    server = GpuSimServer(model).start()
    try:
        yield server, wall
    finally:
        server.stop()


def test_the_emulator_answers_its_virtual_time_and_dates_its_answers_by_it(
    emulator: tuple[GpuSimServer, SteppedClock],
) -> None:
    server, wall = emulator
    # GIVEN 30 wall seconds have passed on the emulator's clock (3000 virtual seconds at 100x)
    wall.advance(30.0)
    # THEN its clock answers the virtual time, and a Batch answer's Date header says the same
    assert read_clock(server.clock_url) == EPOCH_MS / 1000 + 3000
    with urllib.request.urlopen(server.clock_url) as response:
        dated = email.utils.parsedate_to_datetime(response.headers["Date"])
    assert dated.timestamp() == EPOCH_MS / 1000 + 3000


def test_a_command_reads_now_from_the_exported_clock_url_else_from_this_machine(
    emulator: tuple[GpuSimServer, SteppedClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, wall = emulator
    wall.advance(12.0)
    # GIVEN no clock is exported: this machine's
    assert cluster_clock({}) is time.time
    monkeypatch.delenv(CLOCK_URL_VARIABLE, raising=False)
    before = time.time()
    assert before <= Target().now() <= time.time()
    # WHEN the stack's clock is exported, THEN the target and the root it builds read it
    monkeypatch.setenv(CLOCK_URL_VARIABLE, server.clock_url)
    assert Target().now() == EPOCH_MS / 1000 + 1200
    assert Target().root().clock() == EPOCH_MS / 1000 + 1200


def test_an_exported_clock_that_does_not_answer_is_named_with_the_fix() -> None:
    clock = cluster_clock({CLOCK_URL_VARIABLE: "http://127.0.0.1:9/gpusim/clock"})
    with pytest.raises(CliError) as raised:
        clock()
    assert raised.value.code is ExitCode.UNREACHABLE
    assert CLOCK_URL_VARIABLE in raised.value.problem and "shareplane up" in raised.value.fix


def test_the_embedded_s3_dates_objects_by_the_clock_it_is_given() -> None:
    # GIVEN S3 on a clock an hour ahead of this machine's (an emulator's, running ahead)
    ahead = time.time() + 3600
    s3_clock.install(lambda: ahead)
    try:
        with mock_aws():
            s3 = boto3.client("s3", region_name="us-east-1")
            s3.create_bucket(Bucket="drops")
            s3.put_object(Bucket="drops", Key="submit/a.yaml", Body=b"x")
            # THEN the object's LastModified is that clock's (S3 answers whole seconds)
            modified = s3.head_object(Bucket="drops", Key="submit/a.yaml")["LastModified"].timestamp()
    finally:
        s3_clock.uninstall()
    assert modified == int(ahead)
    # AND uninstalled, moto's own clock dates objects again
    from moto.s3 import models

    assert models.utcnow().replace(tzinfo=UTC).timestamp() == pytest.approx(time.time(), abs=5)
