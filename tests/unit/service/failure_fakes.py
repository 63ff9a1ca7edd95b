"""In-memory fakes of the failure path's ports, with the semantics the real adapters have."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from shareplane.adapters.batch_service_jobs import SubmittedServiceJob
from shareplane.domain.alerts import Alert
from shareplane.domain.config import SharesConfig
from shareplane.domain.errors import RejectedByServiceError
from shareplane.domain.lifecycle import HistoryEntry, JobState
from shareplane.service.handle_failure import FailurePorts

from tests.conftest import REPO

QUEUE_ARN = "arn:aws:batch:us-east-1:123456789012:job-queue/search-p4d-queue"
TJ_PREFIX = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatch"

PAYLOAD = {
    "TrainingJobName": "bert-large",
    "AlgorithmSpecification": {"TrainingImage": "img:1", "TrainingInputMode": "File"},
    "RoleArn": "arn:aws:iam::111122223333:role/shareplane-search-ProdExp1-training",
    "OutputDataConfig": {"S3OutputPath": "s3://search-ml-training/prodexp1/bert/"},
    "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2, "VolumeSizeInGB": 100},
    "StoppingCondition": {"MaxRuntimeInSeconds": 86400, "MaxWaitTimeInSeconds": 172800},
    "EnableManagedSpotTraining": True,
    "CheckpointConfig": {
        "S3Uri": "s3://search-ml-training/prodexp1/bert/ckpt/",
        "LocalPath": "/opt/ml/checkpoints",
    },
}


def shares_config(**failures: Any) -> SharesConfig:
    """config/shares.yaml, with ``failures`` overrides."""
    data = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    data["failures"] = {**data.get("failures", {}), **failures}
    return SharesConfig.model_validate(data)


def failed_job(
    job_id: str = "job-1",
    *,
    reason: str = "Received status from SageMaker: InternalServerError: We encountered an internal error.",
    share: str = "ProdExp1",
    priority: int = 50,
    attempts: int = 1,
    tags: Mapping[str, str] | None = None,
    payload: Mapping[str, Any] = PAYLOAD,
    preempted: int = 0,
    terminated: bool = False,
) -> dict[str, Any]:
    """DescribeServiceJob of a FAILED job."""
    tj = f"{TJ_PREFIX}{job_id}{attempts:032d}"
    return {
        "jobArn": f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}",
        "jobId": job_id,
        "jobName": f"name-{job_id}",
        "jobQueue": QUEUE_ARN,
        "status": "FAILED",
        "statusReason": reason,
        "shareIdentifier": share,
        "schedulingPriority": priority,
        "serviceJobType": "SAGEMAKER_TRAINING",
        "createdAt": 1773720000000,
        "startedAt": 1773720100000,
        "stoppedAt": 1773720900000,
        "isTerminated": terminated,
        "attempts": [
            {"serviceResourceId": {"name": "TrainingJobArn", "value": tj}, "statusReason": reason}
            for _ in range(attempts)
        ],
        "latestAttempt": {"serviceResourceId": {"name": "TrainingJobArn", "value": tj}},
        "retryStrategy": {"attempts": attempts},
        "timeoutConfig": {"attemptDurationSeconds": 172800},
        "preemptionSummary": {"preemptedAttemptCount": preempted, "recentPreemptedAttempts": []},
        "serviceRequestPayload": json.dumps(payload),
        "tags": dict(tags or {"team": "ProdExp1"}),
    }


def failed_event(described: Mapping[str, Any]) -> dict[str, Any]:
    """The Batch Service Job State Change event of a described job (no payload, no tags)."""
    detail = {k: v for k, v in described.items() if k not in ("serviceRequestPayload", "tags")}
    return {
        "version": "0",
        "id": "e-1",
        "detail-type": "Batch Service Job State Change",
        "source": "aws.batch",
        "time": "2026-03-17T05:02:44Z",
        "region": "us-east-1",
        "resources": [described["jobArn"]],
        "detail": detail,
    }


@dataclass
class FakeBatch:
    """Batch: describes what it holds, dedupes submissions on clientToken, can refuse."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    submits: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)
    refuse: str | None = None
    priorities: list[tuple[str, int]] = field(default_factory=list)
    listed: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, described: dict[str, Any]) -> dict[str, Any]:
        self.jobs[described["jobId"]] = described
        return described

    def describe(self, job_id: str) -> dict[str, Any] | None:
        job = self.jobs.get(job_id.rsplit("/", 1)[-1])
        return copy.deepcopy(job) if job else None

    def submit(self, params: Mapping[str, Any]) -> SubmittedServiceJob:
        self.submits.append(copy.deepcopy(dict(params)))
        if self.refuse:
            raise RejectedByServiceError("SubmitServiceJob", self.refuse, "fix it")
        token = params["clientToken"]
        if token in self.tokens:
            # API_SubmitServiceJob.html: a second identical request with the same clientToken is rejected.
            raise RejectedByServiceError("SubmitServiceJob", "Idempotent request already processed", "none")
        arn = f"arn:aws:batch:us-east-1:123456789012:service-job/new-{len(self.tokens) + 1}"
        self.tokens[token] = arn
        job_id = arn.rsplit("/", 1)[-1]
        self.jobs[job_id] = {**copy.deepcopy(dict(params)), "jobId": job_id, "jobArn": arn}
        return SubmittedServiceJob(job_arn=arn, job_id=job_id, job_name=params["jobName"])

    def find_submitted(
        self, job_queue: str, job_name: str, tag: str, value: str
    ) -> SubmittedServiceJob | None:
        for job in self.jobs.values():
            if job.get("jobName") == job_name and (job.get("tags") or {}).get(tag) == value:
                return SubmittedServiceJob(job_arn=job["jobArn"], job_id=job["jobId"], job_name=job_name)
        return None

    def list_jobs(self, job_queue: str, status: str) -> list[dict[str, Any]]:
        return copy.deepcopy(self.listed.get((job_queue, status), []))

    def update_priority(self, job_id: str, scheduling_priority: int) -> None:
        self.priorities.append((job_id, scheduling_priority))


