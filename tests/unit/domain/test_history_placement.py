"""History follows the evidence: detail times, then the envelope time as a lower bound, then lifecycle order.

AWS's own sample service-job events omit ``scheduledAt``
(https://docs.aws.amazon.com/batch/latest/userguide/service-job-events.html), and the envelope ``time``
has one-second precision (https://docs.aws.amazon.com/eventbridge/latest/ref/overiew-event-structure.html),
so a detail can carry no time for its own state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.jobs.lifecycle import (
    HistoryEntry,
    JobObservation,
    JobStatus,
    ObservationKind,
    decide,
    place_history,
)
from shareplane.schemas.parse import parse_state_event

from tests.conftest import load_event
from tests.properties import examples
from tests.streams import CAPACITY, JOB, detours, outcomes

CREATED = 1_773_690_900_000
TIME_FIELDS = ("scheduled_at", "started_at", "stopped_at", "attempt_time_ms")


@dataclass(frozen=True)
class Happened:
    """One state change as it really happened, and the observation its event gave."""

    true_ms: int
    dispatch: str | None
    obs: JobObservation


@st.composite
def lifecycles(draw: st.DrawFn) -> list[Happened]:
    """A job's real life (RUNNABLE, dispatches with detours, an outcome) with its full events."""
    path, outcome = draw(detours), draw(outcomes)
    gap = st.integers(min_value=1, max_value=120_000)
    now = CREATED
    current = JobObservation(job_arn=JOB, status=JobStatus.RUNNABLE, created_at=CREATED, attempts=0)
    lived = [Happened(now, None, current)]
    attempts = 0

    def happen(arn: str | None, **changes: object) -> None:
        nonlocal current, now
        now += draw(gap)
        current = replace(current, **changes)
        lived.append(Happened(now, arn, current))

    for number, detour in enumerate([*path, "finish"], start=1):
        arn = f"arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchrun{number:032x}"
        happen(arn, status=JobStatus.SCHEDULED, status_reason=None, latest_training_job_arn=arn)
        current = replace(current, scheduled_at=now)
        lived[-1] = Happened(now, arn, current)
        if detour == "capacity":
            happen(arn, status=JobStatus.RUNNABLE, status_reason=CAPACITY)
            continue
        happen(arn, status=JobStatus.STARTING)
        current = replace(current, started_at=now)
        lived[-1] = Happened(now, arn, current)
        happen(arn, status=JobStatus.RUNNING)  # its detail's startedAt is STARTING's time, as on AWS
        if detour == "finish":
            final = JobStatus.SUCCEEDED if outcome == "succeed" else JobStatus.FAILED
            happen(arn, status=final, attempts=attempts + 1, status_reason=final.value.lower())
            current = replace(current, stopped_at=now)
            lived[-1] = Happened(now, arn, current)
        else:
            attempts += 1
            happen(arn, status=JobStatus.RUNNABLE, attempts=attempts, status_reason="retry or preemption")
            # From now on the detail lists the ended attempt, stopped at this moment.
            current = replace(current, attempt_time_ms=now)
            lived[-1] = Happened(now, arn, current)
    return lived


