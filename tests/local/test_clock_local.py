"""One clock on `shareplane up`: a job is dated, dispatched, costed and shown on the emulator's clock.

The stack runs as `up` runs it: the emulator on the wall clock at `up`'s speed, the loop unbounded
between turns and sleeping its poll interval when a turn finds nothing to do. The emulator runs
ahead of the wall from the start (at 100x, 99 virtual seconds every wall second), so anything dated
by the wall (S3's LastModified of the drop, the CLI's "now") lands minutes in the cluster's past.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from shareplane.bootstrap import Root
from shareplane.domain.explain.record import JobRecord
from shareplane.domain.jobs.lifecycle import JobStatus
from shareplane.service.queries import job_records
from shareplane_cli.local import LocalStack, StackSpec
from shareplane_cli.local.emulator import DEFAULT_SPEED
from shareplane_cli.local.loop import StackLoop
from shareplane_cli.local.runner import FunctionRunner
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.conftest import REPO

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-2")]

#: `shareplane up`'s own defaults: its speed and how long its loop sleeps after an idle turn.
SPEED = DEFAULT_SPEED
POLL_SECONDS = 0.5
#: One loop turn of `up` in virtual seconds: the idle turn's sleep (0.5 s x 100 = 50 s), plus S3's
#: LastModified, which counts whole seconds (up to 1 s early), plus the turn's own work outside the
#: handlers (queue polls; the clock is held while handlers run), well under a wall second here.
ONE_TURN_VIRTUAL_SECONDS = POLL_SECONDS * SPEED + 1 + 9
#: Wall seconds the stack idles before the submission: the emulator is then ~500 virtual seconds ahead.
IDLE_WALL_SECONDS = 5.0
CONFIG_PATH = REPO / "config" / "shares.yaml"
HIGHPRI_SPEC = b"""- name: clock-probe-01
  team: ProdExp1
  priority: HIGHPRI
  instance_type: ml.p4d.24xlarge
  instance_count: 1
  image: 111122223333.dkr.ecr.us-east-1.amazonaws.com/prodexp1/ranker-train:2025.10.1
  output_path: s3://search-ml-training/prodexp1/output/
  max_runtime_seconds: 7200
"""


def record_of(stack: LocalStack, name: str) -> JobRecord | None:
    store = Root({}, dynamodb=stack.client("dynamodb"), table_name=stack.outputs["JobsTableName"]).store
    return next((r for r in job_records(store) if r.state.job_name == name), None)


def turn_until(loop: StackLoop, done: Any, what: str, wall_seconds: float = 60.0) -> None:
    deadline = time.monotonic() + wall_seconds
    while not done():
        assert time.monotonic() < deadline, f"not reached: {what}"
        loop.turn(POLL_SECONDS)


def cli_json(stack: LocalStack, args: list[str]) -> Any:
    """A command against the stack with only its exported variables, as a user of `up --env` runs it."""
    common = ["--endpoint", stack.endpoint or "", "--table", stack.outputs["JobsTableName"]]
    result = CliRunner().invoke(
        app, [*args, *common, "--config", str(CONFIG_PATH), "-o", "json"], env=stack.environment()
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_highpri_job_on_an_empty_cluster_is_dispatched_within_a_turn_and_dated_on_one_clock() -> None:
    with LocalStack(StackSpec(REPO / "template.yaml"), speed=SPEED) as stack:
        loop = StackLoop(stack, FunctionRunner(stack), max_virtual_seconds_per_step=None)
        # GIVEN `up` has run a while on an empty cluster (its emulator now well ahead of the wall)
        started = time.monotonic()
        while time.monotonic() - started < IDLE_WALL_SECONDS:
            loop.turn(POLL_SECONDS)
        emulator = stack.running_emulator()
        # WHEN a team drops a HIGHPRI spec, as `shareplane submit` does
        stack.client("s3").put_object(
            Bucket=stack.outputs["DropBucketName"], Key="submit/ProdExp1/probe.yaml", Body=HIGHPRI_SPEC
        )
        dropped_at = stack.cluster_time()
        turn_until(
            loop,
            lambda: (r := record_of(stack, "clock-probe-01")) is not None and r.first_start is not None,
            "the job dispatched",
        )
        record = record_of(stack, "clock-probe-01")
        assert record is not None and record.created_s is not None and record.first_start is not None
        # THEN it is dated when it was dropped, on the cluster's clock, and dispatched within one turn
        assert abs(record.created_s - dropped_at) <= 1.0 + POLL_SECONDS * SPEED
        waited = record.first_start - record.created_s
        assert 0 <= waited <= ONE_TURN_VIRTUAL_SECONDS, f"waited {waited:.1f} virtual s"

        # AND once it runs, `usage` and its story agree on its cost so far, and every view dates "now"
        # by the emulator's clock (held, so they all look at the same moment)
        turn_until(
            loop,
            lambda: (
                (r := record_of(stack, "clock-probe-01")) is not None and r.state.status is JobStatus.RUNNING
            ),
            "the job running",
        )
        for _ in range(4):  # let it run a few virtual minutes
            loop.turn(POLL_SECONDS)
        with stack.clock.held():
            now = emulator.model.ms(emulator.virtual_now()) / 1000
            (story,) = cli_json(stack, ["jobs", "clock-probe-01"])
            usage = cli_json(stack, ["usage", "--team", "ProdExp1"])
            top = cli_json(stack, ["top"])
        story_usd = sum(a["usd"] for a in story["cost"]["attempts"])
        (row,) = usage
        assert story_usd > 0
        assert row["estimated_usd"] == pytest.approx(story_usd, abs=0.01)
        assert row["usd"] == pytest.approx(story_usd, abs=0.01)
        assert top["at"] == datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds")
