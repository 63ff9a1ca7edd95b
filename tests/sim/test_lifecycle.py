"""The SageMaker side and the retry rules: failures, capacity requeues, retries, limits, termination."""

from __future__ import annotations

import re

import pytest
from gpusim import Faults, texts

RETRY_INTERNAL = {
    "attempts": 3,
    "evaluateOnExit": [
        {"action": "RETRY", "onStatusReason": "Received status from SageMaker: InternalServerError*"},
        {"action": "EXIT", "onStatusReason": "*"},
    ],
}


def test_capacity_error_requeues_without_using_an_attempt_and_moves_scheduled_at(make_sim) -> None:
    sim = make_sim(faults=Faults(scripted={"j": ("capacity", "capacity", "ok")}))
    sim.env()
    sim.queue()
    job_id = sim.submit("j", retryStrategy={"attempts": 1})
    scheduled = []
    sim.model.subscribe(
        lambda e: (
            scheduled.append(e["detail"]["scheduledAt"])
            if e["detail-type"] == "Batch Service Job State Change" and e["detail"]["status"] == "SCHEDULED"
            else None
        )
    )
    # WHEN the first capacity error comes back THEN the job is dispatched again, no attempt used
    sim.run(until=31)
    job = sim.job(job_id)
    assert (job["status"], job["attempts"]) == ("SCHEDULED", [])
    sim.run()
    job = sim.job(job_id)
    assert job["status"] == "SUCCEEDED"
    assert len(job["attempts"]) == 1  # only the attempt that ran counts
    assert len(scheduled) == 3 and scheduled == sorted(set(scheduled))  # each dispatch moves it forward
    assert job["scheduledAt"] == scheduled[-1]
    requeues = [
        e["detail"]
        for e in sim.events
        if e["detail-type"] == "Batch Service Job State Change"
        and e["detail"]["status"] == "RUNNABLE"
        and "latestAttempt" in e["detail"]
    ]
    assert [d["statusReason"] for d in requeues] == [texts.CAPACITY_REQUEUE] * 2
    failed = sim.sagemaker.list_training_jobs(StatusEquals="Failed")["TrainingJobSummaries"]
    assert len(failed) == 2
    described = sim.sagemaker.describe_training_job(TrainingJobName=failed[0]["TrainingJobName"])
    assert described["FailureReason"] == (
        "CapacityError: Unable to provision requested ML compute capacity. "
        "Please retry using a different ML instance type."
    )


@pytest.mark.parametrize(
    ("script", "retry", "status", "attempts"),
    [
        (("internal", "ok"), RETRY_INTERNAL, "SUCCEEDED", 2),
        (("cuda_oom", "ok"), RETRY_INTERNAL, "FAILED", 1),
        (("internal", "internal", "internal", "ok"), RETRY_INTERNAL, "FAILED", 3),
        (("host_oom", "ok"), {"attempts": 2}, "SUCCEEDED", 2),
        (
            ("host_oom", "ok"),
            {"attempts": 2, "evaluateOnExit": [{"action": "EXIT", "onStatusReason": "*ClientError*"}]},
            "SUCCEEDED",
            2,
        ),
        (
            ("host_oom", "ok"),
            {"attempts": 2, "evaluateOnExit": [{"action": "exit", "onStatusReason": "Received*"}]},
            "FAILED",
            1,
        ),
        (("internal", "ok"), None, "FAILED", 1),
    ],
    ids=[
        "an InternalServerError matched by a RETRY rule is retried",
        "a CUDA OOM falls through to the catch-all EXIT rule",
        "retries stop when the attempts are used up",
        "with no rules a failure is retried while attempts remain",
        "a glob without a trailing star only matches the whole reason, so the job is retried",
        "the first matching rule wins and actions are case-insensitive",
        "without a retry strategy there is one attempt",
    ],
)
def test_evaluate_on_exit(make_sim, script, retry, status, attempts) -> None:
    sim = make_sim(faults=Faults(scripted={"j": script}))
    sim.env()
    sim.queue()
    extra = {"retryStrategy": retry} if retry else {}
    job_id = sim.submit("j", **extra)
    sim.run()
    job = sim.job(job_id)
    assert (job["status"], len(job["attempts"])) == (status, attempts)


