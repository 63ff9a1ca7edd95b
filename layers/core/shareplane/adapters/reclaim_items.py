"""The stored layout of a reclaim decision, and its value back.

Plain Python values (the DynamoDB marshalling is ``dynamodb_items``'): the reclaim ledger on the table
and its in-memory fake both store these items. Members whose value is None are not stored.

Decision (``RECLAIM#<waiting job>`` / ``DECISION#<id>``)::

    decisionId jobId jobArn jobName jobQueue share team tier waitedSeconds reclaimAfterSeconds
    shortInstances lostInstanceMinutes decidedAt dryRun victimsBefore applied appliedAt
    victims[{jobId jobArn jobName share team tier instanceType instances borrowed
             checkpointAgeSeconds lostInstanceMinutes gpuHoursLost reason}]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..domain.reclaim.record import ReclaimRecord, ReclaimVictimRecord


def _present(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in item.items() if value is not None}


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def victim_item(victim: ReclaimVictimRecord) -> dict[str, Any]:
    """One victim's attributes in a decision item."""
    return _present(
        {
            "jobId": victim.job_id,
            "jobArn": victim.job_arn,
            "jobName": victim.job_name,
            "share": victim.share,
            "team": victim.team,
            "tier": victim.tier,
            "instanceType": victim.instance_type,
            "instances": victim.instances,
            "borrowed": victim.borrowed,
            "checkpointAgeSeconds": victim.checkpoint_age_seconds,
            "lostInstanceMinutes": victim.lost_instance_minutes,
            "gpuHoursLost": victim.gpu_hours_lost,
            "reason": victim.reason,
        }
    )


def reclaim_item(record: ReclaimRecord) -> dict[str, Any]:
    """The attributes of a decision item (without its keys)."""
    return _present(
        {
            "decisionId": record.decision_id,
            "jobId": record.job_id,
            "jobArn": record.job_arn,
            "jobName": record.job_name,
            "jobQueue": record.job_queue,
            "share": record.share,
            "team": record.team,
            "tier": record.tier,
            "waitedSeconds": record.waited_seconds,
            "reclaimAfterSeconds": record.reclaim_after_seconds,
            "shortInstances": record.short_instances,
            "victims": [victim_item(v) for v in record.victims],
            "lostInstanceMinutes": record.lost_instance_minutes,
            "decidedAt": record.decided_at,
            "dryRun": record.dry_run,
            "victimsBefore": record.victims_before,
            "applied": record.applied,
            "appliedAt": record.applied_at,
        }
    )


def victim_of(item: Mapping[str, Any]) -> ReclaimVictimRecord:
    """A stored victim as its value."""
    return ReclaimVictimRecord(
        job_id=str(item["jobId"]),
        job_arn=str(item["jobArn"]),
        team=str(item["team"]),
        tier=str(item["tier"]),
        instances=int(item["instances"]),
        reason=str(item.get("reason") or ""),
        job_name=_str_or_none(item.get("jobName")),
        share=_str_or_none(item.get("share")),
        instance_type=_str_or_none(item.get("instanceType")),
        borrowed=bool(item.get("borrowed")),
        checkpoint_age_seconds=_int_or_none(item.get("checkpointAgeSeconds")),
        lost_instance_minutes=float(item.get("lostInstanceMinutes") or 0),
        gpu_hours_lost=float(item.get("gpuHoursLost") or 0),
    )


def reclaim_of(item: Mapping[str, Any]) -> ReclaimRecord:
    """A stored decision item as its value."""
    return ReclaimRecord(
        decision_id=str(item["decisionId"]),
        job_id=str(item["jobId"]),
        job_arn=str(item["jobArn"]),
        team=str(item["team"]),
        tier=str(item["tier"]),
        victims=tuple(victim_of(v) for v in item.get("victims") or ()),
        decided_at=float(item["decidedAt"]),
        job_name=_str_or_none(item.get("jobName")),
        job_queue=_str_or_none(item.get("jobQueue")),
        share=_str_or_none(item.get("share")),
        waited_seconds=int(item.get("waitedSeconds") or 0),
        reclaim_after_seconds=_int_or_none(item.get("reclaimAfterSeconds")),
        short_instances=int(item.get("shortInstances") or 0),
        lost_instance_minutes=float(item.get("lostInstanceMinutes") or 0),
        dry_run=bool(item.get("dryRun")),
        victims_before=_int_or_none(item.get("victimsBefore")),
        applied=bool(item.get("applied")),
        applied_at=_float_or_none(item.get("appliedAt")),
    )
