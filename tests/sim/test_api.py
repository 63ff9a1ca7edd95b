"""The Batch and SageMaker facades: every operation, and the errors AWS would return."""

from __future__ import annotations

import json

import pytest
from gpusim import ApiError

G5 = "ml.g5.xlarge"
P5 = "ml.p5.48xlarge"


def quota_setup(sim) -> str:
    sim.env("qse", limits={G5: 2})
    arn = sim.batch.create_scheduling_policy(
        name="qsp", quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"}
    )["arn"]
    sim.queue("qq", env="qse", schedulingPolicyArn=arn)
    return sim.batch.create_quota_share(
        quotaShareName="QS1",
        jobQueue="qq",
        capacityLimits=[{"maxCapacity": 1, "capacityUnit": G5}],
        resourceSharingConfiguration={"strategy": "LEND_AND_BORROW", "borrowLimit": 100},
        preemptionConfiguration={"inSharePreemption": "ENABLED"},
    )["quotaShareArn"]


def test_service_environment_crud(make_sim) -> None:
    sim = make_sim()
    sim.env("a")
    desc = sim.batch.describe_service_environments(serviceEnvironments=["a"])["serviceEnvironments"][0]
    assert desc["capacityLimits"] == [{"maxCapacity": 4, "capacityUnit": "NUM_INSTANCES"}]
    assert (desc["state"], desc["status"]) == ("ENABLED", "VALID")
    sim.batch.update_service_environment(
        serviceEnvironment=desc["serviceEnvironmentArn"],
        state="DISABLED",
        capacityLimits=[{"maxCapacity": 9, "capacityUnit": "NUM_INSTANCES"}],
    )
    assert (
        sim.batch.describe_service_environments()["serviceEnvironments"][0]["capacityLimits"][0][
            "maxCapacity"
        ]
        == 9
    )
    sim.batch.delete_service_environment(serviceEnvironment="a")
    assert sim.batch.describe_service_environments()["serviceEnvironments"] == []


def test_scheduling_policy_crud(make_sim) -> None:
    sim = make_sim()
    arn = sim.batch.create_scheduling_policy(
        name="fs",
        fairsharePolicy={
            "shareDecaySeconds": 0,
            "shareDistribution": [{"shareIdentifier": "A", "weightFactor": 2}],
        },
    )["arn"]
    assert sim.batch.list_scheduling_policies()["schedulingPolicies"] == [{"arn": arn}]
    sim.batch.update_scheduling_policy(arn=arn, fairsharePolicy={"computeReservation": 10})
    desc = sim.batch.describe_scheduling_policies(arns=[arn])["schedulingPolicies"][0]
    assert desc["fairsharePolicy"] == {"computeReservation": 10}
    sim.batch.delete_scheduling_policy(arn=arn)
    assert sim.batch.describe_scheduling_policies(arns=[arn])["schedulingPolicies"] == []


def test_job_queue_crud(make_sim) -> None:
    sim = make_sim()
    sim.env()
    sim.queue("q", priority=3)
    desc = sim.batch.describe_job_queues(jobQueues=["q"])["jobQueues"][0]
    assert (desc["priority"], desc["jobQueueType"], desc["computeEnvironmentOrder"]) == (
        3,
        "SAGEMAKER_TRAINING",
        [],
    )
    sim.batch.update_job_queue(jobQueue="q", priority=7, state="DISABLED")
    assert sim.batch.describe_job_queues()["jobQueues"][0]["priority"] == 7
    sim.batch.delete_job_queue(jobQueue="q")
    assert sim.batch.describe_job_queues()["jobQueues"] == []


def test_quota_share_crud(make_sim) -> None:
    sim = make_sim()
    arn = quota_setup(sim)
    assert arn == "arn:aws:batch:us-east-1:123456789012:job-queue/qq/quota-share/QS1"
    desc = sim.batch.describe_quota_share(quotaShareArn=arn)
    assert desc["resourceSharingConfiguration"] == {"strategy": "LEND_AND_BORROW", "borrowLimit": 100}
    sim.batch.update_quota_share(quotaShareArn=arn, state="DISABLED")
    listed = sim.batch.list_quota_shares(jobQueue="qq")["quotaShares"]
    assert [s["state"] for s in listed] == ["DISABLED"]
    sim.batch.delete_quota_share(quotaShareArn=arn)
    assert sim.batch.list_quota_shares(jobQueue="qq")["quotaShares"] == []


