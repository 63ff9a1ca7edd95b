"""The stored layout of an idle-detector decision, and its value back.

Plain Python values (the DynamoDB marshalling is ``dynamodb_items``'): the idle ledger on the table and
its in-memory fake both store these items. Members whose value is None are not stored.

Decision (``IDLE#<job id>`` / ``DECISION#<decided at, epoch ms>#<act>``)::

    jobArn jobId signal act decidedAt since until reason jobName trainingJobName queue share team tier
    instanceType instances gpus peakHostPercent peakMemoryPercent stopAt idleGpuHours stopped
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..domain.idle.policy import Act, Signal
from ..domain.idle.record import IdleRecord

#: The partition of one job's decisions.
IDLE_PREFIX = "IDLE#"
DECISION_PREFIX = "DECISION#"
#: The job's counted-idle watermark: idle time up to ``countedUntil`` is in the IdleGpuHours metric.
COUNTED_SK = "COUNTED"
#: Every decision is also in the ByStatus index under this key, by time, so `shareplane idle` lists
#: them without a scan.
IDLE_INDEX_PK = "IDLE"


def idle_pk(job_id: str) -> str:
    """Partition of one job's idle decisions."""
    return f"{IDLE_PREFIX}{job_id}"


def idle_sk(record: IdleRecord) -> str:
    """One decision's sort key: its time, then its act (one act per job and tick time)."""
    return f"{DECISION_PREFIX}{int(record.decided_at * 1000):013d}#{record.act.value}"


def idle_item(record: IdleRecord) -> dict[str, Any]:
    """The attributes of a decision item (without its keys)."""
    item = {
        "jobArn": record.job_arn,
        "jobId": record.job_id,
        "signal": record.signal.value,
        "act": record.act.value,
        "decidedAt": record.decided_at,
        "since": record.since,
        "until": record.until,
        "reason": record.reason,
        "jobName": record.job_name,
        "trainingJobName": record.training_job_name,
        "queue": record.queue,
        "share": record.share,
        "team": record.team,
        "tier": record.tier,
        "instanceType": record.instance_type,
        "instances": record.instances,
        "gpus": record.gpus,
        "peakHostPercent": record.peak_host_percent,
        "peakMemoryPercent": record.peak_memory_percent,
        "stopAt": record.stop_at,
        "idleGpuHours": record.idle_gpu_hours,
        "stopped": record.stopped,
    }
    return {name: value for name, value in item.items() if value is not None}


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def idle_record_of(item: Mapping[str, Any]) -> IdleRecord:
    """A stored decision item as the record it was written from."""
    return IdleRecord(
        job_arn=str(item["jobArn"]),
        job_id=str(item["jobId"]),
        signal=Signal(str(item["signal"])),
        act=Act(str(item["act"])),
        decided_at=float(item["decidedAt"]),
        since=float(item["since"]),
        until=_float(item.get("until")),
        reason=str(item.get("reason") or ""),
        job_name=_str(item.get("jobName")),
        training_job_name=_str(item.get("trainingJobName")),
        queue=_str(item.get("queue")),
        share=_str(item.get("share")),
        team=_str(item.get("team")),
        tier=_str(item.get("tier")),
        instance_type=_str(item.get("instanceType")),
        instances=int(item.get("instances") or 1),
        gpus=int(item.get("gpus") or 0),
        peak_host_percent=_float(item.get("peakHostPercent")),
        peak_memory_percent=_float(item.get("peakMemoryPercent")),
        stop_at=_float(item.get("stopAt")),
        idle_gpu_hours=float(item.get("idleGpuHours") or 0.0),
        stopped=bool(item.get("stopped", False)),
    )
