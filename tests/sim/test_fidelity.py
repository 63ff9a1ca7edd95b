"""The emulator against AWS's documented rules: one table per rule, each quoting the page it follows."""

from __future__ import annotations

import json
import re

import pytest
from gpusim import ApiError, Faults
from gpusim.api import _service_model

from tests.sim.conftest import G5, payload

SE_MAX = "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE"
QUOTA_LIMIT = "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED"
CAPACITY = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
TERMINATED = "Terminated by JobStateTimeLimit action due to reason: "


def time_limit(reason: str, seconds: int = 600) -> list[dict]:
    return [{"reason": reason, "state": "RUNNABLE", "maxTimeSeconds": seconds, "action": "TERMINATE"}]


def blocked_reasons(sim) -> list[str]:
    return [
        e["detail"]["statusReason"]
        for e in sim.events
        if e["detail-type"] == "Batch Service Job Queue Blocked"
    ]


def quota_queue(sim, env_limit: int, sharing: dict, share_limit: int, **queue: object) -> None:
    sim.env(limits={G5: env_limit})
    arn = sim.batch.create_scheduling_policy(
        name="qsp", quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"}
    )["arn"]
    sim.queue("qq", schedulingPolicyArn=arn, **queue)
    sim.batch.create_quota_share(
        quotaShareName="QS1",
        jobQueue="qq",
        capacityLimits=[{"maxCapacity": share_limit, "capacityUnit": G5}],
        resourceSharingConfiguration=sharing,
        preemptionConfiguration={"inSharePreemption": "DISABLED"},
    )


# https://docs.aws.amazon.com/batch/latest/userguide/sm_job_stuck_in_runnable_misconfiguration.html
# "statusReason message while the job is stuck: MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE -
# Service environment(s) associated with the job queue cannot meet the capacity requirement of the job."
# "statusReason message after the job is terminated by jobStateTimeLimitActions: Terminated by
# JobStateTimeLimit action due to reason: MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE"
@pytest.mark.parametrize(
    ("limits", "instance_type", "count", "blocked"),
    [
        ({"NUM_INSTANCES": 10}, "ml.p5.48xlarge", 11, True),
        ({"NUM_INSTANCES": 10}, "ml.p5.48xlarge", 10, False),
    ],
    ids=[
        "FIFO, NUM_INSTANCES 10: a job requesting 11 instances is a misconfiguration",
        "FIFO, NUM_INSTANCES 10: a job requesting 10 instances runs",
    ],
)
def test_a_job_no_service_environment_can_hold_is_blocked_and_the_time_limit_ends_it(
    make_sim, limits, instance_type, count, blocked
) -> None:
    sim = make_sim()
    sim.env(limits=limits)
    sim.queue(jobStateTimeLimitActions=time_limit(SE_MAX))
    job_id = sim.submit("big", count=count, instance_type=instance_type, duration=100)
    sim.run()
    job = sim.job(job_id)
    if blocked:
        assert blocked_reasons(sim) == [
            SE_MAX + " - Service environment(s) associated with the job queue cannot meet the capacity "
            "requirement of the job."
        ]
        assert (job["status"], job["statusReason"], job["isTerminated"]) == (
            "FAILED",
            TERMINATED + SE_MAX,
            True,
        )
        assert job["stoppedAt"] - job["createdAt"] == 600_000
    else:
        assert (blocked_reasons(sim), job["status"]) == ([], "SUCCEEDED")


# Same page, quota management row: "Job requests more of an instance type than maxCapacity for that type."
def test_in_quota_mode_the_service_environment_limit_is_per_instance_type(make_sim) -> None:
    sim = make_sim()
    quota_queue(sim, 4, {"strategy": "LEND_AND_BORROW"}, 4, jobStateTimeLimitActions=time_limit(SE_MAX))
    job_id = sim.submit("big", queue="qq", quotaShareName="QS1", count=5, instance_type=G5)
    sim.run()
    assert blocked_reasons(sim)[0].startswith(SE_MAX + " - ")
    assert sim.job(job_id)["statusReason"] == TERMINATED + SE_MAX