def test_submit_describe_list_update_terminate(make_sim) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 1})
    sim.fair_queue()
    a = sim.submit("alpha", shareIdentifier="A", duration=500, tags={"team": "nlp"})
    b = sim.submit("beta", shareIdentifier="B", duration=500)
    sim.run(until=100)
    desc = sim.job(a)
    assert json.loads(desc["serviceRequestPayload"])["TrainingJobName"] == "alpha"
    assert desc["tags"]["team"] == "nlp"
    assert desc["capacityUsage"] == [{"capacityUnit": P5, "quantity": 1.0}]
    assert [j["jobName"] for j in sim.batch.list_service_jobs(jobQueue="q")["jobSummaryList"]] == ["alpha"]
    runnable = sim.batch.list_service_jobs(jobQueue="q", jobStatus="RUNNABLE")["jobSummaryList"]
    assert [j["jobName"] for j in runnable] == ["beta"]
    by_name = sim.batch.list_service_jobs(filters=[{"name": "JOB_NAME", "values": ["BET*"]}])[
        "jobSummaryList"
    ]
    assert [j["jobId"] for j in by_name] == [b]
    by_share = sim.batch.list_service_jobs(
        filters=[{"name": "SHARE_IDENTIFIER", "values": ["B"]}], jobStatus="RUNNABLE"
    )
    assert [j["jobId"] for j in by_share["jobSummaryList"]] == [b]
    created = sim.job(a)["createdAt"]
    after = sim.batch.list_service_jobs(filters=[{"name": "AFTER_CREATED_AT", "values": [str(created - 1)]}])
    assert len(after["jobSummaryList"]) == 2
    page = sim.batch.list_service_jobs(filters=[{"name": "JOB_NAME", "values": ["*"]}], maxResults=1)
    assert len(page["jobSummaryList"]) == 1 and "nextToken" in page
    rest = sim.batch.list_service_jobs(
        filters=[{"name": "JOB_NAME", "values": ["*"]}], nextToken=page["nextToken"]
    )
    assert len(rest["jobSummaryList"]) == 1 and "nextToken" not in rest
    assert sim.batch.update_service_job(jobId=b, schedulingPriority=9)["jobId"] == b
    out = sim.batch.terminate_service_jobs(jobs=[a, "missing"], reason="done")
    assert out == {"successful": [a, "missing"], "errors": []}
    assert sim.job(a)["isTerminated"] is True


def test_a_client_token_makes_one_job_and_a_repeat_is_rejected(make_sim) -> None:
    # https://docs.aws.amazon.com/batch/latest/APIReference/API_SubmitServiceJob.html: two requests with
    # identical payloads and clientTokens "are considered the same request and the second request is
    # rejected".
    sim = make_sim()
    sim.env()
    sim.queue()
    sim.submit("j", clientToken="tok-1")
    for name in ("j", "other"):  # the identical repeat, and a different request under the same token
        with pytest.raises(ApiError) as err:
            sim.submit(name, clientToken="tok-1")
        assert (err.value.status, err.value.code) == (400, "ClientException")
    assert len(sim.model.jobs) == 1


def test_the_repeat_rule_is_switchable_to_answering_with_the_first_job(make_sim) -> None:
    sim = make_sim()
    sim.batch.repeat_token_returns_job = True
    sim.env()
    sim.queue()
    first = sim.submit("j", clientToken="tok-1")
    assert sim.submit("j", clientToken="tok-1") == first and len(sim.model.jobs) == 1


