"""AWS Batch share settings through an injected client: scheduling policies, quota shares, snapshots.

Thin on purpose: every method is one API operation (pages followed), so the rebalancer's service
decides and this only carries requests; what it reads comes back as values (``SchedulingPolicy``,
``QuotaShare``, ``QueueUsage``), read off the API's answers here. Service jobs themselves (list, submit,
reprioritize) are ``batch_service_jobs.BatchServiceJobs``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..domain.errors import InvalidInputError
from ..domain.instance_types.capacity import Capacity
from ..domain.shares.batch_shares import (
    IdentifierUsage,
    QueueUsage,
    QuotaShare,
    QuotaShareUpdate,
    SchedulingPolicy,
    SchedulingPolicyUpdate,
)
from ..domain.shares.rebalance import QuotaSettings
from .paging import follow_pages

if TYPE_CHECKING:
    from mypy_boto3_batch import BatchClient
    from mypy_boto3_batch.type_defs import (
        FairsharePolicyTypeDef,
        UpdateQuotaShareRequestTypeDef,
        UpdateSchedulingPolicyRequestTypeDef,
    )


class BatchPolicyAdapter:
    """The Batch operations the share rebalancer reads and writes."""

    def __init__(self, client: BatchClient) -> None:
        self._client = client

    # -- fair share ---------------------------------------------------------------------------
    def describe_scheduling_policy(self, arn: str) -> SchedulingPolicy:
        """One scheduling policy, as DescribeSchedulingPolicies describes it."""
        found = self._client.describe_scheduling_policies(arns=[arn]).get("schedulingPolicies", [])
        if not found:
            raise InvalidInputError(
                "SCHEDULING_POLICY_ARN", f"{arn} does not exist", "pass the GPU queue's scheduling policy ARN"
            )
        return SchedulingPolicy.from_dict(found[0])

    def update_scheduling_policy(self, update: SchedulingPolicyUpdate) -> None:
        """UpdateSchedulingPolicy with the update ``batch_shares.plan_to_update_scheduling_policy`` built."""
        self._client.update_scheduling_policy(**scheduling_policy_request(update))

    def scheduling_policy_of(self, job_queue: str) -> str | None:
        """The scheduling policy ARN of a job queue (None for a FIFO queue)."""
        queues = self._client.describe_job_queues(jobQueues=[job_queue]).get("jobQueues", [])
        if not queues:
            raise InvalidInputError("JOB_QUEUE", f"{job_queue} does not exist", "pass the GPU job queue")
        return queues[0].get("schedulingPolicyArn")

    # -- quota shares -------------------------------------------------------------------------
    def list_quota_shares(self, job_queue: str) -> list[QuotaShare]:
        """Every quota share of a queue with its settings (ListQuotaShares carries them all)."""
        pages = follow_pages(self._client.list_quota_shares, "quotaShares", jobQueue=job_queue)
        return [quota_share(item) for item in pages]

    def describe_quota_share(self, arn: str) -> QuotaShare:
        """One quota share: its name, ARN and settings."""
        return quota_share(dict(self._client.describe_quota_share(quotaShareArn=arn)))

    def update_quota_share(self, update: QuotaShareUpdate) -> None:
        """UpdateQuotaShare with one update ``plan_to_update_quota_share_requests`` built."""
        self._client.update_quota_share(**quota_share_request(update))

    # -- capacity ---------------------------------------------------------------------------
    def queue_capacity(self, job_queue: str) -> int:
        """Instances the queue's service environments may run (DescribeJobQueues, then
        DescribeServiceEnvironments' capacityLimits); 0 when the queue names none."""
        queues = self._client.describe_job_queues(jobQueues=[job_queue]).get("jobQueues", [])
        order = (queues[0].get("serviceEnvironmentOrder") or []) if queues else []
        names = [entry["serviceEnvironment"] for entry in order]
        if not names:
            return 0
        response = self._client.describe_service_environments(serviceEnvironments=names)
        return sum(
            int(limit.get("maxCapacity") or 0)
            for env in response.get("serviceEnvironments") or []
            for limit in env.get("capacityLimits") or []
        )

    # -- what runs ----------------------------------------------------------------------------
    def get_job_queue_snapshot(self, job_queue: str) -> QueueUsage:
        """GetJobQueueSnapshot's utilization: what the queue's top shares hold."""
        return queue_usage(dict(self._client.get_job_queue_snapshot(jobQueue=job_queue)))


def scheduling_policy_request(update: SchedulingPolicyUpdate) -> UpdateSchedulingPolicyRequestTypeDef:
    """The UpdateSchedulingPolicy request of an update: the fair-share policy whole, unset members out."""
    fairshare: FairsharePolicyTypeDef = {}
    if update.share_decay_seconds is not None:
        fairshare["shareDecaySeconds"] = update.share_decay_seconds
    if update.compute_reservation is not None:
        fairshare["computeReservation"] = update.compute_reservation
    fairshare["shareDistribution"] = [
        {"shareIdentifier": w.share_identifier, "weightFactor": w.weight_factor} for w in update.weights
    ]
    return {"arn": update.arn, "fairsharePolicy": fairshare}


def quota_share_request(update: QuotaShareUpdate) -> UpdateQuotaShareRequestTypeDef:
    """The UpdateQuotaShare request of an update (the settings' fields are the ones ``QuotaSettings``
    writes for its audit too)."""
    settings = update.settings.to_dict()
    return {
        "quotaShareArn": update.quota_share_arn,
        "capacityLimits": settings["capacityLimits"],
        "resourceSharingConfiguration": settings["resourceSharingConfiguration"],
    }


def quota_share(item: Mapping[str, Any]) -> QuotaShare:
    """A ListQuotaShares (or DescribeQuotaShare) entry as a value."""
    return QuotaShare(
        name=str(item["quotaShareName"]),
        arn=str(item["quotaShareArn"]),
        settings=QuotaSettings.from_dict(item),
    )


def queue_usage(response: Mapping[str, Any]) -> QueueUsage:
    """GetJobQueueSnapshot's ``queueUtilization`` as a value: per identifier, instances per capacity unit."""
    utilization = response.get("queueUtilization") or {}

    def top(kind: str, key: str) -> tuple[IdentifierUsage, ...]:
        entries = (utilization.get(kind) or {}).get("topCapacityUtilization") or []
        return tuple(
            IdentifierUsage(
                identifier=str(entry.get(key) or ""),
                capacity=Capacity.of_pairs(
                    (str(u.get("capacityUnit")), float(u.get("quantity") or 0))
                    for u in entry.get("capacityUsage") or []
                ),
            )
            for entry in entries
        )

    return QueueUsage(
        fairshare=top("fairshareUtilization", "shareIdentifier"),
        quota=top("quotaShareUtilization", "quotaShareName"),
    )
