"""`shareplane alerts`: what was sent, from the table's ALERT items."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from moto import mock_aws
from shareplane.adapters.alert_ledger import DynamoAlertLedger
from shareplane.adapters.upload_attributions import DynamoUploadAttributions
from shareplane.domain.alerts.alert import AlertKind, job_alert
from shareplane.domain.config.failure_rules import Severity
from shareplane.domain.errors import PermissionDeniedError
from shareplane.domain.submit.attribution import UploadAttribution
from shareplane.service.permission_denied import PermissionAlerts
from shareplane.service.record_uploader import record_upload
from shareplane.service.submit_job import submit_dropped_spec
from shareplane_cli.errors import ExitCode
from shareplane_cli.main import app
from shareplane_cli.time_options import parse_duration
from typer.testing import CliRunner

from tests.aws import create_jobs_table
from tests.conftest import REPO
from tests.integration.drop_world import BUCKET, TABLE, build_world

INVALID = REPO / "config" / "jobs" / "prodexp2-invalid.yaml"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("15m", 900), ("6h", 21600), ("7d", 604800)],
    ids=["seconds", "minutes", "hours", "days"],
)
def test_durations_read_as_seconds(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


def test_alerts_lists_what_was_sent_in_the_window_as_json(aws_credentials: None) -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        table = create_jobs_table(client)
        ledger = DynamoAlertLedger(client, table)
        now = time.time()
        for age, share in ((3 * 3600, "ProdExp1"), (60, "ProdExp2")):
            alert = job_alert(
                AlertKind.QUEUE_BLOCKED,
                share=share,
                queue="q",
                job_arn=f"arn:job/{share}",
                job_name=share,
                reason="MISCONFIGURATION",
            )
            assert ledger.claim_alert(alert, now - age, 3600)
            ledger.confirm_alert(alert, now - age)
        unsent = job_alert(
            AlertKind.FAILURE,
            severity=Severity.WARNING,
            share="ProdExp1",
            queue="q",
            job_arn="arn:job/x",
            job_name="x",
            reason="r",
            facts={"failure_class": "gpu_oom", "after_failures": "", "class_fix": "f"},
        )
        ledger.claim_alert(unsent, now, 3600)  # claimed, never confirmed: not shown
        result = CliRunner().invoke(app, ["alerts", "--since", "1h", "--output", "json", "--table", table])
        assert result.exit_code == 0, result.output
        (row,) = json.loads(result.output)
        assert (
            row["share"] == "ProdExp2"
            and row["kind"] == "queue_blocked"
            and row["body"]["reason"] == "MISCONFIGURATION"
        )
        table_output = CliRunner().invoke(app, ["alerts", "--since", "1d", "--table", table])
        assert table_output.exit_code == 0 and "2 alerts" in table_output.output


def test_a_bad_duration_is_named() -> None:
    result = CliRunner().invoke(app, ["alerts", "--since", "soon", "--table", "t"])
    assert result.exit_code != 0 and "not a duration" in result.output


def alerts_json(*args: str) -> list[dict[str, Any]]:
    """`shareplane alerts ARGS -o json` on the drop world's table: the alerts listed."""
    result = CliRunner().invoke(app, ["alerts", *args, "--output", "json", "--table", TABLE])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def test_the_drop_uploader_and_permission_alerts_are_listed(aws_credentials: None) -> None:
    with mock_aws():
        world = build_world()
        now = time.time()
        # GIVEN each path sends its alert: a rejected drop (ProdExp2's folder), an upload by someone
        # not in ProdExp1's submitters, and a refused control-plane call
        submit_dropped_spec(
            world.drop("submit/ProdExp2/bad.yaml", INVALID.read_bytes()), world.ports, int(now * 1000)
        )
        stranger = UploadAttribution(
            request_id="7K3Q9ZP1M2X8C4VA",
            bucket=BUCKET,
            key="submit/ProdExp1/sweep.yaml",
            event_name="PutObject",
            principal_arn="arn:aws:iam::111122223333:user/mallory",
            principal_type="IAMUser",
            account_id="111122223333",
        )
        attributions = DynamoUploadAttributions(world.dynamodb, TABLE)
        assert record_upload(stranger, world.uploader_ports(attributions), int(now)).alerted
        sender = world.ports.sender
        denied = PermissionDeniedError(
            "batch:TagResource", None, "arn:aws:iam::123456789012:role/r", "denied"
        )
        assert PermissionAlerts(
            "WatchFunction", lambda: sender.topic, lambda: sender.ledger, lambda: now
        ).report(denied)
        # WHEN the alerts are listed, THEN each is there, with its team
        listed = {(row["kind"], row["team"]) for row in alerts_json("--since", "1h")}
        assert listed == {
            ("spec_rejected", "ProdExp2"),
            ("uploader_not_submitter", "ProdExp1"),
            ("permission_denied", "none"),
        }
        # AND the filters take repeated and comma-separated values
        assert {r["kind"] for r in alerts_json("--kind", "spec_rejected,permission_denied")} == {
            "spec_rejected",
            "permission_denied",
        }
        assert [r["kind"] for r in alerts_json("--team", "ProdExp1", "--team", "ProdExp3")] == [
            "uploader_not_submitter"
        ]
        assert [r["kind"] for r in alerts_json("--severity", "critical")] == ["permission_denied"]
        assert alerts_json("--team", "ProdExp2", "--kind", "permission_denied") == []


@pytest.mark.parametrize(
    ("option", "value", "valid"),
    [("--kind", "idle,oom", "spec_rejected"), ("--severity", "loud", "critical, warning, info")],
)
def test_an_unknown_kind_or_severity_names_the_option_and_the_valid_values(
    option: str, value: str, valid: str
) -> None:
    result = CliRunner().invoke(app, ["alerts", option, value, "--table", "t"])
    assert result.exit_code == ExitCode.BAD_INPUT
    message = " ".join(result.stderr.split())
    assert option in message and value.split(",")[-1] in message and valid in message