@dataclass
class FakeTraining:
    """SageMaker DescribeTrainingJob."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def describe(self, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.jobs.get(name))


@dataclass
class FakeStore:
    """The jobs table's read side, as the failure path uses it."""

    links: dict[str, str] = field(default_factory=dict)
    states: dict[str, list[JobState]] = field(default_factory=dict)
    payloads: dict[str, dict[str, Any]] = field(default_factory=dict)

    def load_payload(self, job_arn: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.payloads.get(job_arn))

    def load_training_job(self, arn: str) -> None:
        return None

    def job_for_training_job(self, arn: str) -> str | None:
        return self.links.get(arn)

    def jobs(self, status: str | None = None) -> list[JobState]:
        return list(self.states.get(status or "", []))


@dataclass
class FakeLedger:
    """The ledger's conditional-write semantics, in memory."""

    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    history: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    ticks: dict[str, str] = field(default_factory=dict)

    def claim_decision(self, key, record, history, job_arn, share_failure):  # noqa: ANN001, ANN201
        if key in self.items:
            return copy.deepcopy(self.items[key])
        self.items[key] = {**copy.deepcopy(dict(record)), "applied": False}
        self.history[f"{job_arn}|{history.key}"] = {"entry": history, "job": job_arn}
        if share_failure is not None:
            self.failures.setdefault(share_failure["share"], []).append(dict(share_failure))
        return None

    def last_tick(self, runner: str) -> str | None:
        return self.ticks.get(runner)

    def advance_tick(self, runner: str, tick: str) -> None:
        if runner not in self.ticks or self.ticks[runner] < tick:
            self.ticks[runner] = tick

    def load_decision(self, key: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.items.get(key))

    def mark_applied(self, key: str, result: Mapping[str, Any]) -> bool:
        item = self.items.get(key)
        if item is None or item.get("applied"):
            return False
        item.update(applied=True, **result)
        return True

    def mark_scheduled(self, key: str) -> None:
        self.items[key]["scheduled"] = True

    def add_history(self, job_arn: str, entry: HistoryEntry, extra: Mapping[str, Any]) -> bool:
        key = f"{job_arn}|{entry.key}"
        if key in self.history:
            return False
        self.history[key] = {"entry": entry, "job": job_arn, **extra}
        return True

    def claim_alert(
        self, alert: Alert, now: float, quiet_seconds: float, *, claimed_at: float | None = None
    ) -> bool:
        lease = now if claimed_at is None else claimed_at
        item = self.items.get(alert.dedupe_key)
        if item and item["quietUntil"] >= now and ("sentAt" in item or item["claimedAt"] >= lease - 300):
            return False
        self.items[alert.dedupe_key] = {"claimedAt": lease, "quietUntil": now + quiet_seconds, "alert": alert}
        return True

    def confirm_alert(self, alert: Alert, now: float) -> None:
        self.items[alert.dedupe_key]["sentAt"] = now

    def release_alert(self, alert: Alert) -> None:
        if "sentAt" not in self.items.get(alert.dedupe_key, {}):
            self.items.pop(alert.dedupe_key, None)

    def share_failures(self, share: str, since: float) -> list[dict[str, Any]]:
        return [f for f in self.failures.get(share, []) if f["at"] > since]

    def alert_sent_at(self, dedupe_key: str) -> float | None:
        return self.items.get(dedupe_key, {}).get("sentAt")


