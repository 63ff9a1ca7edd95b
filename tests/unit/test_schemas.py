"""Every sample and scenario event parses; bad events fail with the field named."""

from __future__ import annotations

import json

import pytest
from shareplane.domain.errors import InvalidInputError, UnknownEventError
from shareplane.domain.jobs.described_job import DescribedJob, JobAttempt
from shareplane.domain.jobs.lifecycle import JobObservation, JobStatus, ObservationKind
from shareplane.domain.jobs.training import TrainingJobObservation
from shareplane.schemas import parse_state_event
from shareplane.schemas.service_job import reconciled_observation

from tests.conftest import EVENTS, load_event, load_scenario, scenario_names

# Job state samples only: the S3 drop and schedule-tick samples have parsers (and tests) of their own.
SAMPLES = sorted(
    p.stem
    for p in EVENTS.glob("*.json")
    if json.loads(p.read_text())["source"] in ("aws.batch", "aws.sagemaker")
)


@pytest.mark.parametrize("name", SAMPLES, ids=lambda n: f"the {n} sample parses")
def test_every_sample_parses(name: str) -> None:
    assert isinstance(parse_state_event(load_event(name)), (JobObservation, TrainingJobObservation))


@pytest.mark.parametrize("name", scenario_names(), ids=lambda n: f"every event of the {n} scenario parses")
def test_every_scenario_event_parses(name: str) -> None:
    assert all(parse_state_event(event) for event in load_scenario(name))


def test_epoch_millis_as_strings_and_numbers_mean_the_same() -> None:
    event = load_event("sagemaker_training_job_state_change_failed_cuda_oom")
    as_numbers = json.loads(json.dumps(event))
    for key in ("CreationTime", "LastModifiedTime", "TrainingStartTime", "TrainingEndTime"):
        as_numbers["detail"][key] = int(event["detail"][key])
    assert parse_state_event(event) == parse_state_event(as_numbers)


def test_unknown_fields_are_tolerated() -> None:
    event = load_event("batch_service_job_state_change_succeeded")
    event["detail"]["someFieldAwsAddsNextYear"] = {"x": 1}
    event["brandNewEnvelopeField"] = True
    assert isinstance(parse_state_event(event), JobObservation)


def test_an_event_without_optional_fields_parses() -> None:
    event = load_event("batch_service_job_state_change_succeeded")
    detail = event["detail"]
    event["detail"] = {"jobArn": detail["jobArn"], "status": "RUNNABLE"}
    del event["account"]
    obs = parse_state_event(event)
    assert isinstance(obs, JobObservation) and obs.attempts is None and obs.created_at is None


def test_the_cuda_oom_reason_survives_parsing() -> None:
    obs = parse_state_event(load_event("sagemaker_training_job_state_change_failed_cuda_oom"))
    assert isinstance(obs, TrainingJobObservation)
    assert "CUDA out of memory" in (obs.failure_reason or "")
    assert obs.instance_type == "ml.p5.48xlarge" and obs.instance_count == 2


def test_preemption_events_are_annotations_of_the_preempted_job() -> None:
    started = parse_state_event(load_event("batch_service_job_preemption_started"))
    completed = parse_state_event(load_event("batch_service_job_preemption_completed"))
    assert isinstance(started, JobObservation) and isinstance(completed, JobObservation)
    assert started.kind is ObservationKind.PREEMPTION_STARTED and started.envelope_time_ms
    assert completed.status is JobStatus.RUNNABLE and completed.preemptions == 1
    assert started.job_arn == completed.job_arn


BAD = [
    pytest.param(
        {"detail-type": "EC2 Instance State-change Notification", "source": "aws.ec2"},
        UnknownEventError,
        "detail-type",
        id="an unknown detail-type is refused by name",
    ),
    pytest.param("not an object", InvalidInputError, "event", id="a non-object is refused"),
    pytest.param(
        {**load_event("batch_service_job_state_change_succeeded"), "detail": {"status": "RUNNABLE"}},
        InvalidInputError,
        "detail.jobArn",
        id="a missing jobArn names the field",
    ),
    pytest.param(
        {
            **load_event("batch_service_job_state_change_succeeded"),
            "detail": {"jobArn": "a", "status": "DANCING"},
        },
        InvalidInputError,
        "detail.status",
        id="an unknown status names the field",
    ),
]


@pytest.mark.parametrize(("event", "error", "field"), BAD)
def test_bad_events_name_the_field(event: object, error: type[Exception], field: str) -> None:
    with pytest.raises(error) as caught:
        parse_state_event(event)
    assert caught.value.field == field  # type: ignore[attr-defined]
    assert caught.value.fix  # type: ignore[attr-defined]


def test_a_reconciled_read_of_a_preempted_job_carries_when_its_attempt_ended() -> None:
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchrun0"
    started, stopped = 1_773_710_120_000, 1_773_713_660_000
    described = DescribedJob(
        job_arn="arn:aws:batch:us-east-1:123456789012:service-job/j1",
        job_id="j1",
        status="RUNNABLE",
        created_at=1_773_710_000_000,
        started_at=started,  # the preempted dispatch's, as Batch keeps it
        latest_training_job_arn=arn,
        preempted_attempts=1,
        recent_preempted_attempts=(JobAttempt(arn, started, stopped, "Cross-share preemption"),),
        has_preemption_summary=True,
    )
    observed = reconciled_observation(described)
    assert observed.kind is ObservationKind.RECONCILED
    # No envelope, a startedAt an hour old: the preempted attempt's stop is the evidence.
    assert (observed.attempt_time_ms, observed.at_ms) == (stopped, stopped)