def test_get_job_queue_snapshot(make_sim) -> None:
    sim = make_sim()
    arn = quota_setup(sim)
    ids = [
        sim.submit(f"j{i}", queue="qq", quotaShareName="QS1", instance_type=G5, duration=10**4)
        for i in range(3)
    ]
    sim.run(until=10)
    snap = sim.batch.get_job_queue_snapshot(jobQueue="qq")
    assert [j["jobArn"] for j in snap["frontOfQueue"]["jobs"]] == [sim.job(ids[2])["jobArn"]]
    assert list(snap["frontOfQuotaShares"]["quotaShares"]) == ["QS1"]
    assert snap["queueUtilization"]["totalCapacityUsage"] == [{"capacityUnit": G5, "quantity": 2.0}]
    top = snap["queueUtilization"]["quotaShareUtilization"]["topCapacityUtilization"]
    assert top == [{"quotaShareName": "QS1", "capacityUsage": [{"capacityUnit": G5, "quantity": 2.0}]}]
    assert arn.endswith("QS1")


def test_fair_share_snapshot_counts_active_shares(make_sim) -> None:
    sim = make_sim()
    sim.env(limits={"NUM_INSTANCES": 1})
    sim.fair_queue()
    for share in "AB":
        sim.submit(f"{share}1", shareIdentifier=share)
    sim.run(until=1)
    util = sim.batch.get_job_queue_snapshot(jobQueue="q")["queueUtilization"]["fairshareUtilization"]
    assert util["activeShareCount"] == 2
    assert util["topCapacityUtilization"][0]["capacityUsage"][0]["quantity"] == 1.0


def test_call_dispatches_wire_operation_names(make_sim) -> None:
    sim = make_sim()
    out = sim.batch.call(
        "CreateServiceEnvironment",
        {
            "serviceEnvironmentName": "x",
            "serviceEnvironmentType": "SAGEMAKER_TRAINING",
            "capacityLimits": [{"maxCapacity": 1, "capacityUnit": "NUM_INSTANCES"}],
        },
    )
    assert out["serviceEnvironmentArn"].endswith(":service-environment/x")
    with pytest.raises(ApiError) as err:
        sim.batch.call("SubmitJob", {})
    assert err.value.code == "UnknownOperationException"


GOOD = {
    "AlgorithmSpecification": {"TrainingImage": "t:1", "TrainingInputMode": "File"},
    "RoleArn": "arn:aws:iam::123456789012:role/r",
    "OutputDataConfig": {"S3OutputPath": "s3://artifacts/"},
    "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
    "ResourceConfig": {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 1, "VolumeSizeInGB": 100},
}


