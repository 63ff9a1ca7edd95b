"""gpusim over HTTP: boto3's batch and sagemaker clients against the server, errors as AWS returns them."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from gpusim import BatchModel, ModelOptions, RealtimeEngine
from gpusim.server import MAX_ENTRIES, EventPublisher, GpuSimServer, to_entry
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.properties import examples
from tests.sim.conftest import FAST, P5, payload

G5 = "ml.g5.xlarge"


class ManualClock:
    """A wall clock that moves only when the test says so: virtual time is then exact."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Served:
    """A running server on a manual clock, boto3 clients for it, and what it put on the bus."""

    server: GpuSimServer
    clock: ManualClock
    batch: Any
    sagemaker: Any
    puts: list[list[dict[str, Any]]] = field(default_factory=list)

    def advance(self, seconds: float) -> None:
        """Move the wall clock (speed 1: virtual seconds too); the next request runs what fell due."""
        self.clock.now += seconds

    @property
    def entries(self) -> list[dict[str, Any]]:
        return [e for call in self.puts for e in call]

    def env(self, name: str = "se", limits: dict[str, int] | None = None) -> str:
        limits = limits or {"NUM_INSTANCES": 1}
        return self.batch.create_service_environment(
            serviceEnvironmentName=name,
            serviceEnvironmentType="SAGEMAKER_TRAINING",
            capacityLimits=[{"maxCapacity": m, "capacityUnit": u} for u, m in limits.items()],
        )["serviceEnvironmentArn"]

    def queue(self, name: str = "q", env: str = "se", **extra: Any) -> str:
        return self.batch.create_job_queue(
            jobQueueName=name,
            jobQueueType="SAGEMAKER_TRAINING",
            priority=1,
            serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": env}],
            **extra,
        )["jobQueueArn"]

    def fair_queue(self, name: str = "fq", env: str = "se") -> str:
        arn = self.batch.create_scheduling_policy(
            name=f"{name}-sp",
            fairsharePolicy={
                "shareDecaySeconds": 3600,
                "computeReservation": 0,
                "shareDistribution": [{"shareIdentifier": "teamA", "weightFactor": 1.0}],
            },
        )["arn"]
        return self.queue(name, env, schedulingPolicyArn=arn)

    def submit(self, name: str, queue: str = "q", duration: float = 100, **extra: Any) -> str:
        return self.batch.submit_service_job(
            jobName=name,
            jobQueue=queue,
            serviceJobType="SAGEMAKER_TRAINING",
            serviceRequestPayload=extra.pop("body", None) or payload(name),
            tags={"gpusim:duration-seconds": str(duration)},
            **extra,
        )["jobId"]

    def status(self, job_id: str) -> str:
        return self.batch.describe_service_job(jobId=job_id)["status"]


def _clients(endpoint: str, validate: bool = True) -> tuple[Any, Any]:
    config = Config(retries={"max_attempts": 1}, parameter_validation=validate)
    kwargs = dict(
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="gpusim",
        aws_secret_access_key="gpusim",
        config=config,
    )
    return boto3.client("batch", **kwargs), boto3.client("sagemaker", **kwargs)


@pytest.fixture
def served() -> Iterator[Served]:
    clock = ManualClock()
    model = BatchModel(RealtimeEngine(speed=1.0, wall_clock=clock), ModelOptions(timings=FAST))
    puts: list[list[dict[str, Any]]] = []

    def put_events(entries: list[dict[str, Any]]) -> dict[str, Any]:
        puts.append(entries)
        return {"FailedEntryCount": 0, "Entries": [{"EventId": str(i)} for i in range(len(entries))]}

    server = GpuSimServer(model, put_events=put_events).start()
    batch, sagemaker = _clients(server.endpoint)
    try:
        yield Served(server, clock, batch, sagemaker, puts)
    finally:
        server.stop()


