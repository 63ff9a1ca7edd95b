"""The submit path on moto (S3 with versioning, DynamoDB, SNS -> SQS) with a fake AWS Batch.

moto has no service jobs, so Batch is a fake port that behaves like SubmitServiceJob: one job per
clientToken, a repeat of the same request is rejected as the API reference says
(https://docs.aws.amazon.com/batch/latest/APIReference/API_SubmitServiceJob.html), and a request it
calls invalid raises.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3
import yaml
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.adapters.s3_spec_bucket import S3SpecBucket
from shareplane.adapters.sns_alerts import SnsAlerts
from shareplane.adapters.upload_attributions import DynamoUploadAttributions
from shareplane.domain.config import SharesConfig
from shareplane.domain.errors import RejectedByServiceError
from shareplane.domain.submission import DroppedObject
from shareplane.service.submit_job import QueueNames, SubmitOutcome, SubmitPorts, submit_dropped_spec

from tests.aws import create_jobs_table
from tests.conftest import REPO

BUCKET = "shareplane-drop-test"
TABLE = "shareplane-jobs"
REGION = "us-east-1"
NOW_MS = 1773690900000


def shares_config() -> SharesConfig:
    """config/shares.yaml."""
    return SharesConfig.model_validate(yaml.safe_load((REPO / "config" / "shares.yaml").read_text()))


@dataclass(frozen=True)
class Submitted:
    """Batch's answer."""

    job_arn: str
    job_id: str
    job_name: str


@dataclass
class FakeBatch:
    """SubmitServiceJob with clientToken idempotency; ``refuse`` names jobs Batch calls invalid."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    jobs: dict[str, Submitted] = field(default_factory=dict)
    tags: dict[str, dict[str, str]] = field(default_factory=dict)
    refuse: set[str] = field(default_factory=set)
    fail_next: int = 0

    def submit(self, request: Mapping[str, Any]) -> Submitted:
        self.calls.append(dict(request))
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("throttled")
        if request["jobName"] in self.refuse:
            raise RejectedByServiceError(
                "request", "shareIdentifier is not allowed on this queue", "fix the queue"
            )
        token = request["clientToken"]
        if token in self.jobs:
            raise RejectedByServiceError("request", "Idempotent request already processed", "none")
        job_id = str(uuid.UUID(token[:32]))
        self.jobs[token] = Submitted(
            f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}", job_id, request["jobName"]
        )
        self.tags[job_id] = dict(request.get("tags") or {})
        return self.jobs[token]

    def find_submitted(self, job_queue: str, job_name: str, tag: str, value: str) -> Submitted | None:
        return next(
            (
                j
                for j in self.jobs.values()
                if j.job_name == job_name and self.tags[j.job_id].get(tag) == value
            ),
            None,
        )

    @property
    def distinct_jobs(self) -> int:
        return len(self.jobs)


@dataclass
class DropWorld:
    """moto clients, the adapters over them, the fake Batch and the alert inbox."""

    s3: Any
    dynamodb: Any
    sqs: Any
    inbox_url: str
    batch: FakeBatch
    ports: SubmitPorts
    store: DynamoJobStore
    config: SharesConfig
    queues: QueueNames = QueueNames()

    def drop(self, key: str, body: bytes) -> DroppedObject:
        """Put an object; the event S3 would send about it."""
        response = self.s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        return DroppedObject(BUCKET, key, response.get("VersionId"), len(body), response["ETag"].strip('"'))

    def handle(self, obj: DroppedObject) -> SubmitOutcome:
        return submit_dropped_spec(obj, self.ports, self.config, self.queues, NOW_MS)

    def keys(self) -> set[str]:
        return {o["Key"] for o in self.s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])}

    def json(self, key: str) -> dict[str, Any]:
        return json.loads(self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())

    def body(self, key: str) -> bytes:
        return self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()

    def alerts(self) -> list[dict[str, Any]]:
        messages = self.sqs.receive_message(QueueUrl=self.inbox_url, MaxNumberOfMessages=10).get(
            "Messages", []
        )
        return [json.loads(m["Body"]) for m in messages]


def build_world() -> DropWorld:
    """Inside mock_aws: a versioned drop bucket, the jobs table, the alerts topic with an SQS inbox."""
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    create_jobs_table(dynamodb, TABLE)
    sns = boto3.client("sns", region_name=REGION)
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    sqs = boto3.client("sqs", region_name=REGION)
    inbox = sqs.create_queue(QueueName="inbox")["QueueUrl"]
    inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=inbox_arn)
    store = DynamoJobStore(dynamodb, TABLE)
    batch = FakeBatch()

    class NoMetrics:
        def emit(self, *_: Any) -> None:
            return None

    ports = SubmitPorts(
        S3SpecBucket(s3),
        batch,
        store,
        store,
        NoMetrics(),
        SnsAlerts(sns, topic),
        DynamoUploadAttributions(dynamodb, TABLE),
    )
    return DropWorld(s3, dynamodb, sqs, inbox, batch, ports, store, shares_config())
