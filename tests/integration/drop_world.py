"""The submit path on moto (S3 with versioning, DynamoDB, SNS -> SQS) with the fake of Batch's service jobs.

moto has no service jobs, so Batch is tests/fakes/service_jobs.py (one job per clientToken, a repeat of
the same request rejected, a request it calls invalid refused).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import boto3
from shareplane.adapters.alert_ledger import DynamoAlertLedger
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.adapters.s3_spec_bucket import S3SpecBucket
from shareplane.adapters.sns_alerts import SnsAlerts
from shareplane.adapters.upload_attributions import DynamoUploadAttributions
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.submit.submission import DroppedObject
from shareplane.service.alerting import AlertSender
from shareplane.service.ports import AlertPublisher, UploadAttributions
from shareplane.service.record_uploader import UploaderPorts
from shareplane.service.submit_job import QueueNames, SubmitOutcome, SubmitPorts, submit_dropped_spec

from tests.aws import create_jobs_table, topic_with_inbox
from tests.fakes.failure_world import shares_config
from tests.fakes.metrics import FakeMetrics
from tests.fakes.service_jobs import FakeServiceJobs

BUCKET = "shareplane-drop-test"
TABLE = "shareplane-jobs"
REGION = "us-east-1"
NOW_MS = 1773690900000


@dataclass
class DropWorld:
    """moto clients, the adapters over them, the fake Batch and the alert inbox."""

    s3: Any
    dynamodb: Any
    sqs: Any
    inbox_url: str
    batch: FakeServiceJobs
    ports: SubmitPorts
    store: DynamoJobStore
    config: SharesConfig
    queues: QueueNames = QueueNames()

    def drop(self, key: str, body: bytes) -> DroppedObject:
        """Put an object; the event S3 would send about it."""
        response = self.s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        return DroppedObject(BUCKET, key, response.get("VersionId"), len(body), response["ETag"].strip('"'))

    def handle(self, obj: DroppedObject) -> SubmitOutcome:
        return submit_dropped_spec(obj, replace(self.ports, config=self.config, queues=self.queues), NOW_MS)

    def uploader_ports(
        self, attributions: UploadAttributions, topic: AlertPublisher | None = None
    ) -> UploaderPorts:
        """The attribution path's ports on this world's table, alerting to its topic (or to ``topic``)."""
        sender = AlertSender(
            ledger=DynamoAlertLedger(self.dynamodb, TABLE),
            topic=topic or self.ports.alerts,
            metrics=FakeMetrics(),
            config=self.config,
            clock=lambda: NOW_MS / 1000,
        )
        return UploaderPorts(attributions, sender, self.config)

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
    sqs = boto3.client("sqs", region_name=REGION)
    topic, inbox = topic_with_inbox(sns, sqs)
    store = DynamoJobStore(dynamodb, TABLE)
    batch = FakeServiceJobs()

    config = shares_config()
    ports = SubmitPorts(
        bucket=S3SpecBucket(s3),
        batch=batch,
        store=store,
        metrics=FakeMetrics(),
        alerts=SnsAlerts(sns, topic),
        attributions=DynamoUploadAttributions(dynamodb, TABLE),
        config=config,
    )
    return DropWorld(s3, dynamodb, sqs, inbox, batch, ports, store, config)
