"""Generated job event streams that follow AWS Batch's service-job lifecycle, for property tests."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st
from shareplane.domain.jobs.lifecycle import JobObservation, JobStatus, ObservationKind

JOB = "arn:aws:batch:us-east-1:123456789012:service-job/6f1e0c1a-0000-4000-8000-000000000001"
CAPACITY = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Unable to provision requested compute resources"


def lifecycle(detours: list[str], outcome: str, created: int = 1_773_690_900_000) -> list[JobObservation]:
    """The in-order observations of one job: RUNNABLE, then dispatches with detours, then an outcome."""
    base = JobObservation(
        job_arn=JOB,
        status=JobStatus.RUNNABLE,
        job_id="6f1e0c1a",
        job_name="llm-run",
        job_queue="arn:aws:batch:us-east-1:123456789012:job-queue/gpu",
        share_identifier="ProdExp1",
        scheduling_priority=50,
        created_at=created,
        attempts=0,
    )
    events = [base]
    now, attempts, preemptions, dispatch = created, 0, 0, 0
    current = base

    def emit(**changes: object) -> None:
        nonlocal current
        current = replace(current, **changes)
        events.append(current)

    for detour in [*detours, "finish"]:
        dispatch += 1
        now += 60_000
        arn = f"arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchllm-run{dispatch:032x}"
        emit(
            status=JobStatus.SCHEDULED,
            status_reason=None,
            scheduled_at=now,
            started_at=None,
            latest_training_job_arn=arn,
            kind=ObservationKind.STATE_CHANGE,
        )
        if detour == "capacity":
            now += 30_000
            emit(status=JobStatus.RUNNABLE, status_reason=CAPACITY)
            continue
        now += 60_000
        emit(status=JobStatus.STARTING, started_at=now)
        now += 30_000
        emit(status=JobStatus.RUNNING)
        now += 600_000
        if detour == "preempt":
            preemptions += 1
            # The preemption-started detail carries only the job ARN, a status and a reason.
            events.append(
                JobObservation(
                    job_arn=JOB,
                    status=JobStatus.RUNNING,
                    kind=ObservationKind.PREEMPTION_STARTED,
                    status_reason="PREEMPTION_IN_PROGRESS: Cross-share preemption",
                    envelope_time_ms=now - 1000,
                )
            )
            emit(
                status=JobStatus.RUNNABLE,
                preemptions=preemptions,
                stopped_at=now,
                status_reason="Cross-share preemption triggered to reclaim borrowed capacity",
            )
        elif detour == "retry":
            attempts += 1
            emit(
                status=JobStatus.RUNNABLE,
                attempts=attempts,
                stopped_at=now,
                status_reason="Received status from SageMaker: InternalServerError: internal error",
            )
        else:
            attempts += 1
            final = JobStatus.SUCCEEDED if outcome == "succeed" else JobStatus.FAILED
            emit(status=final, attempts=attempts, stopped_at=now, status_reason=f"{final.value.lower()}")
    return events


detours = st.lists(st.sampled_from(["capacity", "preempt", "retry"]), max_size=4)
outcomes = st.sampled_from(["succeed", "fail"])
