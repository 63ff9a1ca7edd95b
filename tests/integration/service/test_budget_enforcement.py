"""Budget enforcement at submission, on moto: an over-budget team's new drops are refused or demoted."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from moto import mock_aws
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.cost.billing import AttemptCost, BillableSource
from shareplane.domain.jobs.tags import TIER_TAG

from tests.conftest import REPO
from tests.integration.drop_world import BUCKET, DropWorld, build_world

SPEC = (REPO / "config" / "jobs" / "prodexp1-bert.yaml").read_bytes()
KEY = "submit/ProdExp1/bert.yaml"


def config_with_budget(enforcement: str, monthly_usd: float = 1000) -> SharesConfig:
    data = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    data["budgets"] = {"ProdExp1": {"monthly_usd": monthly_usd, "enforcement": enforcement}}
    return SharesConfig.model_validate(data)


def spent(world: DropWorld, usd: float, at_ms: int) -> None:
    """Record one finished attempt of ProdExp1 worth ``usd`` (37.688 USD per instance-hour)."""
    cost = AttemptCost(
        "arn:aws:sagemaker:us-east-1:123456789012:training-job/earlier",
        "ProdExp1",
        "LOWPRI",
        "ml.p4d.24xlarge",
        1,
        usd / 37.688 * 3600,
        37.688,
        at_ms,
        BillableSource.REPORTED,
    )
    assert world.store.record_cost(cost)


def drop_over_budget(enforcement: str, usd: float) -> tuple[DropWorld, dict[str, Any]]:
    world = build_world()
    world.config = config_with_budget(enforcement)
    obj = world.drop(KEY, SPEC)
    landed = world.s3.head_object(Bucket=BUCKET, Key=KEY, VersionId=obj.version_id)["LastModified"]
    spent(world, usd, int(landed.timestamp() * 1000))
    outcome = world.handle(obj)
    assert outcome.answer is not None
    return world, {"outcome": outcome, "answer": world.json(outcome.answer)}


@pytest.fixture
def aws(aws_credentials: None) -> Any:
    with mock_aws():
        yield


def test_an_over_budget_teams_new_lowpri_job_is_refused_saying_why_and_how_to_proceed(aws: None) -> None:
    world, result = drop_over_budget("refuse_lowpri", usd=1200)
    answer = result["answer"]
    # THEN the LOWPRI sweep is refused, the HIGHPRI fine-tune and the MIDPRI CPU job go in
    submitted = sorted(s["jobName"] for s in world.batch.submits)
    assert submitted == ["bert-large-ranker-ft-01", "ranker-tokenize-v7"]
    (refused,) = answer["rejected"]
    (error,) = refused["errors"]
    assert error["path"] == "jobs[1]"
    assert "1,200.00 USD of its 1,000.00 USD budget" in error["message"]
    assert "already queued or running are not touched" in error["message"]
    assert "MIDPRI or HIGHPRI" in error["fix"] and "budgets.ProdExp1.monthly_usd" in error["fix"]
    assert answer["budget"]["spent_usd"] == 1200.0 and answer["budget"]["notes"]
    # AND the team is alerted, as for any drop not wholly accepted
    assert any("ProdExp1" in json.dumps(a) for a in world.alerts())


def test_an_over_budget_teams_higher_tier_jobs_go_in_at_lowpri_when_it_demotes(aws: None) -> None:
    world, result = drop_over_budget("demote_to_lowpri", usd=1000)
    by_name = {s["jobName"]: s for s in world.batch.submits}
    assert len(by_name) == 3
    high = by_name["bert-large-ranker-ft-01"]
    low = world.config.tiers[world.config.tier_for_priority(10)]  # type: ignore[index]
    assert high["shareIdentifier"] == "ProdExp1" and high["schedulingPriority"] == low.scheduling_priority
    assert high["tags"][TIER_TAG] == "LOWPRI"
    payload_tags = {t["Key"]: t["Value"] for t in json.loads(high["serviceRequestPayload"])["Tags"]}
    assert payload_tags[TIER_TAG] == "LOWPRI"  # the training job's cost counts as LOWPRI too
    # the CPU job has no tier to move between on the FIFO queue; the LOWPRI sweep goes in as asked
    assert by_name["ranker-tokenize-v7"]["tags"][TIER_TAG] == "MIDPRI"
    assert result["answer"]["outcome"] == "accepted"
    (note,) = result["answer"]["budget"]["notes"]
    assert note.startswith("jobs[0] submitted at LOWPRI instead of HIGHPRI")
    (receipt,) = [j for j in result["answer"]["jobs"] if j["name"] == "bert-large-ranker-ft-01"]
    assert receipt["priority"] == "LOWPRI"


@pytest.mark.parametrize(("enforcement", "usd"), [("refuse_lowpri", 999), ("none", 5000)])
def test_under_budget_or_without_enforcement_every_job_goes_in_as_asked(
    aws: None, enforcement: str, usd: float
) -> None:
    world, result = drop_over_budget(enforcement, usd=usd)
    tiers = {s["jobName"]: s["tags"][TIER_TAG] for s in world.batch.submits}
    assert tiers == {
        "bert-large-ranker-ft-01": "HIGHPRI",
        "ranker-lr-sweep-07": "LOWPRI",
        "ranker-tokenize-v7": "MIDPRI",
    }
    assert "budget" not in result["answer"]


def test_a_retry_after_the_team_went_over_budget_answers_with_the_job_its_first_try_submitted(
    aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a drop whose first try, under budget, submitted every job and then crashed before answering
    world = build_world()
    world.config = config_with_budget("refuse_lowpri")
    obj = world.drop(KEY, SPEC)
    landed = world.s3.head_object(Bucket=BUCKET, Key=KEY, VersionId=obj.version_id)["LastModified"]
    save = world.store.save_payload
    crashes = iter([ConnectionError("crashed")])

    def crash_after_the_last_submit(arn: str, item: Any) -> bool:
        if len(world.batch.submits) == 3:
            for error in crashes:
                raise error
        return save(arn, item)

    monkeypatch.setattr(world.store, "save_payload", crash_after_the_last_submit)
    with pytest.raises(ConnectionError):
        world.handle(obj)
    assert world.batch.distinct_jobs == 3
    # WHEN the team's month crosses its budget before SQS delivers the event again
    spent(world, 1200, int(landed.timestamp() * 1000))
    outcome = world.handle(obj)
    # THEN the LOWPRI job the first try submitted is answered as submitted, not refused, and no job is added
    assert outcome.status == "accepted" and world.batch.distinct_jobs == 3
    assert len(outcome.jobs) == 3
    assert not world.json(outcome.answer).get("rejected")


def test_a_team_over_budget_by_what_its_running_jobs_accrued_has_its_lowpri_drop_refused(aws: None) -> None:
    # GIVEN nothing billed to ProdExp1 yet, but its job on 100 ml.p4d.24xlarge training for 20 minutes
    # (about 1,256 USD of its 1,000 USD budget), and a drop landing then
    from shareplane.domain.jobs.training import TrainingJobStatus
    from shareplane.service.record_state import record_observation

    from tests.cost_world import Attempt, Job, batch_events, training_events
    from tests.fakes.metrics import FakeMetrics

    world = build_world()
    world.config = config_with_budget("refuse_lowpri")
    obj = world.drop(KEY, SPEC)
    landed = int(
        world.s3.head_object(Bucket=BUCKET, Key=KEY, VersionId=obj.version_id)["LastModified"].timestamp()
    )
    start = landed * 1000 - 20 * 60_000
    attempt = Attempt(
        "AWSBatchwide-a0", start, start + 10 * 3_600_000, 100, TrainingJobStatus.COMPLETED, 36000
    )
    job = Job("wide", "ProdExp1", 10, (attempt,))
    for event in [*batch_events(job, landed * 1000), *training_events(attempt, landed * 1000)]:
        record_observation(event, world.store, FakeMetrics(), world.config)
    # WHEN the drop is handled
    outcome = world.handle(obj)
    answer = world.json(outcome.answer or "")
    # THEN its LOWPRI job is refused, the answer saying the running jobs are in the spend
    assert sorted(s["jobName"] for s in world.batch.submits) == [
        "bert-large-ranker-ft-01",
        "ranker-tokenize-v7",
    ]
    (error,) = [e for r in answer["rejected"] for e in r["errors"]]
    assert "running jobs included" in error["message"]
    assert answer["budget"]["spent_usd"] == pytest.approx(100 * 37.688 / 3, rel=0.01)