@pytest.mark.parametrize(
    ("outcome", "reason"),
    [
        (
            "internal",
            "Received status from SageMaker: InternalServerError: We encountered an internal error. "
            "Please try again.",
        ),
        (
            "host_oom",
            "Received status from SageMaker: ClientError: Please use an instance type with more memory, "
            "or reduce the size of job data processed on an instance.",
        ),
    ],
    ids=["an internal error keeps its exact text", "a host OOM keeps its exact text"],
)
def test_failure_reasons_are_prefixed_exact_sagemaker_texts(make_sim, outcome, reason) -> None:
    sim = make_sim(faults=Faults(scripted={"j": (outcome,)}))
    sim.env()
    sim.queue()
    job_id = sim.submit("j")
    sim.run()
    assert sim.job(job_id)["statusReason"] == reason


def test_cuda_oom_shows_only_inside_the_algorithm_error(make_sim) -> None:
    sim = make_sim(faults=Faults(scripted={"j": ("cuda_oom",)}))
    sim.env()
    sim.queue()
    job_id = sim.submit("j", count=2)
    sim.run()
    reason = sim.job(job_id)["statusReason"]
    assert reason.startswith(
        "Received status from SageMaker: AlgorithmError: ExecuteUserScriptError:\nExitCode 1\n"
        'ErrorMessage "torch.OutOfMemoryError: CUDA out of memory.'
    )
    assert "--nnodes 2" in reason


def test_resource_limit_fails_at_once_with_no_attempt(make_sim) -> None:
    sim = make_sim(
        faults=Faults(scripted={"j": ("resource_limit",)}), account_instance_limits={"ml.p5.48xlarge": 10}
    )
    sim.env()
    sim.queue()
    job_id = sim.submit("j")
    sim.run()
    job = sim.job(job_id)
    assert job["status"] == "FAILED" and job["attempts"] == []
    assert job["statusReason"].startswith(
        "Received status from SageMaker: ResourceLimitExceeded: The account-level service limit "
        "'ml.p5.48xlarge for training job usage' is 10 Instances"
    )
    assert "latestAttempt" not in job


def test_training_job_names_and_sagemaker_statuses_follow_the_dispatch(make_sim) -> None:
    sim = make_sim()
    sim.env()
    sim.queue()
    job_id = sim.submit("llm7b-run42", duration=100)
    sim.run()
    arn = sim.job(job_id)["latestAttempt"]["serviceResourceId"]["value"]
    name = sim.sagemaker.list_training_jobs()["TrainingJobSummaries"][0]["TrainingJobName"]
    assert re.fullmatch(r"AWSBatchllm7b-run42[0-9a-f]{32}", name)
    assert arn.endswith(f":training-job/{name}")  # AWS's casing: IAM matches ARNs case-sensitively
    tj = sim.sagemaker.describe_training_job(TrainingJobName=arn.rsplit("/", 1)[1])
    assert [t["Status"] for t in tj["SecondaryStatusTransitions"]] == [
        "Pending",
        "Downloading",
        "Training",
        "Completed",
    ]
    assert (tj["TrainingJobStatus"], tj["SecondaryStatus"]) == ("Completed", "Completed")
    assert "FailureReason" not in tj


def test_spot_interruption_stays_inside_sagemaker(make_sim) -> None:
    sim = make_sim(faults=Faults(scripted={"j": ("spot",)}))
    sim.env()
    sim.queue()
    job_id = sim.submit("j", duration=1000)
    sim.run()
    assert [s for n, s in sim.batch_trace()] == ["RUNNABLE", "SCHEDULED", "STARTING", "RUNNING", "SUCCEEDED"]
    secondaries = [e["detail"]["SecondaryStatus"] for e in sim.events if e["source"] == "aws.sagemaker"]
    assert "Interrupted" in secondaries
    assert sim.job(job_id)["status"] == "SUCCEEDED"


def test_attempt_duration_timeout_ends_the_attempt(make_sim) -> None:
    sim = make_sim()
    sim.env()
    sim.queue()
    job_id = sim.submit("j", duration=10**5, timeoutConfig={"attemptDurationSeconds": 600})
    sim.run()
    job = sim.job(job_id)
    assert (job["status"], job["statusReason"]) == ("FAILED", "Job attempt duration exceeded timeout")
    assert job["stoppedAt"] - job["startedAt"] == 600_000