@st.composite
def thin_evidence(draw: st.DrawFn, lived: list[Happened]) -> list[Happened]:
    """The same life with detail times dropped at random and the envelope time present or not."""
    out = []
    for happened in lived:
        dropped = draw(st.sets(st.sampled_from(TIME_FIELDS)), label="dropped detail times")
        obs = replace(happened.obs, **dict.fromkeys(dropped))
        if draw(st.booleans(), label="has an envelope"):
            obs = replace(obs, delivered_at_ms=happened.true_ms // 1000 * 1000)  # whole seconds, cut
        out.append(replace(happened, obs=obs))
    return out


def recorded(observations: list[JobObservation]) -> list[HistoryEntry]:
    """Fold observations as record_state does and return the placed history."""
    state, history = None, {}
    for obs in observations:
        transition = decide(state, obs)
        if transition.history is not None:
            history[transition.history.key] = transition.history
        state = transition.state
    return place_history(list(history.values()))


def own_time(obs: JobObservation) -> int | None:
    return obs.own_time_ms


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_history_follows_the_evidence_when_detail_times_are_dropped(data: st.DataObject) -> None:
    lived = data.draw(lifecycles(), label="life")
    seen = data.draw(thin_evidence(lived), label="events")
    by_digest = {h.obs.digest: h for h in seen}
    extra = data.draw(st.lists(st.sampled_from(seen), max_size=len(seen)), label="duplicates")
    delivery = data.draw(st.permutations(seen + extra), label="delivery order")
    placed = recorded([h.obs for h in delivery])
    assert [e.digest for e in placed] == [e.digest for e in recorded([h.obs for h in seen])], (
        "delivery order changed the history"
    )
    assert len(placed) == len(seen)
    for entry in placed:
        happened = by_digest[entry.digest]
        # never later than it happened: every piece of evidence is a lower bound
        assert entry.at <= happened.true_ms
        own = own_time(happened.obs)
        if own:
            assert entry.at == own  # a state's own detail time is exact
        for evidence in (happened.obs.delivered_at_ms, happened.obs.attempt_time_ms):
            if evidence is not None:
                assert entry.at >= evidence
    # within one dispatch, the history is the lifecycle order
    for dispatch in {h.dispatch for h in seen}:
        truth = [h.obs.digest for h in seen if h.dispatch == dispatch]
        shown = [e.digest for e in placed if by_digest[e.digest].dispatch == dispatch]
        assert shown == truth


def test_a_starting_event_with_no_newer_time_shows_after_the_scheduled_it_follows() -> None:
    # GIVEN AWS-sample-like details: no scheduledAt, no startedAt; both sent in the same second
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchrun0"
    runnable = JobObservation(job_arn=JOB, status=JobStatus.RUNNABLE, created_at=CREATED, attempts=0)
    scheduled = replace(
        runnable, status=JobStatus.SCHEDULED, latest_training_job_arn=arn, delivered_at_ms=CREATED + 5000
    )
    starting = replace(scheduled, status=JobStatus.STARTING)
    # WHEN STARTING arrives first
    placed = recorded([starting, scheduled, runnable])
    # THEN the history reads RUNNABLE, SCHEDULED, STARTING, and neither is placed at createdAt
    assert [e.status for e in placed] == [JobStatus.RUNNABLE, JobStatus.SCHEDULED, JobStatus.STARTING]
    assert [e.at for e in placed] == [CREATED, CREATED + 5000, CREATED + 5000]


def test_without_an_envelope_a_state_takes_the_time_of_the_state_it_follows() -> None:
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchrun0"
    scheduled = JobObservation(
        job_arn=JOB,
        status=JobStatus.SCHEDULED,
        created_at=CREATED,
        scheduled_at=CREATED + 9000,
        latest_training_job_arn=arn,
        attempts=0,
    )
    running = replace(scheduled, status=JobStatus.RUNNING, scheduled_at=None)  # reconciled: no envelope
    placed = recorded([running, scheduled])
    assert [(e.status, e.at) for e in placed] == [
        (JobStatus.SCHEDULED, CREATED + 9000),
        (JobStatus.RUNNING, CREATED + 9000),
    ]


def test_a_reconciled_requeue_shows_when_its_attempt_ended_not_when_its_dispatch_started() -> None:
    """The reconciler's read of a preempted job has no envelope time, and its ``startedAt`` is the
    preempted dispatch's; only the preempted attempt's ``stoppedAt`` says when it went back."""
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchrun0"
    started, preempted = CREATED + 60_000, CREATED + 3_600_000
    running = JobObservation(
        job_arn=JOB, status=JobStatus.RUNNING, created_at=CREATED, scheduled_at=CREATED + 5000,
        started_at=started, attempts=0, latest_training_job_arn=arn, delivered_at_ms=started + 30_000,
    )  # fmt: skip
    requeued = replace(
        running, status=JobStatus.RUNNABLE, kind=ObservationKind.RECONCILED, preemptions=1,
        delivered_at_ms=None, attempt_time_ms=preempted,
    )  # fmt: skip
    placed = recorded([requeued, running])
    assert [(e.status, e.at) for e in placed] == [
        (JobStatus.RUNNING, started + 30_000),
        (JobStatus.RUNNABLE, preempted),
    ]


def preemption_stream(reason: str, completed_delay_ms: int) -> list[dict[str, object]]:
    """A job running, preempted (``reason``; the completed event ``completed_delay_ms`` after the
    preempted attempt stopped, in the started event's second when 0, as the emulator sends them), then
    dispatched again. Batch's own RUNNABLE state change for the preemption is not among them."""
    arn = "arn:aws:batch:us-east-1:123456789012:service-job/preempted-1"
    first = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchmed" + "1" * 32
    second = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchmed" + "2" * 32
    started, preempted, again = CREATED + 60_000, CREATED + 3_600_000, CREATED + 3_900_000

    def envelope(detail_type: str, ms: int, detail: dict[str, object]) -> dict[str, object]:
        second_ms = ms - ms % 1000
        when = datetime.fromtimestamp(second_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            **load_event("batch_service_job_preemption_completed"),
            "id": f"{detail_type}-{ms}",
            "detail-type": detail_type,
            "time": when,
            "detail": detail,
        }

    def state(status: str, ms: int, training: str, **more: object) -> dict[str, object]:
        detail = {
            "jobArn": arn, "jobId": "preempted-1", "jobName": "med", "jobQueue": "q", "status": status,
            "createdAt": CREATED, "attempts": [], "serviceJobType": "SAGEMAKER_TRAINING",
            "latestAttempt": {"serviceResourceId": {"name": "TrainingJobArn", "value": training}},
            **more,
        }  # fmt: skip
        return envelope("Batch Service Job State Change", ms, detail)

    attempt = {
        "serviceResourceId": {"name": "TrainingJobArn", "value": first},
        "startedAt": started,
        "stoppedAt": preempted,
        "statusReason": reason,
    }
    summary = {"preemptedAttemptCount": 1, "recentPreemptedAttempts": [attempt]}
    return [
        state("RUNNING", started + 20_000, first, scheduledAt=started - 10_000, startedAt=started),
        envelope(
            "Batch Service Job Preemption Started",
            preempted,
            {
                "preemptedJobArn": arn,
                "status": "RUNNING",
                "statusReason": "PREEMPTION_IN_PROGRESS: " + reason,
            },
        ),
        envelope(
            "Batch Service Job Preemption Completed",
            preempted + completed_delay_ms,
            {"preemptedJobArn": arn, "status": "RUNNABLE", "preemptionSummary": summary},
        ),
        state("SCHEDULED", again, second, scheduledAt=again, preemptionSummary=summary),
    ]


@given(
    order=st.permutations(range(4)),
    reason=st.sampled_from(
        [
            "Cross-share preemption triggered to reclaim borrowed capacity",
            "In-share preemption triggered by a higher priority job",
            "preempted",
        ]
    ),
    completed_delay_ms=st.sampled_from([0, 1000, 30_000]),
)
@settings(max_examples=examples(100), deadline=None)
def test_a_preempted_job_reads_running_runnable_scheduled_with_the_return_dated_by_its_event(
    order: list[int], reason: str, completed_delay_ms: int
) -> None:
    # GIVEN a job's RUNNING, Preemption Started, Preemption Completed and next SCHEDULED, in any order
    stream = preemption_stream(reason, completed_delay_ms)
    observations = [parse_state_event(stream[i]) for i in order]
    # WHEN they are recorded
    history = recorded([obs for obs in observations if isinstance(obs, JobObservation)])
    # THEN the history reads RUNNING, RUNNING (preemption started), RUNNABLE, SCHEDULED: the completed
    # preemption is the job's return to RUNNABLE, dated by the event: its preempted attempt's stoppedAt
    assert [(e.status, e.kind) for e in history] == [
        (JobStatus.RUNNING, ObservationKind.STATE_CHANGE),
        (JobStatus.RUNNING, ObservationKind.PREEMPTION_STARTED),
        (JobStatus.RUNNABLE, ObservationKind.PREEMPTION_COMPLETED),
        (JobStatus.SCHEDULED, ObservationKind.STATE_CHANGE),
    ]
    assert history[2].at == CREATED + 3_600_000
