"""`shareplane shares`: current settings with target vs actual, --history, --rollback (moto + Batch emulator)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws
from shareplane.service.rebalance_shares import RebalanceSettings
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.aws import create_jobs_table
from tests.fakes.rebalance_world import shares_config
from tests.rebalance_cluster import (
    QUEUE,
    Cluster,
    borrowed_fairshare_queue,
    start_cluster,
    weights,
)

TABLE = "shareplane-jobs"
runner = CliRunner()
#: The cluster's own config (one share per team), written for the CLI's --config.
CONFIG_FILE: list[str] = []


@pytest.fixture
def applied(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> Iterator[tuple[Cluster, str, str]]:
    """A queue whose rebalancer applied one plan: ProdExp2's weight 1.0 -> 1.25."""
    path = tmp_path / "shares.yaml"
    path.write_text(yaml.safe_dump(shares_config().model_dump(mode="json", exclude_none=True)))
    CONFIG_FILE[:] = [str(path)]
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_jobs_table(dynamodb, TABLE)
        cluster, server, _ = start_cluster(shares_config(), dynamodb, TABLE)
        monkeypatch.setenv("AWS_ENDPOINT_URL_BATCH", server.endpoint)
        try:
            arn = borrowed_fairshare_queue(cluster)
            outcome = cluster.rebalance("2026-03-16T00:05:00Z", RebalanceSettings(job_queue=QUEUE))
            assert outcome.action == "applied"
            yield cluster, arn, str(outcome.plan_id)
        finally:
            server.stop()


@pytest.fixture
def advised(aws_credentials: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[Cluster]:
    """The same queue under the shipped default, advisory mode: no plan recorded yet."""
    config = shares_config(rebalance={"mode": "advisory"})
    path = tmp_path / "shares.yaml"
    path.write_text(yaml.safe_dump(config.model_dump(mode="json", exclude_none=True)))
    CONFIG_FILE[:] = [str(path)]
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_jobs_table(dynamodb, TABLE)
        cluster, server, _ = start_cluster(config, dynamodb, TABLE)
        monkeypatch.setenv("AWS_ENDPOINT_URL_BATCH", server.endpoint)
        try:
            borrowed_fairshare_queue(cluster)
            yield cluster
        finally:
            server.stop()


def shares(*args: str) -> Any:
    """Run `shareplane shares ARGS` against the test table and queue."""
    return runner.invoke(app, ["shares", "--table", TABLE, "--queue", QUEUE, "--config", *CONFIG_FILE, *args])


def test_shares_show_each_weight_with_target_and_actual(applied: tuple[Cluster, str, str]) -> None:
    result = shares("--output", "json")
    assert result.exit_code == 0, result.output
    view = json.loads(result.stdout)
    assert (view["mode"], view["lastRun"]["reason"], view["lastRun"]["applied"]) == (
        "fairshare",
        "rebalanced",
        True,
    )
    by_share = {s["share"]: s for s in view["shares"]}
    assert {k: by_share["ProdExp2"][k] for k in ("setting", "target", "actual", "waiting")} == {
        "setting": 1.25,
        "target": 40.0,
        "actual": 20.0,
        "waiting": 30.0,
    }
    assert by_share["ProdExp1"]["setting"] == 1.0 and by_share["ProdExp1"]["target"] == 60.0
    # beside it, the template's baseline (60/40 -> 1.5) and the value the rebalancer holds in force
    assert (by_share["ProdExp2"]["baseline"], by_share["ProdExp2"]["rebalancerValue"]) == (1.5, 1.25)


def test_the_table_view_names_the_shares_and_their_weights(applied: tuple[Cluster, str, str]) -> None:
    result = shares()
    assert result.exit_code == 0, result.output
    assert "ProdExp2" in result.stdout and "1.25" in result.stdout and "weightFactor" in result.stdout


def test_history_lists_audit_records_and_rollback_restores_and_is_audited(
    applied: tuple[Cluster, str, str],
) -> None:
    cluster, arn, plan_id = applied
    history = json.loads(shares("--history", "-o", "json").stdout)
    assert [(r["planId"], r["after"]) for r in history] == [(plan_id, {"ProdExp2": 1.25})]
    # WHEN the operator rolls it back by the id --history showed
    result = shares("--rollback", plan_id, "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["action"] == "applied"
    # THEN Batch holds the old weight, and the rollback is the newest audit record
    assert weights(cluster, arn) == {"ProdExp1": 1.0, "ProdExp2": 1.0}
    newest = json.loads(shares("--history", "-o", "json").stdout)[0]
    assert (newest["kind"], newest["rollbackOf"], newest["after"]) == ("rollback", plan_id, {"ProdExp2": 1.0})
    assert "2 audit records" in shares("--history").stdout


def test_rolling_back_an_unknown_id_says_where_to_find_one(applied: tuple[Cluster, str, str]) -> None:
    result = shares("--rollback", "feedfacefeedface")
    assert result.exit_code == 2
    assert "--history" in result.output


def test_plan_shows_the_applied_plan_beside_the_values_now(applied: tuple[Cluster, str, str]) -> None:
    _, _, plan_id = applied
    result = shares("--plan", "-o", "json")
    assert result.exit_code == 0, result.output
    view = json.loads(result.stdout)
    assert {k: view["plan"][k] for k in ("planId", "status", "applied", "kind", "reason")} == {
        "planId": plan_id,
        "status": "APPLIED",
        "applied": True,
        "kind": "plan",
        "reason": "rebalanced",
    }
    by_share = {s["share"]: s for s in view["shares"]}
    moved = {
        k: by_share["ProdExp2"][k] for k in ("current", "before", "proposed", "target", "actual", "applied")
    }
    assert moved == {
        "current": 1.25,
        "before": 1.0,
        "proposed": 1.25,
        "target": 40.0,
        "actual": 20.0,
        "applied": True,
    }
    assert "target 40 instances" in by_share["ProdExp2"]["why"]
    assert isinstance(by_share["ProdExp2"]["ledgerBalance"], float)
    # a share the plan leaves alone was neither applied nor not
    assert (by_share["ProdExp1"]["moves"], by_share["ProdExp1"]["applied"]) == (False, None)


def test_plan_shows_an_advisory_plan_as_proposed_and_not_applied(advised: Cluster) -> None:
    # GIVEN no tick yet: no plan to show
    empty = shares("--plan")
    assert empty.exit_code == 0, empty.output
    assert "no plan recorded yet" in empty.stdout
    assert json.loads(shares("--plan", "-o", "json").stdout)["plan"] is None
    # WHEN the rebalancer runs a tick in advisory mode
    outcome = advised.rebalance("2026-03-16T00:05:00Z", RebalanceSettings(job_queue=QUEUE))
    assert outcome.action == "advisory"
    # THEN --plan shows what it would do (ProdExp2 1.0 -> 1.25), and that Batch still holds 1.0
    view = json.loads(shares("--plan", "-o", "json").stdout)
    assert (view["plan"]["planId"], view["plan"]["status"], view["plan"]["applied"]) == (
        outcome.plan_id,
        "ADVISORY",
        False,
    )
    by_share = {s["share"]: s for s in view["shares"]}
    assert {k: by_share["ProdExp2"][k] for k in ("current", "proposed", "target", "applied")} == {
        "current": 1.0,
        "proposed": 1.25,
        "target": 40.0,
        "applied": False,
    }
    # ... and so does the table
    table = shares("--plan").stdout
    assert "ADVISORY, not applied" in table and "1.25" in table and "ledger" in table
