"""The metrics reference: every metric the code emits, the dashboard's widgets and the alarms.

The metrics and their dimensions come from the tables the code emits from (``METRIC_DIMENSIONS`` and
its siblings); which function emits each and when is kept in ``EMITTED_BY``, and a metric the code
has but ``EMITTED_BY`` lacks fails the generator. The widgets and alarms are read from template.yaml.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from shareplane.domain.alerts.alert import FAILURE_METRIC_DIMENSIONS
from shareplane.domain.cost.billing import COST_METRICS
from shareplane.domain.jobs.lifecycle import METRIC_DIMENSIONS
from shareplane.domain.shares.metrics import REBALANCE_METRIC_DIMENSIONS

from . import markdown
from .markdown import code, table

__all__ = ["EMITTED_BY", "alarms", "emitted", "page", "raw_template", "widgets"]

_RS, _HF, _WJ = "record_state", "handle_failure", "watch_jobs"
_RB, _RC, _DI = "rebalance_shares", "reclaim_capacity", "detect_idle"

#: metric -> (emitted by, when).
EMITTED_BY: dict[str, tuple[str, str]] = {
    "Transitions": (_RS, "every recorded observation"),
    "QueueWaitSeconds": (_RS, "a job's first start: submission to first dispatch"),
    "RunSeconds": (_RS, "a job's final state"),
    "InstanceSeconds": (_RS, "a job's final state"),
    "GPUSeconds": (_RS, "a job's final state"),
    "CapacityRequeues": (_RS, "a capacity error sends a job back to RUNNABLE"),
    "Preemptions": (_RS, "a preemption is recorded"),
    "SloAttained": (_RS, "a job's first start within its tier's wait SLO"),
    "SloMissed": (_RS, "a job's first start past its tier's wait SLO"),
    "FailuresByClass": (_HF, "once per failure decision"),
    "Requeues": (_HF, "a failed job resubmitted"),
    "RequeuesRefused": (_HF, "Batch refused a resubmission"),
    "Alerts": ("every function that alerts", "every alert sent"),
    "PriorityEscalations": (_WJ, "a waiting job's schedulingPriority raised past its SLO"),
    "ReconcileRepairs": (_WJ, "the reconciler repaired a job's state"),
    "UnknownToBatch": (_WJ, "the table holds a job Batch no longer knows"),
    "RunnableJobs": (_WJ, "each tick: jobs waiting per tier"),
    "OldestWaitSeconds": (_WJ, "each tick: the oldest wait per tier"),
    "InstancesInUse": (_WJ, "each tick: a team's identifiers summed"),
    "InstancesEntitled": (_WJ, "each tick: the team's entitlement"),
    "InstanceCapacity": (_WJ, "each tick: the queue's capacity"),
    "Utilization": (_WJ, "each tick: instances held / capacity, in percent"),
    "WatchItemsFailed": (_WJ, "an item of a tick failed and the run went on (dimension Step)"),
    "Reclaims": (_RC, "a reclaim decision (by the waiting job's team and tier)"),
    "ReclaimVictims": (_RC, "each victim stopped (by the victim's team and tier)"),
    "ReclaimGpuHoursLost": (_RC, "the work since each victim's last checkpoint"),
    "ReclaimsSkipped": (_RC, "a due waiter not reclaimed for (dimension Reason)"),
    "IdleJobsFlagged": (_DI, "a job flagged idle"),
    "HungJobsFlagged": (_DI, "a job flagged hung"),
    "IdleJobsStopped": (_DI, "an idle job stopped"),
    "HungJobsRequeued": (_DI, "a hung job stopped and requeued"),
    "IdleGpuHours": (_DI, "idle GPU-hours, once each through a per-job watermark"),
    "ReclaimedGpuHours": (_DI, "at an idle stop: GPUs x the run time the job could still have held them"),
    "TrueGpuUtilization": (
        _DI,
        "each tick: the GPU-weighted mean per-GPU utilization of a share's running jobs",
    ),
    "TargetInstances": (_RB, "each plan: the team's target"),
    "ActualInstances": (_RB, "each plan: what the team holds"),
    "WeightFactor": (_RB, "each plan: the team's weight"),
    "BorrowLimit": (_RB, "each plan in quota mode"),
    "PlansApplied": (_RB, "a plan applied"),
    "PlansSkipped": (_RB, "a plan not applied (dimension Reason)"),
    "CostUsd": (_RS, "once per training job at its end: billable time x instances x price"),
    "BillableInstanceSeconds": (_RS, "once per training job at its end"),
    "UnownedTrainingJobs": (
        _RS,
        "a training job recorded final while no Batch job of shareplane links it, or linked to a job of "
        "no team's share (dimension Reason): not costed",
    ),
    "BudgetUsedPercent": (_WJ, "each tick, per budgeted team"),
    "BudgetForecastPercent": (_WJ, "each tick, per budgeted team: the month at its burn rate"),
}


def emitted() -> dict[str, tuple[str, ...]]:
    """Every metric the code emits in the ``shareplane`` namespace, with its dimensions."""
    tables: list[Mapping[str, tuple[str, ...]]] = [
        METRIC_DIMENSIONS,
        FAILURE_METRIC_DIMENSIONS,
        REBALANCE_METRIC_DIMENSIONS,
        COST_METRICS,
    ]
    return {name: tuple(dims) for t in tables for name, dims in t.items()}


def raw_template(repo: Path) -> dict[str, Any]:
    """template.yaml as written, intrinsic functions as plain dicts (a fresh copy each call)."""
    template: dict[str, Any] = json.loads(_template_json(repo / "template.yaml"))
    return template


@cache
def _template_json(path: Path) -> str:
    from cfnlint.decode import cfn_yaml  # type: ignore[import-untyped]  # cfn-lint ships no type hints

    return json.dumps(cfn_yaml.load(str(path)))


_SEARCH = re.compile(r"MetricName=\\?\"(\w+)\\?\"")


def widgets(repo: Path) -> list[tuple[str, list[str]]]:
    """The dashboard's metric widgets: (title, the metric names it draws), in the dashboard's order."""
    template = raw_template(repo)
    (dashboard,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Dashboard"]
    text = dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
    body = json.loads(re.sub(r"\$\{[^}]+\}", "0", text))
    found = []
    for widget in body["widgets"]:
        if widget["type"] != "metric":
            continue
        names: list[str] = []
        for entry in widget["properties"]["metrics"]:
            head = entry[0]
            if isinstance(head, dict) and "expression" in head:
                names += _SEARCH.findall(head["expression"])
            else:
                names.append(f"{entry[0]} {entry[1]}")
        found.append((widget["properties"]["title"], list(dict.fromkeys(names))))
    return found


def alarms(repo: Path) -> list[tuple[str, str]]:
    """Every alarm of the template: (logical id, its description)."""
    template = raw_template(repo)
    return [
        (name, resource["Properties"].get("AlarmDescription", ""))
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
    ]


def page(repo: Path) -> str:
    """The metrics, dashboard and alarms reference page."""
    metrics = emitted()
    missing = [m for m in metrics if m not in EMITTED_BY]
    if missing:
        raise ValueError(f"metrics {missing} have no entry in shareplane_cli/reference/metrics.py: add one")
    metric_rows = [(code(m), ", ".join(d), *EMITTED_BY[m]) for m, d in metrics.items()]
    widget_rows = [(title, ", ".join(code(n) for n in names)) for title, names in widgets(repo)]
    alarm_rows = [(code(name), description) for name, description in alarms(repo)]
    intro = (
        "Namespace `shareplane`, written as CloudWatch embedded metric format (EMF) log documents "
        "through Powertools Metrics; no handler calls `PutMetricData`. Dimensions stay low-cardinality: "
        "a job's id is an EMF property, never a dimension, so the number of metric series depends on "
        "the queues, teams, tiers and failure classes, not on the number of jobs. `Team` is the team that "
        "owns the job's share in the config (`none` for a share no team owns); `Tier` is the tier of its "
        "identifier in the team x tier layout, else the one its priority reaches. What each alarm means "
        "and what to do is in the [runbook](../operate/runbook.md#alarms)."
    )
    return markdown.page(
        "Metrics, dashboard and alarms",
        intro,
        "## Metrics\n\n" + table(("metric", "dimensions", "emitted by", "when"), metric_rows),
        "## Dashboard widgets\n\nThe stack's dashboard, `<stack>-operations`, in its order:\n\n"
        + table(("widget", "metrics"), widget_rows),
        "## Alarms\n\nEach notifies the alerts topic.\n\n" + table(("alarm", "what it says"), alarm_rows),
    )