def error_of(call: Any, **kwargs: Any) -> tuple[int, str, str]:
    """(HTTP status, Error.Code, Error.Message) of a call that must fail."""
    with pytest.raises(ClientError) as info:
        call(**kwargs)
    response = info.value.response
    return (
        response["ResponseMetadata"]["HTTPStatusCode"],
        response["Error"]["Code"],
        response["Error"]["Message"],
    )


# ----------------------------------------------------------------------------------- resources
def test_service_environments_policies_and_queues_round_trip_through_boto3(served: Served) -> None:
    # GIVEN a service environment, a fair-share policy and a queue created over HTTP
    env_arn = served.env("se", {"NUM_INSTANCES": 4})
    queue_arn = served.fair_queue("fq")
    # THEN describing them returns what was created, parsed by boto3's own output shapes
    env = served.batch.describe_service_environments(serviceEnvironments=[env_arn])["serviceEnvironments"]
    assert [(e["serviceEnvironmentName"], e["capacityLimits"]) for e in env] == [
        ("se", [{"maxCapacity": 4, "capacityUnit": "NUM_INSTANCES"}])
    ]
    queue = served.batch.describe_job_queues(jobQueues=[queue_arn])["jobQueues"][0]
    assert queue["serviceEnvironmentOrder"] == [{"order": 1, "serviceEnvironment": env_arn}]
    policy_arn = queue["schedulingPolicyArn"]
    assert served.batch.list_scheduling_policies()["schedulingPolicies"] == [{"arn": policy_arn}]
    # WHEN the policy and queue are updated THEN describe shows the change
    served.batch.update_scheduling_policy(
        arn=policy_arn,
        fairsharePolicy={
            "shareDecaySeconds": 600,
            "shareDistribution": [{"shareIdentifier": "teamA", "weightFactor": 0.5}],
        },
    )
    policy = served.batch.describe_scheduling_policies(arns=[policy_arn])["schedulingPolicies"][0]
    assert policy["fairsharePolicy"]["shareDistribution"] == [
        {"shareIdentifier": "teamA", "weightFactor": 0.5}
    ]
    served.batch.update_job_queue(jobQueue="fq", priority=9)
    assert served.batch.describe_job_queues(jobQueues=["fq"])["jobQueues"][0]["priority"] == 9
    served.batch.update_service_environment(
        serviceEnvironment="se", capacityLimits=[{"maxCapacity": 8, "capacityUnit": "NUM_INSTANCES"}]
    )
    assert (
        served.batch.describe_service_environments()["serviceEnvironments"][0]["capacityLimits"][0][
            "maxCapacity"
        ]
        == 8
    )


def test_quota_shares_are_created_listed_updated_and_take_jobs(served: Served) -> None:
    served.env("qse", {G5: 2})
    policy = served.batch.create_scheduling_policy(
        name="qsp", quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"}
    )["arn"]
    served.queue("qq", "qse", schedulingPolicyArn=policy)
    share_arn = served.batch.create_quota_share(
        quotaShareName="research",
        jobQueue="qq",
        capacityLimits=[{"maxCapacity": 1, "capacityUnit": G5}],
        resourceSharingConfiguration={"strategy": "LEND_AND_BORROW", "borrowLimit": 100},
        preemptionConfiguration={"inSharePreemption": "DISABLED"},
    )["quotaShareArn"]
    assert [s["quotaShareName"] for s in served.batch.list_quota_shares(jobQueue="qq")["quotaShares"]] == [
        "research"
    ]
    served.batch.update_quota_share(
        quotaShareArn=share_arn, capacityLimits=[{"maxCapacity": 2, "capacityUnit": G5}]
    )
    described = served.batch.describe_quota_share(quotaShareArn=share_arn)
    assert (described["capacityLimits"], described["state"]) == (
        [{"maxCapacity": 2, "capacityUnit": G5}],
        "ENABLED",
    )
    job = served.submit("qjob", "qq", quotaShareName="research", body=payload("qjob", 1, G5))
    assert served.batch.describe_service_job(jobId=job)["quotaShareName"] == "research"
    assert served.status(job) == "SCHEDULED"