@pytest.mark.parametrize(
    ("queue", "changes", "needle"),
    [
        ("fs", {}, "shareIdentifier is required"),
        ("fifo", {"shareIdentifier": "A"}, "shareIdentifier is only allowed"),
        ("fifo", {"quotaShareName": "QS1"}, "quotaShareName is only allowed"),
        ("qq", {}, "quotaShareName is required"),
        ("qq", {"quotaShareName": "nope"}, "quotaShareName nope does not exist"),
        ("fifo", {"schedulingPriority": 10000}, "schedulingPriority must be 0..9999"),
        ("fifo", {"retryStrategy": {"attempts": 11}}, "attempts must be 1..10"),
        (
            "fifo",
            {
                "retryStrategy": {
                    "attempts": 2,
                    "evaluateOnExit": [{"action": "MAYBE", "onStatusReason": "*"}],
                }
            },
            "RETRY or EXIT",
        ),
        ("nowhere", {}, "jobQueue nowhere does not exist"),
        ("fifo", {"jobName": 5}, "Invalid type for parameter jobName"),
        ("fifo", {"serviceJobType": "OTHER"}, "SAGEMAKER_TRAINING"),
    ],
    ids=[
        "a fair-share queue refuses a job without shareIdentifier",
        "a FIFO queue refuses a shareIdentifier",
        "a FIFO queue refuses a quotaShareName",
        "a quota-share queue refuses a job without quotaShareName",
        "an unknown quota share is refused",
        "a priority over 9999 is refused",
        "more than 10 attempts are refused",
        "an unknown evaluateOnExit action is refused",
        "an unknown queue is refused",
        "a wrongly typed field fails botocore's shape check",
        "a service job type other than SAGEMAKER_TRAINING is refused",
    ],
)
def test_submit_validation(make_sim, queue, changes, needle) -> None:
    sim = make_sim()
    sim.env()
    sim.queue("fifo")
    sim.fair_queue("fs")
    quota_setup(sim)
    request = {
        "jobName": "j",
        "jobQueue": queue,
        "serviceJobType": "SAGEMAKER_TRAINING",
        "serviceRequestPayload": json.dumps(GOOD),
        **changes,
    }
    with pytest.raises(ApiError) as err:
        sim.batch.submit_service_job(**request)
    assert (err.value.status, err.value.code) == (400, "ClientException")
    assert needle in err.value.message


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (
            lambda b: b.create_service_environment(
                serviceEnvironmentName="se",
                serviceEnvironmentType="SAGEMAKER_TRAINING",
                capacityLimits=[{"maxCapacity": 1, "capacityUnit": "NUM_INSTANCES"}],
            ),
            "Object already exists",
        ),
        (
            lambda b: b.create_service_environment(
                serviceEnvironmentName="m",
                serviceEnvironmentType="SAGEMAKER_TRAINING",
                capacityLimits=[
                    {"maxCapacity": 1, "capacityUnit": "NUM_INSTANCES"},
                    {"maxCapacity": 1, "capacityUnit": G5},
                ],
            ),
            "cannot mix",
        ),
        (lambda b: b.delete_service_environment(serviceEnvironment="se"), "must be DISABLED"),
        (
            lambda b: b.create_scheduling_policy(
                name="both", fairsharePolicy={}, quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"}
            ),
            "exactly one",
        ),
        (
            lambda b: b.create_scheduling_policy(
                name="w",
                fairsharePolicy={
                    "shareDistribution": [
                        {"shareIdentifier": "A*", "weightFactor": 1},
                        {"shareIdentifier": "AB", "weightFactor": 1},
                    ]
                },
            ),
            "overlap",
        ),
        (
            lambda b: b.create_scheduling_policy(name="w", fairsharePolicy={"computeReservation": 100}),
            "computeReservation",
        ),
        (
            lambda b: b.update_job_queue(
                jobQueue="fifo",
                schedulingPolicyArn=b.describe_job_queues(jobQueues=["fs"])["jobQueues"][0][
                    "schedulingPolicyArn"
                ],
            ),
            "cannot get one later",
        ),
        (
            lambda b: b.create_job_queue(jobQueueName="x", jobQueueType="ECS", priority=1),
            "SAGEMAKER_TRAINING",
        ),
        (
            lambda b: b.create_job_queue(
                jobQueueName="x",
                jobQueueType="SAGEMAKER_TRAINING",
                priority=1,
                serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "se"}],
                jobStateTimeLimitActions=[
                    {"reason": "r", "state": "RUNNABLE", "maxTimeSeconds": 60, "action": "TERMINATE"}
                ],
            ),
            "600..86400",
        ),
        (
            lambda b: b.create_quota_share(
                quotaShareName="s",
                jobQueue="fifo",
                capacityLimits=[{"maxCapacity": 1, "capacityUnit": G5}],
                resourceSharingConfiguration={"strategy": "RESERVE"},
                preemptionConfiguration={"inSharePreemption": "DISABLED"},
            ),
            "no quotaSharePolicy",
        ),
        (
            lambda b: b.create_quota_share(
                quotaShareName="s",
                jobQueue="qq",
                capacityLimits=[{"maxCapacity": 1, "capacityUnit": G5}],
                resourceSharingConfiguration={"strategy": "RESERVE", "borrowLimit": 5},
                preemptionConfiguration={"inSharePreemption": "DISABLED"},
            ),
            "LEND_AND_BORROW",
        ),
        (
            lambda b: b.create_quota_share(
                quotaShareName="s",
                jobQueue="qq",
                capacityLimits=[{"maxCapacity": 1, "capacityUnit": "ml.p4d.24xlarge"}],
                resourceSharingConfiguration={"strategy": "RESERVE"},
                preemptionConfiguration={"inSharePreemption": "DISABLED"},
            ),
            "not limited",
        ),
        (
            lambda b: b.describe_quota_share(
                quotaShareArn="arn:aws:batch:us-east-1:1:job-queue/qq/quota-share/x"
            ),
            "does not exist",
        ),
        (lambda b: b.describe_service_job(jobId="nope"), "not found"),
        (
            lambda b: b.list_service_jobs(
                filters=[{"name": "JOB_NAME", "values": ["a"]}, {"name": "SHARE_IDENTIFIER", "values": ["b"]}]
            ),
            "one filter",
        ),
        (lambda b: b.list_service_jobs(nextToken="!!!"), "nextToken"),
        (lambda b: b.terminate_service_jobs(jobs=["x"] * 51, reason="r"), "at most 50"),
        (lambda b: b.get_job_queue_snapshot(jobQueue="nope"), "does not exist"),
    ],
    ids=[
        "a second environment of the same name already exists",
        "NUM_INSTANCES and instance types do not mix",
        "an enabled environment cannot be deleted",
        "a policy is fair-share or quota-share, not both",
        "share identifiers must not overlap",
        "computeReservation over 99 is refused",
        "a FIFO queue never gets a policy",
        "only SAGEMAKER_TRAINING queues are modelled",
        "a time limit under 600 seconds is refused",
        "quota shares need a quota-share queue",
        "borrowLimit needs LEND_AND_BORROW",
        "a share limit must name an instance type the environment limits",
        "an unknown quota share cannot be described",
        "an unknown job cannot be described",
        "ListServiceJobs takes one filter",
        "a garbled nextToken is refused",
        "TerminateServiceJobs takes at most 50 jobs",
        "a snapshot of an unknown queue is refused",
    ],
)
def test_batch_errors(make_sim, call, needle) -> None:
    sim = make_sim()
    sim.env()
    sim.queue("fifo")
    sim.fair_queue("fs")
    quota_setup(sim)
    with pytest.raises(ApiError) as err:
        call(sim.batch)
    assert (err.value.status, err.value.code) == (400, "ClientException")
    assert needle in err.value.message


