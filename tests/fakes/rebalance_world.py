"""The rebalancer's samples: the blog's cluster config, jobs as the table holds them, policies and snapshots."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.jobs.lifecycle import CapacityUsage, JobState, JobStatus

from tests.conftest import REPO

QUEUE_ARN = "arn:aws:batch:us-east-1:123456789012:job-queue/search-p4d-queue"
POLICY_ARN = "arn:aws:batch:us-east-1:123456789012:scheduling-policy/search-gpu-fss-policy"
NOW = 1_773_700_000.0  # 2026-03-16T22:26:40Z


def shares_config(**update: Any) -> SharesConfig:
    """config/shares.yaml (the blog's cluster), with top-level fields replaced.

    One share per team unless ``share_layout`` says otherwise: most rebalancer tests are about the
    plan, which is per team in either layout; the team_tier tests ask for it. The rebalancer runs its
    default rules (not the shipped design: these tests pin down the rules' mechanics) and applies its
    plans (``rebalance.mode: apply``) unless ``rebalance`` says otherwise: most tests are about applying
    them; the advisory tests (the shipped default) ask for it.
    """
    data = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    data["share_layout"] = "team"
    data["rebalance"] = {}
    data.update(update)
    data["rebalance"] = {"mode": "apply", **(data.get("rebalance") or {})}
    return SharesConfig.model_validate(data)


def job(
    n: int,
    share: str,
    status: JobStatus,
    instances: int = 1,
    priority: int = 50,
    created_ago: float = 600,
    started_ago: float | None = None,
    queue: str = QUEUE_ARN,
    quota: bool = False,
    unit: str = "NUM_INSTANCES",
) -> JobState:
    """A job as the jobs table holds it (times relative to NOW, in seconds)."""
    return JobState(
        job_arn=f"arn:aws:batch:us-east-1:123456789012:service-job/j{n}",
        status=status,
        seq=f"{n}",
        job_queue=queue,
        share_identifier=None if quota else share,
        quota_share_name=share if quota else None,
        scheduling_priority=priority,
        created_at=int((NOW - created_ago) * 1000),
        first_started_at=None if started_ago is None else int((NOW - started_ago) * 1000),
        capacity_usage=(CapacityUsage(unit, float(instances)),),
    )


def fairshare_snapshot(held: Mapping[str, float]) -> dict[str, Any]:
    """GetJobQueueSnapshot of a fair-share queue whose shares hold ``held`` instances."""
    return {
        "frontOfQueue": {"jobs": [], "lastUpdatedAt": int(NOW * 1000)},
        "queueUtilization": {
            "totalCapacityUsage": [{"capacityUnit": "NUM_INSTANCES", "quantity": float(sum(held.values()))}],
            "fairshareUtilization": {
                "activeShareCount": len(held),
                "topCapacityUtilization": [
                    {
                        "shareIdentifier": s,
                        "capacityUsage": [{"capacityUnit": "NUM_INSTANCES", "quantity": q}],
                    }
                    for s, q in held.items()
                ],
            },
        },
    }


def fairshare_policy(weights: Mapping[str, float]) -> dict[str, Any]:
    """A DescribeSchedulingPolicies item."""
    return {
        "name": "search-gpu-fss-policy",
        "arn": POLICY_ARN,
        "fairsharePolicy": {
            "shareDecaySeconds": 3600,
            "computeReservation": 0,
            "shareDistribution": [{"shareIdentifier": s, "weightFactor": w} for s, w in weights.items()],
        },
    }