def test_job_state_time_limit_terminates_a_head_job_stuck_on_capacity(make_sim) -> None:
    sim = make_sim(faults=Faults(scripted={"stuck": ("capacity",) * 100}))
    sim.env()
    sim.queue(
        jobStateTimeLimitActions=[
            {
                "reason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
                "state": "RUNNABLE",
                "maxTimeSeconds": 600,
                "action": "TERMINATE",
            }
        ]
    )
    job_id = sim.submit("stuck")
    sim.run()
    job = sim.job(job_id)
    assert job["status"] == "FAILED"
    assert job["statusReason"] == (
        "Terminated by JobStateTimeLimit action due to reason: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
    )
    assert job["isTerminated"] is True
    assert 600_000 <= job["stoppedAt"] - job["createdAt"] < 700_000


def test_job_state_time_limit_acts_on_a_job_no_environment_can_hold(make_sim) -> None:
    sim = make_sim()
    sim.env()
    sim.queue(
        jobStateTimeLimitActions=[
            {
                "reason": "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE",
                "state": "RUNNABLE",
                "maxTimeSeconds": 900,
                "action": "TERMINATE",
            }
        ]
    )
    too_big = sim.submit("too-big", count=5)
    sim.run()
    job = sim.job(too_big)
    assert job["status"] == "FAILED"
    assert job["stoppedAt"] - job["createdAt"] == 900_000
    blocked = [e for e in sim.events if e["detail-type"] == "Batch Service Job Queue Blocked"]
    assert len(blocked) == 1 and blocked[0]["detail"]["statusReason"].startswith("MISCONFIGURATION:")


def test_a_job_waiting_behind_running_jobs_is_not_blocked(make_sim) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 1})
    sim.queue(
        jobStateTimeLimitActions=[
            {
                "reason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
                "state": "RUNNABLE",
                "maxTimeSeconds": 600,
                "action": "TERMINATE",
            }
        ]
    )
    sim.submit("long", duration=5000)
    waiting = sim.submit("waiting", duration=10)
    sim.run()
    assert sim.status(waiting) == "SUCCEEDED"


@pytest.mark.parametrize(
    ("when", "stopped_training"),
    [(1, False), (50, True)],
    ids=["terminating a RUNNABLE job fails it at once", "terminating a running job stops its training job"],
)
def test_terminate_is_final_and_never_retried(make_sim, when, stopped_training) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 1})
    sim.queue()
    sim.submit("first", duration=20)
    job_id = sim.submit("j", retryStrategy={"attempts": 5}, duration=1000)
    sim.run(until=when)
    sim.batch.terminate_service_job(jobId=job_id, reason="user asked")
    sim.run()
    job = sim.job(job_id)
    assert (job["status"], job["statusReason"], job["isTerminated"]) == ("FAILED", "user asked", True)
    assert len(job["attempts"]) == (1 if stopped_training else 0)
    stopped = sim.sagemaker.list_training_jobs(StatusEquals="Stopped")["TrainingJobSummaries"]
    assert len(stopped) == (1 if stopped_training else 0)


def test_stop_training_job_ends_the_attempt_through_the_retry_strategy(make_sim) -> None:
    sim = make_sim()
    sim.env()
    sim.queue()
    job_id = sim.submit("j", retryStrategy={"attempts": 2}, duration=1000)
    sim.run(until=100)
    name = sim.sagemaker.list_training_jobs()["TrainingJobSummaries"][0]["TrainingJobName"]
    sim.sagemaker.stop_training_job(TrainingJobName=name)
    sim.run()
    job = sim.job(job_id)
    assert job["status"] == "SUCCEEDED"
    assert job["attempts"][0]["statusReason"] == "Received status from SageMaker: Training job stopped"


def test_seeded_failure_rates_are_reproducible(make_sim) -> None:
    def outcome(seed: int) -> list[str]:
        sim = make_sim(seed=seed, faults=Faults(capacity=0.2, internal=0.1, cuda_oom=0.1))
        sim.env(limits={"NUM_INSTANCES": 8})
        sim.queue()
        ids = [sim.submit(f"j{i}", retryStrategy={"attempts": 2}, duration=100) for i in range(40)]
        sim.run()
        return [sim.status(j) for j in ids]

    first = outcome(7)
    assert first == outcome(7)
    assert "FAILED" in first and "SUCCEEDED" in first