# ------------------------------------------------------------------------------------- jobs
def test_a_submitted_job_runs_to_success_as_the_clock_advances(served: Served) -> None:
    served.env()
    served.queue()
    job = served.submit("train-1", duration=100)
    # Capacity is free, so the scheduling pass after the submission already dispatched it.
    assert served.status(job) == "SCHEDULED"
    served.advance(10)
    assert served.status(job) == "STARTING"
    served.advance(20)
    assert served.status(job) == "RUNNING"
    served.advance(100)
    described = served.batch.describe_service_job(jobId=job)
    assert (described["status"], described["isTerminated"]) == ("SUCCEEDED", False)
    assert described["latestAttempt"]["serviceResourceId"]["name"] == "TrainingJobArn"


def test_a_client_token_makes_one_job_and_rejects_a_repeat_or_a_different_request(served: Served) -> None:
    served.env()
    served.queue()
    served.submit("same", clientToken="tok-1")
    # the second identical request is rejected (API_SubmitServiceJob.html, clientToken)
    status, code, message = error_of(served.submit, name="same", clientToken="tok-1")
    assert (status, code, message) == (
        400,
        "ClientException",
        "clientToken tok-1 was already used by an identical request",
    )
    status, code, message = error_of(
        served.batch.submit_service_job,
        jobName="other",
        jobQueue="q",
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload=payload("other"),
        clientToken="tok-1",
    )
    assert (status, code, message) == (
        400,
        "ClientException",
        "clientToken tok-1 was already used with a different request",
    )
    assert len(served.batch.list_service_jobs(jobQueue="q", jobStatus="SCHEDULED")["jobSummaryList"]) == 1


def test_list_service_jobs_filters_and_pages(served: Served) -> None:
    # GIVEN one instance of capacity: the first job holds it and four wait RUNNABLE
    served.env()
    served.queue()
    ids = [served.submit(f"job-{i}") for i in range(5)]
    runnable = served.batch.list_service_jobs(jobQueue="q", jobStatus="RUNNABLE")["jobSummaryList"]
    newest_first = ids[1:][::-1]
    assert [j["jobId"] for j in runnable] == newest_first
    # WHEN paging two at a time THEN every job comes back once, newest first
    pages = served.batch.get_paginator("list_service_jobs").paginate(
        jobQueue="q", jobStatus="RUNNABLE", PaginationConfig={"PageSize": 2}
    )
    sizes = [len(p["jobSummaryList"]) for p in pages]
    paged = [
        j["jobId"]
        for p in served.batch.get_paginator("list_service_jobs").paginate(
            jobQueue="q", jobStatus="RUNNABLE", PaginationConfig={"PageSize": 2}
        )
        for j in p["jobSummaryList"]
    ]
    assert (sizes, paged) == ([2, 2], newest_first)
    # AND the name filter ignores the status, as AWS does
    named = served.batch.list_service_jobs(jobQueue="q", filters=[{"name": "JOB_NAME", "values": ["job-0*"]}])
    assert [j["jobId"] for j in named["jobSummaryList"]] == [ids[0]]


def test_list_service_jobs_filters_by_share_identifier(served: Served) -> None:
    served.env()
    served.fair_queue("fq")
    mine = served.submit("a", "fq", shareIdentifier="teamA")
    served.submit("b", "fq", shareIdentifier="teamB")
    listed = served.batch.list_service_jobs(
        jobQueue="fq", jobStatus="SCHEDULED", filters=[{"name": "SHARE_IDENTIFIER", "values": ["teamA"]}]
    )["jobSummaryList"]
    assert [(j["jobId"], j["shareIdentifier"]) for j in listed] == [(mine, "teamA")]


