"""Each training job (attempt) is costed exactly once, whatever the order and repetition of its events.

On moto: the COST item's condition and the month spend updated in the same transaction are what make
a repeated or reordered final event add nothing.
"""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.cost.billing import job_cost_usd
from shareplane.domain.jobs.lifecycle import JobObservation, JobStatus
from shareplane.domain.jobs.tags import TEAM_TAG, TIER_TAG
from shareplane.schemas import parse_state_event
from shareplane.service.record_state import record_observation

from tests.aws import create_jobs_table
from tests.conftest import REPO
from tests.fakes.metrics import FakeMetrics
from tests.properties import examples

CONFIG = SharesConfig.model_validate(__import__("yaml").safe_load((REPO / "config/shares.yaml").read_text()))
P4D_PRICE = 37.688
T0 = 1_773_619_200_000  # 2026-03-16T00:00:00Z
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-job/"


def training_event(name: str, status: str, secondary: str, at: int, **detail: Any) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),  # SageMaker may send one change twice under different ids
        "detail-type": "SageMaker Training Job State Change",
        "source": "aws.sagemaker",
        "account": "123456789012",
        "time": "2026-03-16T00:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": {
            "TrainingJobName": name,
            "TrainingJobArn": ARN + name,
            "TrainingJobStatus": status,
            "SecondaryStatus": secondary,
            "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 4},
            "CreationTime": T0,
            "LastModifiedTime": at,
            "Tags": {TEAM_TAG: "ProdExp1", TIER_TAG: "LOWPRI"},
            **detail,
        },
    }


def attempt_stream(name: str, final: str, billable: int) -> list[dict[str, Any]]:
    """One attempt's life: provisioning, training, then its final event (with its billable time)."""
    start, end = T0 + 300_000, T0 + 300_000 + billable * 1000
    return [
        training_event(name, "InProgress", "Starting", T0 + 1000),
        training_event(name, "InProgress", "Training", start, TrainingStartTime=start),
        training_event(
            name,
            final,
            final,
            end,
            TrainingStartTime=start,
            TrainingEndTime=end,
            TrainingTimeInSeconds=billable,
            BillableTimeInSeconds=billable,
        ),
    ]


JOB_ARN = "arn:aws:batch:us-east-1:123456789012:service-job/job-1"


def link_to_batch_job(
    store: Any, job_arn: str, share: str, priority: int, training_job_arns: list[str]
) -> None:
    """Record a Batch service job of ``share`` running those training jobs (what links them to it)."""
    record_observation(batch_link(job_arn, share, priority, training_job_arns), store, FakeMetrics(), CONFIG)


def batch_link(job_arn: str, share: str, priority: int, training_job_arns: list[str]) -> JobObservation:
    """A Batch event of a RUNNING service job of ``share`` naming its training jobs (its attempts)."""
    return JobObservation(
        job_arn=job_arn,
        status=JobStatus.RUNNING,
        job_id=job_arn.rsplit("/", 1)[-1],
        job_queue="arn:aws:batch:us-east-1:123456789012:job-queue/search-p4d-queue",
        share_identifier=share,
        scheduling_priority=priority,
        created_at=T0,
        started_at=T0 + 60_000,
        training_job_arns=tuple(training_job_arns),
    )


#: Three attempts of one Batch job (a failed one, a preempted one, the one that completed).
ATTEMPTS = {"attempt-1": ("Failed", 600), "attempt-2": ("Stopped", 1800), "attempt-3": ("Completed", 3600)}


@pytest.fixture
def dynamodb(aws_credentials: None) -> Any:
    with mock_aws():
        yield boto3.client("dynamodb", region_name="us-east-1")