def test_sagemaker_errors(make_sim) -> None:
    sim = make_sim()
    sim.env()
    sim.queue()
    sim.submit("j", duration=10)
    sim.run()
    with pytest.raises(ApiError) as err:
        sim.sagemaker.describe_training_job(TrainingJobName="missing")
    assert (err.value.status, err.value.code, err.value.message) == (
        400,
        "ValidationException",
        "Requested resource not found.",
    )
    name = sim.sagemaker.list_training_jobs()["TrainingJobSummaries"][0]["TrainingJobName"]
    with pytest.raises(ApiError) as err:
        sim.sagemaker.stop_training_job(TrainingJobName=name)
    assert "status Completed" in err.value.message
    described = sim.sagemaker.describe_training_job(TrainingJobName=name)
    assert described["CreationTime"].tzinfo is not None
    assert sim.sagemaker.list_training_jobs(NameContains="zzz")["TrainingJobSummaries"] == []


@pytest.mark.parametrize(
    "lowered", [False, True], ids=["AWS's usual casing", "lowercase_training_job_arns on"]
)
def test_sagemaker_list_and_describe_lower_case_the_arn_only_with_the_switch(make_sim, lowered: bool) -> None:
    # GIVEN a running job's training job, which Batch and the events name AWSBatch...
    sim = make_sim(lowercase_training_job_arns=lowered)
    sim.env()
    sim.queue()
    job_id = sim.submit("Bert-FT", duration=10**4)
    sim.run(until=100)
    batch_arn = sim.job(job_id)["latestAttempt"]["serviceResourceId"]["value"]
    events = [e["detail"]["TrainingJobArn"] for e in sim.events if e["source"] == "aws.sagemaker"]
    # WHEN SageMaker is asked, by the name as created and by the lower-cased one
    (summary,) = sim.sagemaker.list_training_jobs()["TrainingJobSummaries"]
    described = sim.sagemaker.describe_training_job(TrainingJobName=summary["TrainingJobName"])
    by_lower = sim.sagemaker.describe_training_job(TrainingJobName=summary["TrainingJobName"].lower())
    # THEN List and Describe lower-case the ARN only with the switch; names, Batch and events never
    expected = batch_arn.lower() if lowered else batch_arn
    assert summary["TrainingJobArn"] == described["TrainingJobArn"] == by_lower["TrainingJobArn"] == expected
    assert "AWSBatch" in batch_arn and summary["TrainingJobName"].startswith("AWSBatch")
    assert events and set(events) == {batch_arn}