def test_update_service_job_moves_a_job_ahead_in_its_share(served: Served) -> None:
    served.env()
    served.fair_queue("fq")
    served.submit("running", "fq", shareIdentifier="teamA")
    low = served.submit("low", "fq", shareIdentifier="teamA")
    high = served.submit("high", "fq", shareIdentifier="teamA")
    front = served.batch.get_job_queue_snapshot(jobQueue="fq")["frontOfQueue"]["jobs"]
    assert [j["jobArn"].rsplit("/", 1)[-1] for j in front] == [low, high]
    updated = served.batch.update_service_job(jobId=high, schedulingPriority=90)
    assert updated["jobId"] == high
    front = served.batch.get_job_queue_snapshot(jobQueue="fq")["frontOfQueue"]["jobs"]
    assert [j["jobArn"].rsplit("/", 1)[-1] for j in front] == [high, low]


def test_the_snapshot_reports_the_queue_front_and_utilisation(served: Served) -> None:
    served.env()
    served.queue()
    served.submit("holder")
    waiting = served.submit("waiter")
    snapshot = served.batch.get_job_queue_snapshot(jobQueue="q")
    assert [j["jobArn"].rsplit("/", 1)[-1] for j in snapshot["frontOfQueue"]["jobs"]] == [waiting]
    assert snapshot["queueUtilization"]["totalCapacityUsage"] == [{"capacityUnit": P5, "quantity": 1.0}]


def test_terminated_jobs_end_failed_and_are_never_retried(served: Served) -> None:
    served.env()
    served.queue()
    one, two, three = (served.submit(f"t{i}") for i in range(3))
    served.batch.terminate_service_job(jobId=one, reason="not needed")
    result = served.batch.terminate_service_jobs(jobs=[two, three], reason="batch cancel")
    assert result["successful"] == [two, three]
    for job in (one, two, three):
        described = served.batch.describe_service_job(jobId=job)
        assert (described["status"], described["isTerminated"]) == ("FAILED", True)


# --------------------------------------------------------------------------------- sagemaker
def test_training_jobs_are_described_listed_and_stopped(served: Served) -> None:
    served.env("se", {"NUM_INSTANCES": 2})
    served.queue()
    done = served.submit("done", duration=50)
    stopped = served.submit("stopped", duration=10_000)
    served.advance(30)  # both RUNNING
    in_progress = served.sagemaker.list_training_jobs(StatusEquals="InProgress")["TrainingJobSummaries"]
    assert len(in_progress) == 2
    served.advance(60)  # "done" finished
    completed = served.sagemaker.list_training_jobs(StatusEquals="Completed")["TrainingJobSummaries"]
    assert len(completed) == 1 and completed[0]["TrainingJobName"].startswith("AWSBatchdone")
    described = served.sagemaker.describe_training_job(TrainingJobName=completed[0]["TrainingJobName"])
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("Completed", "Completed")
    assert described["TrainingEndTime"] > described["TrainingStartTime"] > described["CreationTime"]
    assert (
        served.batch.describe_service_job(jobId=done)["latestAttempt"]["serviceResourceId"]["value"]
        == (described["TrainingJobArn"])
    )
    # WHEN the long job's training job is stopped THEN it ends Stopped and the Batch job FAILED
    name = served.sagemaker.list_training_jobs(NameContains="stopped")["TrainingJobSummaries"][0][
        "TrainingJobName"
    ]
    served.sagemaker.stop_training_job(TrainingJobName=name)
    served.advance(120)
    assert served.sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"] == "Stopped"
    assert served.status(stopped) == "FAILED"
    # AND a finished job cannot be stopped
    assert error_of(served.sagemaker.stop_training_job, TrainingJobName=name) == (
        400,
        "ValidationException",
        "The request was rejected because the training job is in status Stopped.",
    )


