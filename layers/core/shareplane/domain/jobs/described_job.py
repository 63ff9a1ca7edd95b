"""A service job as AWS Batch describes it (DescribeServiceJob) or lists it (ListServiceJobs).

The failure path, watch and reclaim read descriptions; the reconciler, reclaim and the CLI walk
listings. The Batch adapter reads both off the API's answers (``adapters/batch_service_jobs.py``).
What a requeue carries over unchanged (``retryStrategy``, ``timeoutConfig``,
``preemptionConfiguration``) is kept as Batch wrote it, since it goes back to Batch as it came.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .lifecycle import CapacityUsage

__all__ = ["MIN_EPOCH_MS", "DescribedJob", "JobAttempt", "ListedJob"]

#: Epoch milliseconds from here on (1973); a smaller number under a time-like key is not epoch-ms.
MIN_EPOCH_MS = 10**11


@dataclass(frozen=True)
class JobAttempt:
    """One attempt of a service job: the training job it ran, when, and why it stopped."""

    training_job_arn: str | None = None
    started_at: int | None = None
    stopped_at: int | None = None
    status_reason: str | None = None


@dataclass(frozen=True)
class DescribedJob:
    """DescribeServiceJob's answer for one job (epoch-millisecond times)."""

    job_arn: str
    job_id: str
    status: str
    job_name: str | None = None
    job_queue: str | None = None
    status_reason: str | None = None
    service_job_type: str | None = None
    share_identifier: str | None = None
    quota_share_name: str | None = None
    scheduling_priority: int | None = None
    created_at: int | None = None
    scheduled_at: int | None = None
    started_at: int | None = None
    stopped_at: int | None = None
    is_terminated: bool = False
    #: The finished attempts (None: Batch listed none, not even an empty list).
    attempts: tuple[JobAttempt, ...] | None = None
    latest_training_job_arn: str | None = None
    #: ``preemptionSummary``: the preempted attempts so far (None: not given) and the most recent of them.
    preempted_attempts: int | None = None
    recent_preempted_attempts: tuple[JobAttempt, ...] = ()
    #: Whether Batch gave a (non-empty) ``preemptionSummary`` at all.
    has_preemption_summary: bool = False
    capacity_usage: tuple[CapacityUsage, ...] = ()
    #: ``serviceRequestPayload``: the CreateTrainingJob request, as JSON text.
    payload: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    #: Submit settings a requeue carries over as Batch wrote them (only those Batch returned).
    carried: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", MappingProxyType(dict(self.tags)))
        object.__setattr__(self, "carried", MappingProxyType(dict(self.carried)))

    @property
    def share(self) -> str | None:
        """The job's share identifier, else its quota share."""
        return self.share_identifier or self.quota_share_name

    @property
    def preemption_retries_before_termination(self) -> int | None:
        """``preemptionConfiguration.preemptionRetriesBeforeTermination``, when set."""
        config = self.carried.get("preemptionConfiguration")
        value = config.get("preemptionRetriesBeforeTermination") if isinstance(config, Mapping) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def payload_object(self) -> dict[str, Any]:
        """The payload parsed; empty when there is none or it is not a JSON object."""
        try:
            parsed = json.loads(self.payload or "{}")
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}

    @property
    def payload_instance_type(self) -> str | None:
        """The payload's ``ResourceConfig.InstanceType``; None when it names none."""
        resources = self.payload_object().get("ResourceConfig")
        value = resources.get("InstanceType") if isinstance(resources, dict) else None
        return str(value) if value else None

    @property
    def checkpoint_uri(self) -> str | None:
        """The payload's ``CheckpointConfig.S3Uri``, where the training job keeps checkpoints; None: none."""
        config = self.payload_object().get("CheckpointConfig")
        uri = config.get("S3Uri") if isinstance(config, dict) else None
        return str(uri) if uri else None

    @property
    def latest_time_ms(self) -> int | None:
        """The latest epoch-millisecond time the description holds (its own, its attempts'); None if none."""
        times = [self.created_at, self.scheduled_at, self.started_at, self.stopped_at]
        for attempt in (*(self.attempts or ()), *self.recent_preempted_attempts):
            times += [attempt.started_at, attempt.stopped_at]
        found = [t for t in times if t is not None and t >= MIN_EPOCH_MS]
        return max(found) if found else None


@dataclass(frozen=True)
class ListedJob:
    """One ListServiceJobs summary: what a listing tells of a job without a describe.

    Batch's summaries carry no schedulingPriority, payload or tags; a caller that needs them
    describes the job (``ServiceJobs.describe``).
    """

    job_arn: str
    job_id: str
    status: str
    job_name: str | None = None
    share_identifier: str | None = None
    quota_share_name: str | None = None
    status_reason: str | None = None
    service_job_type: str | None = None
    created_at: int | None = None
    scheduled_at: int | None = None
    started_at: int | None = None
    stopped_at: int | None = None
    is_terminated: bool = False
    latest_training_job_arn: str | None = None
    capacity_usage: tuple[CapacityUsage, ...] = ()

    @property
    def share(self) -> str | None:
        """The job's share identifier, else its quota share."""
        return self.share_identifier or self.quota_share_name