@settings(
    max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_duplicated_and_reordered_events_cost_each_attempt_exactly_once(
    dynamodb: Any, data: st.DataObject
) -> None:
    # GIVEN every event of three attempts and the Batch event that links them to ProdExp1's LOWPRI job,
    # some delivered two or three times, in any order
    table = f"cost-{uuid.uuid4().hex[:8]}"
    create_jobs_table(dynamodb, table)
    store = DynamoJobStore(dynamodb, table)
    metrics = FakeMetrics()
    events: list[Any] = [
        e for name, (final, billable) in ATTEMPTS.items() for e in attempt_stream(name, final, billable)
    ]
    events.append(batch_link(JOB_ARN, "ProdExp1", 10, [ARN + name for name in ATTEMPTS]))
    copies = data.draw(st.lists(st.integers(1, 3), min_size=len(events), max_size=len(events)))
    delivered = [
        dict(e, id=str(uuid.uuid4())) if isinstance(e, dict) else e
        for e, n in zip(events, copies, strict=True)
        for _ in range(n)
    ]
    order = data.draw(st.permutations(delivered))
    # WHEN the record_state path records them
    for raw in order:
        record_observation(
            raw if isinstance(raw, JobObservation) else parse_state_event(raw), store, metrics, CONFIG
        )
    # THEN each attempt has one cost: billable seconds x 4 instances x the on-demand price
    costs = {c.training_job_arn: c for c in store.costs()}
    assert len(store.costs()) == len(ATTEMPTS)
    expected = {ARN + name: billable * 4 / 3600 * P4D_PRICE for name, (_, billable) in ATTEMPTS.items()}
    assert {arn: pytest.approx(c.usd) for arn, c in costs.items()} == expected
    # ... the month's spend counts each once, and the metric was emitted once per attempt
    total = sum(expected.values())
    assert store.month_spend("ProdExp1", "2026-03") == pytest.approx(total)
    assert len(metrics.named("CostUsd")) == len(ATTEMPTS)
    assert metrics.count("CostUsd") == pytest.approx(total)
    assert {d["Share"] for _, d in metrics.named("CostUsd")} == {"ProdExp1"}
    # ... and the Batch job's cost is the sum over its attempts
    assert job_cost_usd(store.costs()) == pytest.approx(total)


def test_a_cost_is_written_even_when_its_final_event_was_recorded_before_a_failure(dynamodb: Any) -> None:
    # GIVEN a final event whose state was written but whose cost was not (the Lambda died between)
    create_jobs_table(dynamodb, "jobs")
    store = DynamoJobStore(dynamodb, "jobs")
    link_to_batch_job(store, JOB_ARN, "ProdExp1", 10, [ARN + "attempt-9"])
    final = attempt_stream("attempt-9", "Completed", 3600)[-1]
    record_observation(parse_state_event(final), store, FakeMetrics(), None)  # no config: no cost
    assert store.costs() == []
    # WHEN the event is delivered again (a DUPLICATE for the state)
    record_observation(parse_state_event(final), store, FakeMetrics(), CONFIG)
    # THEN the attempt is costed now, once
    assert [c.usd for c in store.costs()] == [pytest.approx(4 * P4D_PRICE)]


def test_a_job_stopped_before_training_started_costs_nothing(dynamodb: Any) -> None:
    create_jobs_table(dynamodb, "jobs")
    store = DynamoJobStore(dynamodb, "jobs")
    link_to_batch_job(store, JOB_ARN, "ProdExp1", 10, [ARN + "never-started"])
    event = training_event("never-started", "Stopped", "Stopped", T0 + 60_000)
    record_observation(parse_state_event(event), store, FakeMetrics(), CONFIG)
    (cost,) = store.costs()
    assert (cost.usd, cost.source.value) == (0.0, "not_started")


def test_a_cost_belongs_to_its_batch_jobs_team_and_tier_never_to_the_training_jobs_tags(
    dynamodb: Any,
) -> None:
    # GIVEN ProdExp1's LOWPRI Batch job running a training job tagged as ProdExp2's HIGHPRI work, and a
    # training job named like Batch's, tagged ProdExp2, that no Batch job of shareplane ever ran
    create_jobs_table(dynamodb, "jobs")
    store = DynamoJobStore(dynamodb, "jobs")
    metrics = FakeMetrics()
    link_to_batch_job(
        store, "arn:aws:batch:us-east-1:123456789012:service-job/j1", "ProdExp1", 10, [ARN + "own"]
    )
    forged_tags = {TEAM_TAG: "ProdExp2", TIER_TAG: "HIGHPRI"}
    for name in ("own", "AWSBatchforged"):
        for raw in attempt_stream(name, "Completed", 3600):
            raw["detail"]["Tags"] = forged_tags
            record_observation(parse_state_event(raw), store, metrics, CONFIG)
    # THEN the linked attempt is ProdExp1's LOWPRI cost, the forged one nobody's, and it is counted
    owners = sorted((c.training_job_arn.removeprefix(ARN), c.team, c.tier) for c in store.costs())
    assert owners == [("own", "ProdExp1", "LOWPRI")]
    assert store.month_spend("ProdExp2", "2026-03") == 0.0
    assert store.month_spend("ProdExp1", "2026-03") == pytest.approx(4 * P4D_PRICE)
    assert {d["Team"] for _, d in metrics.named("CostUsd")} == {"ProdExp1"}
    assert metrics.count("UnownedTrainingJobs") == 1