def test_list_training_jobs_pages_and_filters_by_creation_time(served: Served) -> None:
    served.env("se", {"NUM_INSTANCES": 3})
    served.queue()
    for i in range(3):
        served.submit(f"page{i}")
        served.advance(5)
    everything = served.sagemaker.list_training_jobs()["TrainingJobSummaries"]
    cutoff = everything[1]["CreationTime"] + timedelta(seconds=1)  # the wire carries whole seconds
    after = served.sagemaker.list_training_jobs(CreationTimeAfter=cutoff)["TrainingJobSummaries"]
    assert [j["TrainingJobName"] for j in after] == [everything[2]["TrainingJobName"]]
    pages = served.sagemaker.get_paginator("list_training_jobs").paginate(PaginationConfig={"PageSize": 2})
    assert [len(p["TrainingJobSummaries"]) for p in pages] == [2, 1]


# ------------------------------------------------------------------------------------ errors
BATCH_ERRORS = [
    (
        "submit_service_job",
        {"jobName": "x", "jobQueue": "q", "shareIdentifier": "teamA"},
        "shareIdentifier is only allowed on fair-share queues; q has none",
    ),
    (
        "submit_service_job",
        {"jobName": "x", "jobQueue": "fq"},
        "shareIdentifier is required on fair-share queue fq",
    ),
    (
        "submit_service_job",
        {"jobName": "x", "jobQueue": "nowhere"},
        "jobQueue nowhere does not exist",
    ),
    ("describe_service_job", {"jobId": "no-such-job"}, "Job no-such-job not found"),
    ("update_service_job", {"jobId": "no-such-job", "schedulingPriority": 1}, "Job no-such-job not found"),
    ("terminate_service_job", {"jobId": "no-such-job", "reason": "r"}, "Job no-such-job not found"),
    (
        "create_job_queue",
        {
            "jobQueueName": "q",
            "jobQueueType": "SAGEMAKER_TRAINING",
            "priority": 1,
            "serviceEnvironmentOrder": [{"order": 1, "serviceEnvironment": "se"}],
        },
        "Object already exists",
    ),
]


@pytest.mark.parametrize(
    ("operation", "params", "message"),
    BATCH_ERRORS,
    ids=[
        "a shareIdentifier on a FIFO queue is refused",
        "a fair-share queue requires a shareIdentifier",
        "an unknown queue is named",
        "describing an unknown job id is refused",
        "updating an unknown job id is refused",
        "terminating an unknown job id is refused",
        "a queue name cannot be created twice",
    ],
)
def test_batch_errors_reach_boto3_as_client_exceptions(
    served: Served, operation: str, params: dict[str, Any], message: str
) -> None:
    served.env()
    served.queue("q")
    served.fair_queue("fq")
    if operation == "submit_service_job":
        params = {"serviceJobType": "SAGEMAKER_TRAINING", "serviceRequestPayload": payload("x"), **params}
    status, code, text = error_of(getattr(served.batch, operation), **params)
    assert (status, code, text) == (400, "ClientException", message)
    with pytest.raises(served.batch.exceptions.ClientException):  # boto3's modeled exception class
        getattr(served.batch, operation)(**params)


def test_a_request_boto3_would_refuse_is_checked_against_the_same_shapes_on_the_server(
    served: Served,
) -> None:
    unchecked, _ = _clients(served.server.endpoint, validate=False)
    status, code, message = error_of(unchecked.describe_service_job, jobId=42)
    assert (status, code) == (400, "ClientException")
    assert "Invalid type for parameter jobId, value: 42" in message


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            lambda sm: sm.describe_training_job(TrainingJobName="AWSBatchnothing"),
            (400, "ValidationException", "Requested resource not found."),
        ),
        (
            lambda sm: sm.stop_training_job(TrainingJobName="AWSBatchnothing"),
            (400, "ValidationException", "Requested resource not found."),
        ),
        (
            lambda sm: sm.list_notebook_instances(),
            (400, "UnknownOperationException", "ListNotebookInstances is not supported by the emulator"),
        ),
    ],
    ids=[
        "describing an unknown training job is a ValidationException",
        "stopping an unknown training job is a ValidationException",
        "a SageMaker operation the emulator does not serve is named",
    ],
)
def test_sagemaker_errors_reach_boto3(served: Served, call: Any, expected: tuple[int, str, str]) -> None:
    with pytest.raises(ClientError) as info:
        call(served.sagemaker)
    response = info.value.response
    assert (
        response["ResponseMetadata"]["HTTPStatusCode"],
        response["Error"]["Code"],
        response["Error"]["Message"],
    ) == (expected)