# Same page, "Quota share limits exceeded": "reason used for jobStateTimeLimitActions:
# MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED"; "statusReason message after the job is terminated
# by jobStateTimeLimitActions: Terminated by JobStateTimeLimit action due to reason:
# MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED". The borrow limit is "a percentage of the quota
# share's configured CapacityLimits" (API_QuotaShareResourceSharingConfiguration.html).
@pytest.mark.parametrize(
    ("sharing", "count", "blocked"),
    [
        ({"strategy": "RESERVE"}, 3, True),
        ({"strategy": "LEND"}, 3, True),
        ({"strategy": "RESERVE"}, 2, False),
        ({"strategy": "LEND_AND_BORROW", "borrowLimit": 50}, 3, False),
        ({"strategy": "LEND_AND_BORROW", "borrowLimit": 50}, 4, True),
        ({"strategy": "LEND_AND_BORROW"}, 8, False),
    ],
    ids=[
        "RESERVE, limit 2: a 3-instance job exceeds the share",
        "LEND, limit 2: lending gives no borrowing, a 3-instance job exceeds the share",
        "RESERVE, limit 2: a 2-instance job runs",
        "LEND_AND_BORROW 50 percent of 2: a 3-instance job may borrow one",
        "LEND_AND_BORROW 50 percent of 2: a 4-instance job exceeds limit plus borrow",
        "LEND_AND_BORROW unlimited (-1 default): a job as large as the environment runs",
    ],
)
def test_a_job_larger_than_its_quota_share_plus_borrowing_is_blocked_and_terminated(
    make_sim, sharing, count, blocked
) -> None:
    sim = make_sim()
    quota_queue(sim, 8, sharing, 2, jobStateTimeLimitActions=time_limit(QUOTA_LIMIT))
    job_id = sim.submit("j", queue="qq", quotaShareName="QS1", count=count, instance_type=G5, duration=100)
    sim.run()
    job = sim.job(job_id)
    if blocked:
        assert [r.split(" - ")[0] for r in blocked_reasons(sim)] == [QUOTA_LIMIT]
        assert (job["status"], job["statusReason"]) == ("FAILED", TERMINATED + QUOTA_LIMIT)
    else:
        assert (blocked_reasons(sim), job["status"]) == ([], "SUCCEEDED")


# https://docs.aws.amazon.com/batch/latest/userguide/sm_job_stuck_in_runnable_capacity.html
# "the time the corresponding AWS Batch job spent in SCHEDULED between job submission and failure
# accumulates between job submissions for comparison against maxTimeSeconds."
@pytest.mark.parametrize(
    ("wait_before", "failures", "expected_dispatches"),
    [(0, 100, 20), (5000, 100, 20), (0, 19, 20), (0, 5, 6)],
    ids=[
        "30 s in SCHEDULED per capacity failure: the 600 s limit ends the job at the 20th failure",
        "5000 s waiting RUNNABLE behind another job do not count toward the limit",
        "a job whose 20th dispatch succeeds is never terminated",
        "five capacity failures (150 s in SCHEDULED) stay under the limit",
    ],
)
def test_the_capacity_time_limit_counts_only_time_in_scheduled(
    make_sim, wait_before, failures, expected_dispatches
) -> None:
    sim = make_sim(faults=Faults(scripted={"stuck": ("capacity",) * failures}))
    sim.env(limits={"NUM_INSTANCES": 1})
    sim.queue(jobStateTimeLimitActions=time_limit(CAPACITY))
    if wait_before:
        sim.submit("blocker", duration=wait_before - 30)  # FAST timings: 30 s from dispatch to RUNNING
    job_id = sim.submit("stuck", duration=100)
    sim.run()
    job = sim.job(job_id)
    dispatches = [s for n, s in sim.batch_trace() if n == "stuck" and s == "SCHEDULED"]
    assert len(dispatches) == expected_dispatches
    if failures >= 20:
        assert (job["status"], job["statusReason"]) == ("FAILED", TERMINATED + CAPACITY)
    else:
        assert job["status"] == "SUCCEEDED"


# https://docs.aws.amazon.com/batch/latest/userguide/service-job-events.html (sample): the training
# job is "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchmy-training-job88b6...", and
# DescribeTrainingJob takes the TrainingJobName
# (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeTrainingJob.html).
def test_training_job_arns_keep_aws_casing_and_the_name_from_an_arn_describes_the_job(make_sim) -> None:
    sim = make_sim()
    sim.env()
    sim.queue()
    job_id = sim.submit("my-training-job", duration=100)
    sim.run()
    arn = sim.job(job_id)["latestAttempt"]["serviceResourceId"]["value"]
    assert re.fullmatch(
        r"arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchmy-training-job[0-9a-f]{32}", arn
    )
    described = sim.sagemaker.describe_training_job(TrainingJobName=arn.rsplit("/", 1)[1])
    assert described["TrainingJobArn"] == arn


