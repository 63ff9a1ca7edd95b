"""template.yaml's reclaim wiring: switches, triggers, and a role that can stop jobs and list checkpoints only."""

from __future__ import annotations

from typing import Any

import yaml
from shareplane.domain.config.shares import SharesConfig

from tests.conftest import REPO
from tests.template import raw_template, resources


def role_statements(role: str) -> dict[str, dict[str, Any]]:
    """Sid -> statement of a role's inline policies."""
    found = resources(raw_template(), "AWS::IAM::Role")[role]["Properties"]["Policies"]
    return {s["Sid"]: s for p in found for s in p["PolicyDocument"]["Statement"]}


def actions(statement: dict[str, Any]) -> set[str]:
    value = statement["Action"]
    return {value} if isinstance(value, str) else set(value)


def test_the_kill_switch_is_on_and_dry_run_off_by_default_and_every_function_reads_them() -> None:
    template = raw_template()
    assert template["Parameters"]["ReclaimEnabled"]["Default"] == "true"
    assert template["Parameters"]["ReclaimDryRun"]["Default"] == "false"
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert env["RECLAIM_ENABLED"] == {"Ref": "ReclaimEnabled"}
    assert env["RECLAIM_DRY_RUN"] == {"Ref": "ReclaimDryRun"}
    assert env["RECLAIM_QUEUE_URL"] == {"Ref": "ReclaimCapacityQueue"}


def test_reclaim_is_triggered_by_runnable_jobs_and_a_five_minute_tick() -> None:
    rules = resources(raw_template(), "AWS::Events::Rule")
    assert rules["ReclaimCapacityRunnableRule"]["Properties"]["EventPattern"]["detail"] == {
        "status": ["RUNNABLE"]
    }
    assert rules["ReclaimCapacitySchedule"]["Properties"]["ScheduleExpression"] == "rate(5 minutes)"


def test_only_the_reclaim_and_idle_roles_may_terminate_service_jobs_and_only_service_jobs() -> None:
    roles = resources(raw_template(), "AWS::IAM::Role")
    holders = {
        r
        for r in roles
        if any(
            "batch:TerminateServiceJob" in actions(s) for s in role_statements(r).values() if "Action" in s
        )
    }
    assert holders == {"ReclaimCapacityRole", "DetectIdleRole"}
    idle_stop = role_statements("DetectIdleRole")["StopIdleJobs"]
    assert actions(idle_stop) == {"batch:TerminateServiceJob"}
    assert idle_stop["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:batch:${AWS::Region}:${AWS::AccountId}:service-job/*"
    }
    terminate = role_statements("ReclaimCapacityRole")["TerminateVictims"]
    assert actions(terminate) == {"batch:TerminateServiceJob"}
    # TerminateServiceJob's only resource type is the service job (IAM reference): a queue never matches.
    assert terminate["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:batch:${AWS::Region}:${AWS::AccountId}:service-job/*"
    }


def test_checkpoints_are_only_listed_under_the_teams_output_prefixes_of_the_config() -> None:
    # The submit path keeps checkpoint URIs under a team's output prefixes: those are what is listed.
    config = SharesConfig.model_validate(yaml.safe_load((REPO / "config" / "shares.yaml").read_text()))
    prefixes = [p for team in config.teams.values() for p in team.output_prefixes]
    buckets = {p.split("/")[2] for p in prefixes}
    listing = role_statements("ReclaimCapacityRole")["ListCheckpoints"]
    assert actions(listing) == {"s3:ListBucket"}
    assert listing["Resource"] == {"Fn::Sub": f"arn:${{AWS::Partition}}:s3:::{buckets.pop()}"} and not buckets
    assert sorted(listing["Condition"]["StringLike"]["s3:prefix"]) == sorted(
        p.split("/", 3)[3] + "*" for p in prefixes
    )
    every = {a for s in role_statements("ReclaimCapacityRole").values() for a in actions(s)}
    assert not {a for a in every if a.startswith("s3:")} - {"s3:ListBucket"}