def test_a_batch_operation_outside_the_model_is_refused_by_name(served: Served) -> None:
    # ListTagsForResource is GET /v1/tags/{resourceArn}: routed through its URI label, then refused.
    status, code, message = error_of(served.batch.list_tags_for_resource, resourceArn="arn:aws:batch:x")
    assert (status, code, message) == (
        400,
        "UnknownOperationException",
        "ListTagsForResource is not supported by the emulator",
    )


def _raw(served: Served, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any], str]:
    request = urllib.request.Request(served.server.endpoint + path, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read()), response.headers.get("x-amzn-ErrorType", "")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), exc.headers.get("x-amzn-ErrorType", "")


@pytest.mark.parametrize(
    ("path", "body", "headers", "expected"),
    [
        ("/v1/describeservicejob", b"{oops", {}, (400, "SerializationException")),
        ("/v1/describeservicejob", b"[1, 2]", {}, (400, "SerializationException")),
        ("/v1/nosuchoperation", b"{}", {}, (404, "UnknownOperationException")),
        ("/", b"{}", {"X-Amz-Target": "SageMaker.NoSuchOperation"}, (400, "UnknownOperationException")),
        ("/", b"{}", {"X-Amz-Target": "Other_20170101.ListThings"}, (400, "UnknownOperationException")),
    ],
    ids=[
        "a body that is not JSON is a SerializationException",
        "a body that is not a JSON object is a SerializationException",
        "a path no Batch operation has is a 404",
        "an unknown SageMaker target is refused",
        "another service's target is refused",
    ],
)
def test_malformed_requests_get_aws_shaped_errors(
    served: Served, path: str, body: bytes, headers: dict[str, str], expected: tuple[int, str]
) -> None:
    status, payload_, header = _raw(served, path, body, {"Content-Type": "application/json", **headers})
    assert (status, payload_["__type"], header) == (*expected, expected[1])
    assert payload_["message"]


# ------------------------------------------------------------------------------- the clock and events
def test_jobs_progress_and_events_flow_with_no_request(served: Served) -> None:
    served.env()
    served.queue()
    job = served.submit("unattended", duration=10)
    served.advance(1000)
    # No request from here on: the pump thread alone must run the job to its end and publish it.
    deadline = time.monotonic() + 10
    while not any(json.loads(e["Detail"]).get("status") == "SUCCEEDED" for e in served.entries):
        assert time.monotonic() < deadline, "the pump thread did not advance the clock"
        time.sleep(0.02)
    batch_states = [
        json.loads(e["Detail"])["status"]
        for e in served.entries
        if e["DetailType"] == "Batch Service Job State Change"
    ]
    assert batch_states == ["RUNNABLE", "SCHEDULED", "STARTING", "RUNNING", "SUCCEEDED"]
    assert all(e["Resources"] for e in served.entries)
    assert served.status(job) == "SUCCEEDED"


def test_events_are_put_ten_at_a_time_with_the_real_entry_shape(served: Served) -> None:
    served.env("se", {"NUM_INSTANCES": 20})
    served.queue()
    for i in range(8):
        served.submit(f"many{i}", duration=10)
    served.advance(100)
    assert served.server.wait_for_events(10)
    assert served.puts and max(len(call) for call in served.puts) <= MAX_ENTRIES
    sources = {(e["Source"], e["DetailType"]) for e in served.entries}
    assert sources == {
        ("aws.batch", "Batch Service Job State Change"),
        ("aws.sagemaker", "SageMaker Training Job State Change"),
    }
    succeeded = [json.loads(e["Detail"]) for e in served.entries if '"SUCCEEDED"' in e["Detail"]]
    assert len(succeeded) == 8 and all(d["jobQueue"].endswith(":job-queue/q") for d in succeeded)


