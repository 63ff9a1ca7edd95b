"""`shareplane idle` lists flagged jobs from the idle ledger; `shareplane jobs --job` shows a job's idle periods."""

from __future__ import annotations

import json
from dataclasses import replace

import boto3
import pytest
from moto import mock_aws
from shareplane.adapters.idle_ledger import DynamoIdleLedger
from shareplane.domain.idle.policy import Act, Signal
from shareplane.domain.idle.record import IdleRecord
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.aws import create_jobs_table
from tests.integration.drop_world import TABLE, build_world
from tests.integration.test_uploader_join import KEY, REQUEST, SPEC

T = 1_773_738_000.0


def record(job_id: str, act: Act, at: float, **kw: object) -> IdleRecord:
    fields: dict[str, object] = {
        "job_arn": f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}",
        "job_id": job_id,
        "signal": Signal.IDLE,
        "act": act,
        "decided_at": at,
        "since": T,
        "until": at - 60,
        "reason": "every GPU below 5% for 1800 s (window 1800 s)",
        "job_name": f"name-{job_id}",
        "team": "ProdExp2",
        "tier": "LOWPRI",
        "gpus": 8,
        "idle_gpu_hours": round((at - 60 - T) * 8 / 3600, 3),
        **kw,
    }
    return IdleRecord(**fields)  # type: ignore[arg-type]


def test_flagged_jobs_are_listed_one_row_per_period_with_filters(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_jobs_table(dynamodb, TABLE)
        ledger = DynamoIdleLedger(dynamodb, TABLE)
        ledger.record(record("idle-1", Act.WARN, T + 1860, stop_at=T + 2460))
        ledger.record(record("idle-1", Act.STOP, T + 2460, stopped=True))
        ledger.record(
            record("hung-1", Act.ALERT, T + 6000, signal=Signal.HUNG, team="ProdExp1", idle_gpu_hours=0.0)
        )
        runner = CliRunner()
        result = runner.invoke(app, ["idle", "--table", TABLE, "--hours", "0", "--output", "json"])
        assert result.exit_code == 0, result.output
        periods = json.loads(result.stdout)
        # by period start, then job
        assert [(p["jobId"], p["signal"], [a["act"] for a in p["acts"]], p["stopped"]) for p in periods] == [
            ("hung-1", "hung", ["alert"], False),
            ("idle-1", "idle", ["warn", "stop"], True),
        ]
        assert periods[1]["idleGpuHours"] == pytest.approx((2400) * 8 / 3600, abs=1e-3)
        stopped = runner.invoke(app, ["idle", "--table", TABLE, "--hours", "0", "--stopped", "-o", "json"])
        assert [p["jobId"] for p in json.loads(stopped.stdout)] == ["idle-1"]
        team = runner.invoke(
            app, ["idle", "--table", TABLE, "--hours", "0", "--team", "ProdExp1", "-o", "json"]
        )
        assert [p["jobId"] for p in json.loads(team.stdout)] == ["hung-1"]
        table = runner.invoke(app, ["idle", "--table", TABLE, "--hours", "0"])
        assert table.exit_code == 0 and "name-idle-1" in table.output and "2 flagged" in table.output
        # decisions older than the window are left out (these are from March; the window is the last day)
        recent = runner.invoke(app, ["idle", "--table", TABLE, "-o", "json"])
        assert recent.exit_code == 0 and json.loads(recent.stdout) == []


def test_a_job_detail_shows_its_idle_periods(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    with mock_aws():
        world = build_world()
        world.handle(replace(world.drop(KEY, SPEC), request_id=REQUEST, requester="111122223333"))
        runner = CliRunner()
        listed = json.loads(runner.invoke(app, ["jobs", "--table", TABLE, "--output", "json"]).stdout)
        job = listed[0]
        job_id = job["jobArn"].rsplit("/", 1)[-1]
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        DynamoIdleLedger(dynamodb, TABLE).record(
            replace(record(job_id, Act.ALERT, T + 1860), job_arn=job["jobArn"])
        )
        detail = runner.invoke(app, ["jobs", "--table", TABLE, "--job", job["jobArn"]])
        assert detail.exit_code == 0, detail.output
        line = next(row for row in detail.output.splitlines() if "idle periods" in row)
        assert "idle since 2026-03-17 09:00:00" in line and "alert" in line
        (as_json,) = json.loads(
            runner.invoke(app, ["jobs", "--table", TABLE, "--job", job["jobArn"], "-o", "json"]).stdout
        )
        assert [a["act"] for a in as_json["idlePeriods"][0]["acts"]] == ["alert"]
        other = next(r for r in listed if r["jobArn"] != job["jobArn"])
        quiet = runner.invoke(app, ["jobs", "--table", TABLE, "--job", other["jobArn"]])
        assert "never flagged" in quiet.output