# https://docs.aws.amazon.com/batch/latest/userguide/fair-share-scheduling.html
# "If a share identifier has jobs in a SUBMITTED, PENDING, RUNNABLE, STARTING, or RUNNING state, it's
# considered an active share identifier. After the period of time for decay expires, a share
# identifier is considered inactive." "The reserved ratio is (computeReservation/100)^ActiveFairShares"
@pytest.mark.parametrize(
    ("b_arrives", "active_then", "b_holds"),
    [(700, 2, 6), (1700, 1, 4)],
    ids=[
        "A finished 100 s before B arrived, inside its 600 s decay: two active shares, 25 percent reserved",
        "A finished 1100 s before B arrived, past its decay: one active share, 50 percent reserved",
    ],
)
def test_a_share_stays_active_until_its_decay_window_passes(
    make_sim, b_arrives, active_then, b_holds
) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 8})
    sim.fair_queue(computeReservation=50, shareDecaySeconds=600)
    sim.submit("a", shareIdentifier="A", duration=570)  # FAST timings: runs until t=600
    sim.run(until=b_arrives)
    for i in range(8):
        sim.submit(f"b{i}", shareIdentifier="B", duration=10**6)
    sim.run(until=b_arrives + 1)
    util = sim.batch.get_job_queue_snapshot(jobQueue="q")["queueUtilization"]["fairshareUtilization"]
    assert util["activeShareCount"] == active_then
    held = sum(1 for j in sim.model.jobs.values() if j.share == "B" and j.status in ("SCHEDULED", "STARTING"))
    assert held == b_holds


# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTrainingJob.html: TrainingJobName
# "Length Constraints: Minimum length of 1. Maximum length of 63." Batch names the training job
# AWSBatch<TrainingJobName><32 hex> (service-job-events.html sample), which leaves 23 characters.
@pytest.mark.parametrize(
    ("name", "status"),
    [("n" * 23, "SUCCEEDED"), ("n" * 24, "FAILED")],
    ids=["a 23-character name makes a 63-character training job name", "a 24-character name is one too many"],
)
def test_generated_training_job_names_respect_the_63_character_limit(make_sim, name, status) -> None:
    sim = make_sim()
    sim.env()
    sim.queue()
    job_id = sim.submit(name, duration=100)
    sim.run()
    job = sim.job(job_id)
    assert job["status"] == status
    if status == "FAILED":
        assert job["statusReason"].startswith("Received status from SageMaker: ValidationException: ")
        assert "Member must have length less than or equal to 63" in job["statusReason"]
        assert sim.model.training_jobs == {}
    else:
        assert [len(n) for n in sim.model.training_jobs] == [63]


# https://docs.aws.amazon.com/batch/latest/userguide/service-job-payload.html: serviceRequestPayload
# "is a JSON-encoded string that contains the complete request that would normally be sent directly
# to the target service"; SageMaker, not Batch, judges it when the job is dispatched.
@pytest.mark.parametrize(
    ("body", "reason_part"),
    [
        ("{not json", "serviceRequestPayload is not valid JSON"),
        (json.dumps([1, 2]), "serviceRequestPayload is not a JSON object"),
        (
            json.dumps({k: v for k, v in json.loads(payload("x")).items() if k != "RoleArn"}),
            'Missing required parameter in input: "RoleArn"',
        ),
    ],
    ids=[
        "a payload that is not JSON is queued, then fails",
        "a JSON array is queued, then fails",
        "a payload without RoleArn is queued, then fails with the CreateTrainingJob check",
    ],
)
def test_submit_passes_the_payload_through_and_a_bad_one_fails_later(make_sim, body, reason_part) -> None:
    sim = make_sim()
    sim.env()
    sim.queue()
    job_id = sim.batch.submit_service_job(
        jobName="x", jobQueue="q", serviceJobType="SAGEMAKER_TRAINING", serviceRequestPayload=body
    )["jobId"]
    assert sim.job(job_id)["serviceRequestPayload"] == body
    sim.run()
    job = sim.job(job_id)
    assert job["status"] == "FAILED" and job["attempts"] == []
    assert job["statusReason"].startswith("Received status from SageMaker: ValidationException: ")
    assert reason_part in job["statusReason"]