def test_concurrent_clients_each_get_their_own_job(served: Served) -> None:
    served.env("se", {"NUM_INSTANCES": 50})
    served.queue()
    ids: list[str] = []
    lock = threading.Lock()

    def submit_some(worker: int) -> None:
        batch, _ = _clients(served.server.endpoint)
        for i in range(5):
            job = batch.submit_service_job(
                jobName=f"w{worker}-{i}",
                jobQueue="q",
                serviceJobType="SAGEMAKER_TRAINING",
                serviceRequestPayload=payload("c"),
            )["jobId"]
            with lock:
                ids.append(job)

    threads = [threading.Thread(target=submit_some, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(ids)) == 20
    listed = served.batch.list_service_jobs(jobQueue="q", jobStatus="SCHEDULED", maxResults=100)[
        "jobSummaryList"
    ]
    assert sorted(j["jobId"] for j in listed) == sorted(ids)


# --------------------------------------------------------------------------------- the publisher
def _envelope(i: int) -> dict[str, Any]:
    return {
        "version": "0",
        "id": f"id-{i}",
        "detail-type": "Batch Service Job State Change",
        "source": "aws.batch",
        "account": "123456789012",
        "time": "2026-03-16T00:00:00Z",
        "region": "us-east-1",
        "resources": [f"arn:aws:batch:us-east-1:123456789012:service-job/{i}"],
        "detail": {"n": i},
    }


@settings(max_examples=examples(25), deadline=None)
@given(fail_calls=st.sets(st.integers(0, 12), max_size=6), refuse=st.sets(st.integers(0, 29), max_size=10))
def test_the_publisher_delivers_every_event_once_through_failures_and_partial_refusals(
    fail_calls: set[int], refuse: set[int]
) -> None:
    # GIVEN a bus that raises on some calls and refuses some entries the first time it sees them
    delivered: list[int] = []
    seen: set[int] = set()
    calls = iter(range(10_000))

    def put(entries: list[dict[str, Any]]) -> dict[str, Any]:
        assert len(entries) <= MAX_ENTRIES
        if next(calls) in fail_calls:
            raise ConnectionError("bus down")
        results = []
        for entry in entries:
            n = json.loads(entry["Detail"])["n"]
            if n in refuse and n not in seen:
                seen.add(n)
                results.append({"ErrorCode": "InternalFailure", "ErrorMessage": "try again"})
            else:
                delivered.append(n)
                results.append({"EventId": str(n)})
        return {"FailedEntryCount": sum("ErrorCode" in r for r in results), "Entries": results}

    publisher = EventPublisher(put, retry_seconds=0.001, max_retry_seconds=0.002)
    publisher.start()
    for i in range(30):
        publisher.offer(_envelope(i))
    # WHEN it has drained THEN every event arrived exactly once, none dropped
    assert publisher.wait_idle(10)
    publisher.stop()
    assert sorted(delivered) == list(range(30))
    assert (publisher.published, publisher.dropped) == (30, 0)


def test_an_entry_carries_the_envelope_fields_eventbridge_needs() -> None:
    entry = to_entry(_envelope(7))
    assert entry["Source"] == "aws.batch" and entry["DetailType"] == "Batch Service Job State Change"
    assert json.loads(entry["Detail"]) == {"n": 7}
    assert entry["Resources"] == ["arn:aws:batch:us-east-1:123456789012:service-job/7"]
    assert entry["Time"].isoformat() == "2026-03-16T00:00:00+00:00"


def test_the_server_refuses_a_model_on_a_virtual_time_engine() -> None:
    with pytest.raises(TypeError, match="RealtimeEngine"):
        GpuSimServer(BatchModel())
