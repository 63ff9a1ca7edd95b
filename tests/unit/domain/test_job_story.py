"""One job's story (`shareplane jobs JOB`): labelled timeline, wait, requeues, decisions, cost, prediction."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import yaml
from shareplane.domain.alerts.sent import SentAlert
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane.domain.cost.billing import AttemptCost, BillableSource
from shareplane.domain.explain.record import JobRecord, history_label
from shareplane.domain.explain.record_json import story_json
from shareplane.domain.explain.story import job_story, job_wait, observed_now
from shareplane.domain.forecast.prediction import StartPrediction
from shareplane.domain.jobs.lifecycle import HistoryEntry, JobState, JobStatus, ObservationKind
from shareplane.domain.jobs.service_job_request import ServiceJobRequest
from shareplane.domain.jobs.training import TrainingHistoryEntry, TrainingJobStatus
from shareplane.domain.submit.payload import SubmittedPayload

from tests.conftest import REPO

CONFIG = SharesConfig.model_validate(yaml.safe_load((REPO / "config" / "shares.yaml").read_text()))
ARN = "arn:aws:batch:us-east-1:123456789012:service-job/0f6e2c1a"
TJ1 = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchft01-a1"
TJ2 = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchft01-a2"
T0 = 1_773_720_000_000  # createdAt, epoch ms


def entry(
    status: str, seconds: float, kind: str = "STATE_CHANGE", reason: str | None = None, **extra: Any
) -> HistoryEntry:
    return HistoryEntry(
        key="",
        status=JobStatus(status),
        at=T0 + int(seconds * 1000),
        reason=reason,
        kind=ObservationKind(kind),
        digest="",
        failure_class=extra.get("class"),
        rule=extra.get("rule"),
        action=extra.get("action"),
    )


def record(history: list[HistoryEntry], status: str, *, stopped_at: int | None = None) -> JobRecord:
    state = JobState(
        job_arn=ARN,
        status=JobStatus(status),
        seq="s",
        job_name="ft-01",
        job_queue="search-p4d-queue",
        share_identifier="ProdExp1",
        scheduling_priority=60,
        created_at=T0,
        stopped_at=stopped_at,
    )
    return JobRecord(state, tuple(history), tier=Tier.MIDPRI)


#: Submitted, dispatched after 10 min, preempted and requeued, dispatched again after 5 more, failed,
#: and the failure path decided to requeue it; its priority was raised while it waited.
PREEMPTED = record(
    [
        entry("SUBMITTED", 0, "SUBMITTED"),
        entry("RUNNABLE", 1),
        entry("SCHEDULED", 600),
        entry("RUNNING", 700),
        entry("RUNNING", 700, "RECONCILED"),
        entry("RUNNING", 1000, "PREEMPTION_STARTED", "preempted to reclaim lent capacity"),
        entry("RUNNABLE", 1100, reason="Preempted"),
        entry("RUNNABLE", 1200, "PRIORITY_ESCALATED", "schedulingPriority 50 -> 60: waited 1199s"),
        entry("SCHEDULED", 1400),
        entry("FAILED", 2000, reason="Received status from SageMaker: InternalServerError"),
        entry(
            "FAILED",
            2000,
            "FAILURE_DECISION",
            "internal_error: requeue",
            **{"class": "internal_error", "rule": "sagemaker-internal-error", "action": "requeue"},
        ),
    ],
    "FAILED",
    stopped_at=T0 + 2_000_000,
)
TRAINING = {
    TJ1: [
        TrainingHistoryEntry(TrainingJobStatus.IN_PROGRESS, T0 + 650_000, "Starting"),
        TrainingHistoryEntry(TrainingJobStatus.IN_PROGRESS, T0 + 700_000, "Training"),
    ],
    TJ2: [TrainingHistoryEntry(TrainingJobStatus.FAILED, T0 + 2_000_000, "Failed", "InternalServerError")],
}


def cost(arn: str, seconds: float, usd_per_hour: float | None) -> AttemptCost:
    return AttemptCost(
        arn, "ProdExp1", "MIDPRI", "ml.p4d.24xlarge", 2, seconds, usd_per_hour, T0, BillableSource.REPORTED
    )


def story(rec: JobRecord = PREEMPTED, **changes: Any) -> dict[str, Any]:
    parts: dict[str, Any] = {
        "training": TRAINING,
        "alerts": [],
        "costs": [],
        "submission": None,
        "now": T0 / 1000 + 5000,
    }
    return story_json(job_story(rec, **(parts | changes)))


@pytest.mark.parametrize(
    ("shown", "label"),
    [
        (entry("RUNNABLE", 0), "batch:RUNNABLE"),
        (entry("RUNNING", 0, "RECONCILED"), "reconciled:RUNNING"),
        (entry("SUBMITTED", 0, "SUBMITTED"), "submit:SUBMITTED"),
        (entry("RUNNABLE", 0, "QUEUE_BLOCKED"), "batch:RUNNABLE(queue_blocked)"),
        (entry("FAILED", 0, "FAILURE_DECISION"), "shareplane:FAILED(failure_decision)"),
        (entry("RUNNABLE", 0, "PRIORITY_ESCALATED"), "shareplane:RUNNABLE(priority_escalated)"),
    ],
    ids=[
        "a Batch event",
        "the reconciler's read of DescribeServiceJob",
        "the submit path's first record",
        "a blocked queue notice",
        "a failure decision",
        "a priority escalation",
    ],
)
def test_each_history_entry_is_labelled_by_who_reported_it(shown: HistoryEntry, label: str) -> None:
    assert history_label(shown) == label


def test_the_timeline_merges_sagemakers_events_into_batchs_by_time() -> None:
    labels = [e["label"] for e in story()["timeline"]]
    assert labels[:6] == [
        "submit:SUBMITTED",
        "batch:RUNNABLE",
        "batch:SCHEDULED",
        "sagemaker:Starting",
        "batch:RUNNING",
        "reconciled:RUNNING",
    ]
    assert labels[6] == "sagemaker:Training"  # same ms as Batch's RUNNING: after Batch's entries
    assert labels[-1] == "sagemaker:Failed"
    assert len(labels) == len(PREEMPTED.history) + 3


def test_the_wait_ends_at_the_first_dispatch_not_the_second() -> None:
    wait = story()["wait"]
    assert (wait["seconds"], wait["ended"], wait["text"]) == (600, True, "10m00s")
    assert wait["firstDispatchAt"] == T0 + 600_000


@pytest.mark.parametrize(
    ("rec", "seconds", "ended", "text"),
    [
        (record([entry("RUNNABLE", 1)], "RUNNABLE"), 3725, False, "1h02m so far"),
        (record([entry("RUNNABLE", 1), entry("FAILED", 50)], "FAILED"), None, False, "-"),
        (record([entry("RUNNABLE", 0), entry("SCHEDULED", 42)], "SCHEDULED"), 42, True, "42s"),
    ],
    ids=[
        "a job still waiting has waited until now",
        "a job that never started has no wait",
        "a dispatched job",
    ],
)
def test_job_wait(rec: JobRecord, seconds: float | None, ended: bool, text: str) -> None:
    wait = job_wait(rec, T0 / 1000 + 3725)
    assert (wait.seconds, wait.ended, wait.text()) == (seconds, ended, text)


def test_preemptions_requeues_changes_and_decisions_are_listed_with_their_reasons() -> None:
    told = story()
    assert [i["label"] for i in told["interruptions"]] == [
        "batch:RUNNING(preemption_started)",
        "batch:RUNNABLE",
    ]
    assert told["interruptions"][1]["reason"] == "Preempted"
    (change,) = told["placement"]["changes"]
    assert change["reason"].startswith("schedulingPriority 50 -> 60")
    (decision,) = told["decisions"]
    assert (decision["class"], decision["rule"], decision["action"]) == (
        "internal_error",
        "sagemaker-internal-error",
        "requeue",
    )


def test_the_submitted_placement_comes_from_the_request_the_submit_path_kept() -> None:
    submission = SubmittedPayload(
        ARN,
        source={"bucket": "drops", "key": "submit/ProdExp1/ft.yaml"},
        request=ServiceJobRequest(
            job_name="ft",
            job_queue="search-p4d-queue",
            service_job_type="SAGEMAKER_TRAINING",
            service_request_payload="{}",
            share_identifier="ProdExp1",
            scheduling_priority=50,
        ),
        submitted_at=T0,
        uploader={"account": "111122223333"},
    )
    told = story(submission=submission, config=CONFIG)
    assert told["placement"]["asSubmitted"]["schedulingPriority"] == 50
    assert told["placement"]["asSubmitted"]["tier"] == "MIDPRI"  # the config's tier of priority 50
    assert story(submission=submission)["placement"]["asSubmitted"]["tier"] is None  # no config, no tier
    assert told["placement"]["now"]["schedulingPriority"] == 60
    assert told["submission"]["source"]["key"] == "submit/ProdExp1/ft.yaml"
    assert story()["placement"]["asSubmitted"] is None


def test_cost_sums_priced_attempts_and_alerts_are_in_send_order() -> None:
    alerts = [
        SentAlert(T0 / 1000 + 2100, "failure", "high", "ft-01 failed"),
        SentAlert(T0 / 1000 + 1300, "wait_slo", "warning", "ft-01 waits"),
    ]
    told = story(costs=[cost(TJ2, 600, 37.688), cost(TJ1, 300, 37.688)], alerts=alerts)
    assert [a["trainingJobArn"] for a in told["cost"]["attempts"]] == [TJ2, TJ1]  # same `at`: stable
    assert told["cost"]["usd"] == round(2 * 900 / 3600 * 37.688, 2)
    assert told["cost"]["billableInstanceHours"] == 0.5
    assert [a["kind"] for a in told["alerts"]] == ["wait_slo", "failure"]
    unpriced = story(costs=[cost(TJ1, 300, None)])["cost"]
    assert unpriced["usd"] is None and unpriced["billableInstanceHours"] == round(600 / 3600, 3)


def test_a_stored_prediction_is_read_with_its_waits_and_its_error_once_started() -> None:
    prediction = StartPrediction(
        predicted_at=T0 + 60_000,
        p10=T0 + 300_000,
        p50=T0 + 500_000,
        p90=None,
        started_fraction=0.8,
        samples=100,
    )
    told = story(replace(PREEMPTED, prediction=prediction))["prediction"]
    assert (told["waitSecondsP10"], told["waitSecondsP50"], told["waitSecondsP90"]) == (300, 500, None)
    assert told["actualMinusP50Seconds"] == 100  # started at 600 s, p50 said 500 s
    assert story()["prediction"] is None


def test_now_is_the_clock_unless_a_recorded_time_is_later() -> None:
    assert observed_now([PREEMPTED], T0 / 1000 + 9999) == T0 / 1000 + 9999
    assert observed_now([PREEMPTED], 0) == (T0 + 2_000_000) / 1000
