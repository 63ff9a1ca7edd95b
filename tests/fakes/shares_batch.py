"""SharesBatch (adapters/batch_policy.py) in memory: a scheduling policy, quota shares, a queue snapshot.

The policy, quota shares and snapshot are held in the API's shapes and read as the adapter reads them;
an update is the request the adapter writes (``updates`` lists them as sent).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from shareplane.adapters.batch_policy import (
    queue_usage,
    quota_share,
    quota_share_request,
    scheduling_policy_request,
)
from shareplane.domain.shares.batch_shares import (
    QueueUsage,
    QuotaShare,
    QuotaShareUpdate,
    SchedulingPolicy,
    SchedulingPolicyUpdate,
)

#: The shipped config's two teams under one fair-share policy, at equal weights.
TWO_TEAM_POLICY: dict[str, Any] = {
    "arn": "arn:aws:batch:us-east-1:123456789012:scheduling-policy/search",
    "name": "search",
    "fairsharePolicy": {
        "shareDecaySeconds": 3600,
        "computeReservation": 0,
        "shareDistribution": [
            {"shareIdentifier": "ProdExp1", "weightFactor": 1.0},
            {"shareIdentifier": "ProdExp2", "weightFactor": 1.0},
        ],
    },
}


@dataclass
class FakeSharesBatch:
    """Batch holding one fair-share policy or a set of quota shares, and a queue snapshot."""

    policy: dict[str, Any] | None = None
    quota_shares: list[dict[str, Any]] = field(default_factory=list)
    snapshot: dict[str, Any] = field(default_factory=dict)
    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    fail_updates: int = 0
    #: What the queue's service environments may run (DescribeServiceEnvironments); 0: none named.
    capacity: int = 0

    def describe_scheduling_policy(self, arn: str) -> SchedulingPolicy:
        assert self.policy is not None and arn == self.policy["arn"]
        return SchedulingPolicy.from_dict(self.policy)

    def scheduling_policy_of(self, job_queue: str) -> str | None:
        return self.policy["arn"] if self.policy else None

    def update_scheduling_policy(self, update: SchedulingPolicyUpdate) -> None:
        request = scheduling_policy_request(update)
        self._maybe_fail()
        self.updates.append(("UpdateSchedulingPolicy", copy.deepcopy(request)))
        assert self.policy is not None
        self.policy["fairsharePolicy"] = copy.deepcopy(request["fairsharePolicy"])

    def list_quota_shares(self, job_queue: str) -> list[QuotaShare]:
        return [quota_share(item) for item in self.quota_shares]

    def update_quota_share(self, update: QuotaShareUpdate) -> None:
        request = quota_share_request(update)
        self._maybe_fail()
        self.updates.append(("UpdateQuotaShare", copy.deepcopy(request)))
        for share in self.quota_shares:
            if share["quotaShareArn"] == request["quotaShareArn"]:
                share.update(copy.deepcopy({k: v for k, v in request.items() if k != "quotaShareArn"}))

    def queue_capacity(self, job_queue: str) -> int:
        return self.capacity

    def get_job_queue_snapshot(self, job_queue: str) -> QueueUsage:
        return queue_usage(self.snapshot)

    def _maybe_fail(self) -> None:
        if self.fail_updates:
            self.fail_updates -= 1
            raise ConnectionError("Batch endpoint unreachable")
