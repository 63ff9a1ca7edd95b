"""`shareplane jobs`: who uploaded each job, in the JSON records and in one job's detail view."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from moto import mock_aws
from shareplane.service.record_uploader import UploaderPorts, record_upload
from shareplane_cli.main import app
from typer.testing import CliRunner

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
        ports = UploaderPorts(world.ports.attributions, world.ports.alerts, world.config)
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
