"""`shareplane jobs`: who uploaded each job and each job's wait, in the JSON records and in the views for people."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import boto3
import pytest
from moto import mock_aws
from shareplane.adapters.dynamodb_store import PREDICTION_SK, job_pk
from shareplane.domain.forecast.prediction import StartPrediction
from shareplane.domain.jobs.lifecycle import JobObservation, JobStatus
from shareplane.service.record_state import record_observation
from shareplane.service.record_uploader import record_upload
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.integration.cli.plain_table import plain_rows
from tests.integration.drop_world import TABLE, build_world
from tests.integration.test_uploader_join import KEY, REQUEST, SPEC, SUBMITTER

JOB = "bert-large-ranker-ft-01"


def test_a_jobs_uploader_is_shown_before_and_after_cloudtrails_event(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line, however long the ARN
    with mock_aws():
        world = build_world()
        # GIVEN a drop submitted before CloudTrail's event came
        world.handle(replace(world.drop(KEY, SPEC), request_id=REQUEST, requester="111122223333"))
        runner = CliRunner()
        before = runner.invoke(app, ["jobs", "--table", TABLE, "--job", JOB])
        assert before.exit_code == 0, before.output
        assert "principal not recorded yet" in before.output and REQUEST in before.output
        # WHEN CloudTrail's event is recorded
        ports = world.uploader_ports(world.ports.attributions)
        record_upload(SUBMITTER, ports, 0)
        # THEN the detail view names the principal and how it compares with the team's submitters
        after = runner.invoke(app, ["jobs", "--table", TABLE, "--job", JOB])
        assert after.exit_code == 0, after.output
        line = next(row for row in after.output.splitlines() if "uploaded by" in row)
        assert SUBMITTER.principal_arn in line and "one of the team's submitters" in line
        detail = runner.invoke(app, ["jobs", "--table", TABLE, "--job", JOB, "--output", "json"])
        (record,) = json.loads(detail.stdout)  # --job with JSON: an array of the matching jobs
        assert record["uploader"]["principal"]["arn"] == SUBMITTER.principal_arn
        # AND every JSON record of the listing carries it
        listed = runner.invoke(app, ["jobs", "--table", TABLE, "--output", "json"])
        assert listed.exit_code == 0, listed.output
        records = json.loads(listed.stdout)
        assert len(records) == 3
        assert {r["uploader"]["principal"]["arn"] for r in records} == {SUBMITTER.principal_arn}
        assert {r["uploader"]["principal"]["check"] for r in records} == {"submitter"}
        # AND a job nobody recorded is not found (exit 5), with the fix
        missing = runner.invoke(app, ["jobs", "--table", TABLE, "--job", "no-such-job"])
        assert missing.exit_code == 5 and "no recorded job" in missing.output


def test_every_listed_job_carries_its_wait_as_its_story_and_the_table_give_it(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line
    with mock_aws():
        world = build_world()
        # GIVEN a drop's three jobs: one dispatched 90 s after its submission, one that failed before any
        # dispatch, one still waiting
        world.handle(replace(world.drop(KEY, SPEC), request_id=REQUEST, requester="111122223333"))
        jobs = {s.job_name: s for s in world.store.jobs()}
        dispatched, failed, waiting = jobs[JOB], jobs["ranker-lr-sweep-07"], jobs["ranker-tokenize-v7"]
        created = dispatched.created_at or 0
        for observation in (
            JobObservation(dispatched.job_arn, JobStatus.RUNNABLE, created_at=created),
            JobObservation(
                dispatched.job_arn, JobStatus.SCHEDULED, created_at=created, scheduled_at=created + 90_000
            ),
            JobObservation(
                dispatched.job_arn,
                JobStatus.RUNNING,
                created_at=created,
                scheduled_at=created + 90_000,
                started_at=created + 150_000,
            ),
            JobObservation(
                failed.job_arn,
                JobStatus.FAILED,
                created_at=failed.created_at,
                stopped_at=(failed.created_at or 0) + 30_000,
                status_reason="Cancelled by the team",
            ),
        ):
            record_observation(observation, world.store, world.ports.metrics, world.config)
        runner = CliRunner()
        # WHEN the jobs are listed as JSON
        listed = runner.invoke(app, ["jobs", "--table", TABLE, "--output", "json"])
        assert listed.exit_code == 0, listed.output
        waits = {r["jobName"]: r["wait"] for r in json.loads(listed.stdout)}
        # THEN each carries its wait: to the first dispatch once dispatched, ...
        assert waits[JOB] == {
            "seconds": 90,
            "ended": True,
            "firstDispatchAt": created + 90_000,
            "text": "1m30s",
        }
        # ... none for a job that ended without a dispatch (no start: no wait, and no dispatch time) ...
        assert waits["ranker-lr-sweep-07"] == {
            "seconds": None,
            "ended": False,
            "firstDispatchAt": None,
            "text": "-",
        }
        # ... and the wait so far, not ended, with no dispatch time, for the job still waiting
        still = waits[waiting.job_name]
        assert still["ended"] is False and still["firstDispatchAt"] is None
        assert still["seconds"] >= 0 and still["text"].endswith(" so far")
        # AND one job's story gives the same object for the jobs whose wait no longer moves
        for name in (JOB, "ranker-lr-sweep-07"):
            detail = runner.invoke(app, ["jobs", "--table", TABLE, "--job", name, "--output", "json"])
            assert json.loads(detail.stdout)[0]["wait"] == waits[name]
        # AND the table's wait column shows each one's text (the same code computed both)
        table = runner.invoke(app, ["jobs", "--table", TABLE])
        assert table.exit_code == 0, table.output
        rows = plain_rows(table.stdout, ["job", "status", "team", "tier", "wait", "age", "start"])
        wait_cells = {row["job"]: row["wait"] for row in rows}
        assert wait_cells[JOB] == "1m30s" and wait_cells["ranker-lr-sweep-07"] == "-"
        assert wait_cells[waiting.job_name].endswith("so far")


def test_a_malformed_stored_prediction_hides_only_itself_and_is_logged(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line
    with mock_aws():
        world = build_world()
        # GIVEN a drop's three jobs, one of which has a stored prediction whose p50 is not a time
        world.handle(replace(world.drop(KEY, SPEC), request_id=REQUEST, requester="111122223333"))
        jobs = {s.job_name: s for s in world.store.jobs()}
        bad = jobs[JOB]
        world.store.save_prediction(
            bad.job_arn, StartPrediction(1_773_700_000_000, None, None, None, 0.0, 10)
        )
        boto3.client("dynamodb").update_item(
            TableName=TABLE,
            Key={"pk": {"S": job_pk(bad.job_arn)}, "sk": {"S": PREDICTION_SK}},
            UpdateExpression="SET startP50 = :bad",
            ExpressionAttributeValues={":bad": {"S": "soon"}},
        )
        runner = CliRunner()
        # WHEN the jobs are listed, as a table and as JSON
        with caplog.at_level(logging.WARNING):
            table = runner.invoke(app, ["jobs", "--table", TABLE])
            listed = runner.invoke(app, ["jobs", "--table", TABLE, "--output", "json"])
            story = runner.invoke(app, ["jobs", JOB, "--table", TABLE])
        # THEN every job is listed, and the job's own story told; the bad item shows as "-" (None in JSON) and is logged, naming the job
        assert table.exit_code == 0, table.output
        assert listed.exit_code == 0, listed.output
        assert story.exit_code == 0, story.output
        # (the warning is a log line, JSON on stdout when an earlier test configured Powertools' logger)
        rows = "\n".join(line for line in table.stdout.splitlines() if not line.startswith("{"))
        assert "3 jobs" in rows and "soon" not in rows
        records = {r["jobName"]: r for r in json.loads(listed.stdout)}
        assert set(records) == set(jobs) and records[JOB]["prediction"] is None
        assert any(bad.job_arn in r.getMessage() and "prediction" in r.getMessage() for r in caplog.records)
