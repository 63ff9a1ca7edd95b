"""`shareplane alerts`: what was sent, from the table's ALERT items."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from moto import mock_aws
from shareplane.adapters.alert_ledger import DynamoAlertLedger
from shareplane.domain.alerts.alert import AlertKind, job_alert
from shareplane.domain.config.failure_rules import Severity
from shareplane_cli.main import app
from shareplane_cli.time_options import parse_duration
from typer.testing import CliRunner

from tests.aws import create_jobs_table


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