@dataclass
class FakeAlerts:
    """The alerts topic: what was published."""

    sent: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    fail: bool = False
    #: The sender dies mid-publish (the Lambda times out): no except clause of the sender runs.
    die: bool = False

    def publish(self, subject: str, message: Mapping[str, object], attributes: Mapping[str, str]) -> None:
        if self.die:
            raise SenderDied("the invocation timed out while publishing")
        if self.fail:
            raise ConnectionError("SNS is down")
        self.sent.append((subject, dict(message), dict(attributes)))


class SenderDied(BaseException):
    """A Lambda invocation killed mid-call: like a timeout, nothing in the handler can catch it."""


@dataclass
class FakeTimer:
    """The delayed re-enqueue: what would arrive later."""

    pending: list[tuple[dict[str, Any], int]] = field(default_factory=list)

    def after(self, message: Mapping[str, Any], delay_seconds: int, now: float) -> None:
        self.pending.append((dict(message), delay_seconds))


@dataclass
class FakeMetrics:
    """EMF: every measurement with its dimensions."""

    emitted: list[tuple[str, float, dict[str, str]]] = field(default_factory=list)

    def emit(self, events: Any, dimensions: Mapping[str, str], properties: Mapping[str, str]) -> None:
        for event in events:
            self.emitted.append(
                (event.name, event.value, {d: dimensions.get(d, "none") for d in event.dimensions})
            )

    def count(self, name: str) -> float:
        return sum(v for n, v, _ in self.emitted if n == name)


@dataclass
class Clock:
    """A settable clock."""

    now: float = 1773722900.0

    def __call__(self) -> float:
        return self.now


@dataclass
class World:
    """Every fake, and the ports over them."""

    config: SharesConfig = field(default_factory=shares_config)
    batch: FakeBatch = field(default_factory=FakeBatch)
    training: FakeTraining = field(default_factory=FakeTraining)
    store: FakeStore = field(default_factory=FakeStore)
    ledger: FakeLedger = field(default_factory=FakeLedger)
    alerts: FakeAlerts = field(default_factory=FakeAlerts)
    timer: FakeTimer = field(default_factory=FakeTimer)
    metrics: FakeMetrics = field(default_factory=FakeMetrics)
    clock: Clock = field(default_factory=Clock)

    @property
    def ports(self) -> FailurePorts:
        return FailurePorts(
            store=self.store,
            ledger=self.ledger,
            batch=self.batch,
            training=self.training,
            alerts=self.alerts,
            timer=self.timer,
            metrics=self.metrics,
            config=self.config,
            region="us-east-1",
            clock=self.clock,
        )