# https://docs.aws.amazon.com/batch/latest/APIReference/API_DeleteQuotaShare.html
# "You must first disable submissions for the share by updating the state to DISABLED using the
# UpdateQuotaShare operation."
@pytest.mark.parametrize(
    ("state", "deleted"),
    [("ENABLED", False), ("DISABLED", True)],
    ids=["an enabled share is kept", "a disabled one goes"],
)
def test_delete_quota_share_needs_the_share_disabled_first(make_sim, state, deleted) -> None:
    sim = make_sim()
    quota_queue(sim, 4, {"strategy": "RESERVE"}, 2)
    arn = sim.batch.list_quota_shares(jobQueue="qq")["quotaShares"][0]["quotaShareArn"]
    sim.batch.update_quota_share(quotaShareArn=arn, state=state)
    if deleted:
        sim.batch.delete_quota_share(quotaShareArn=arn)
    else:
        with pytest.raises(ApiError) as err:
            sim.batch.delete_quota_share(quotaShareArn=arn)
        assert (err.value.code, "DISABLED" in err.value.message) == ("ClientException", True)
    assert len(sim.batch.list_quota_shares(jobQueue="qq")["quotaShares"]) == (0 if deleted else 1)


# https://docs.aws.amazon.com/batch/latest/APIReference/API_ListServiceJobs.html: "The results are
# sorted by the createdAt field, with the most recent jobs being first."
# https://docs.aws.amazon.com/batch/latest/APIReference/API_ServiceJobSummary.html: jobId, jobName and
# serviceJobType are required.
@pytest.mark.parametrize(
    "request_",
    [{"jobQueue": "q", "jobStatus": "RUNNABLE"}, {"filters": [{"name": "JOB_NAME", "values": ["j*"]}]}],
    ids=["by status", "by name filter"],
)
def test_list_service_jobs_returns_newest_first_with_the_required_members(make_sim, request_) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 1})
    sim.queue()
    sim.submit("blocker", duration=10**6)
    ids = []
    for i in range(3):
        ids.append(sim.submit(f"j{i}"))
        sim.run(until=i + 1)
    summaries = sim.batch.list_service_jobs(**request_)["jobSummaryList"]
    assert [s["jobId"] for s in summaries] == ids[::-1]
    members = set(_service_model("batch").shape_for("ServiceJobSummary").members)
    for summary in summaries:
        assert {"jobId", "jobName", "serviceJobType"} <= set(summary) <= members


# https://docs.aws.amazon.com/batch/latest/APIReference/API_ServiceJobCapacityUsageDetail.html and
# API_ServiceJobCapacityUsageSummary.html: "capacityUnit: The unit of measure for the service job capacity
# usage. For service jobs, this is the instance type." API_QueueSnapshotCapacityUsage.html: "For service
# jobs, this is the instance type." Whatever unit the service environment limits (NUM_INSTANCES here).
@pytest.mark.parametrize(
    "where",
    ["DescribeServiceJob", "ListServiceJobs", "the state-change event", "GetJobQueueSnapshot"],
    ids=lambda where: f"{where} counts a service job's capacity in its instance type",
)
def test_capacity_usage_names_the_instance_type_in_a_num_instances_environment(make_sim, where) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 4})
    sim.fair_queue()
    job_id = sim.submit("j", shareIdentifier="A", count=2, instance_type=G5, duration=10**4)
    sim.run(until=100)
    if where == "DescribeServiceJob":
        usage = sim.job(job_id)["capacityUsage"]
    elif where == "ListServiceJobs":
        (summary,) = sim.batch.list_service_jobs(jobQueue="q", jobStatus="RUNNING")["jobSummaryList"]
        usage = summary["capacityUsage"]
    elif where == "the state-change event":
        usage = [e for e in sim.events if e["detail-type"] == "Batch Service Job State Change"][-1]["detail"][
            "capacityUsage"
        ]
    else:
        util = sim.batch.get_job_queue_snapshot(jobQueue="q")["queueUtilization"]
        usage = util["fairshareUtilization"]["topCapacityUtilization"][0]["capacityUsage"]
        assert util["totalCapacityUsage"] == usage
    assert usage == [{"capacityUnit": G5, "quantity": 2.0}]


# https://docs.aws.amazon.com/batch/latest/userguide/batch-service-job-queue-blocked-events.html: the
# example event's "resources" holds the service job's ARN alone (the older Batch Job Queue Blocked event
# of batch-job-queue-blocked-events.html lists the queue too).
def test_the_queue_blocked_event_lists_only_the_service_job_in_its_resources(make_sim) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 1})
    sim.queue(jobStateTimeLimitActions=time_limit(SE_MAX))
    job_id = sim.submit("big", count=2, duration=100)
    sim.run()
    (event,) = [e for e in sim.events if e["detail-type"] == "Batch Service Job Queue Blocked"]
    assert event["resources"] == [sim.job(job_id)["jobArn"]]
