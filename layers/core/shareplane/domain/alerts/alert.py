"""Alerts and failure-path metrics, decided purely: what an alert says, where it routes, what is counted.

An ``Alert`` is the whole message: SNS message attributes (severity, team, tier, share, kind, queue)
so teams can subscribe with a filter policy (``{"team": ["ProdExp1"]}``: in the team_tier layout a
team has one share identifier per tier, so ``share`` alone would not find all its alerts), a
readable ASCII subject of at most 100 characters (SNS rejects anything else) and a JSON body with
the job, the failure class and rule, a short reason, the decision, a link to the training job's
CloudWatch logs and the suggested fix. ``dedupe_key`` names the ``ALERT#<job>#<kind>`` item that
keeps one job from alerting twice for the same thing. Each kind's headline, fix, severity and quiet
window are its row of ``kinds.ALERT_SPECS``; the builders here fill them with one alert's facts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

from ..config.failure_rules import Severity
from ..config.shares import SharesConfig
from ..errors import InvalidInputError
from ..failures.decision import FailureDecision
from ..jobs.arns import job_id_of
from ..submit.attribution import UploadAttribution
from .kinds import ALERT_SPECS, DEFAULT_QUIET_SECONDS, AlertKind

#: An alert claim never confirmed (its sender died) may be taken over after this long: longer than
#: the function may run (30 s), shorter than the queue's visibility timeout (190 s), so the redelivery
#: of a record whose Lambda died between claim and send can take the claim over and send the alert.
STALE_CLAIM_SECONDS = 120

__all__ = [
    "DEFAULT_QUIET_SECONDS",
    "FAILURE_METRIC_DIMENSIONS",
    "STALE_CLAIM_SECONDS",
    "SUBJECT_MAX_CHARS",
    "Alert",
    "AlertKind",
    "FailureMetricEvent",
    "failure_alert",
    "job_alert",
    "logs_link",
    "owned_by",
    "permission_denied_alert",
    "storm_digest",
    "dedupe_key",
    "storm_dedupe_key",
    "subject_line",
    "uploader_alert",
    "worded",
]

SUBJECT_MAX_CHARS = 100
#: Recent failures a storm digest lists (the SNS message limit is 256 KB; people read ten).
DIGEST_MAX_ITEMS = 20


@dataclass(frozen=True)
class Alert:
    """One alert as it is published: attributes for routing, a subject and a JSON body."""

    kind: AlertKind
    severity: Severity
    share: str
    queue: str
    subject: str
    body: Mapping[str, Any]
    #: ``<job arn>`` or ``share:<share>``: with ``kind``, what must not alert twice within the window.
    subject_key: str
    job_arn: str | None = None
    #: Who the share belongs to, from the config's mapping (``owned_by``); None: not known.
    team: str | None = None
    tier: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "body", MappingProxyType(dict(self.body)))

    @property
    def dedupe_key(self) -> str:
        """The ``ALERT#<job>#<kind>`` key of the item that keeps this alert from repeating."""
        return dedupe_key(self.kind, self.subject_key)

    @property
    def attributes(self) -> dict[str, str]:
        """SNS message attributes, all String, for subscription filter policies."""
        return {
            "severity": self.severity.value,
            "team": self.team or "none",
            "tier": self.tier or "none",
            "share": self.share or "none",
            "kind": self.kind.value,
            "queue": self.queue or "unknown",
        }


def dedupe_key(kind: AlertKind, subject_key: str) -> str:
    """``ALERT#<subject>#<kind>``: the item that keeps one subject (a job, ``share:<share>``, ...) from
    being alerted on twice for the same thing within the kind's quiet window."""
    return f"ALERT#{subject_key}#{kind.value}"


def storm_dedupe_key(scope: str) -> str:
    """The dedupe key of a storm scope's digest (what the storm guard asks when it was last sent)."""
    return dedupe_key(AlertKind.STORM, f"share:{scope}")


def owned_by(alert: Alert, config: SharesConfig) -> Alert:
    """The alert with the team and tier its share belongs to (attributes and body), from the config."""
    team = alert.team or config.team_for_share(alert.share)
    tier = alert.tier or (tier.value if (tier := config.tier_for_share(alert.share)) else None)
    body = {"team": team, "tier": tier, **alert.body}
    return replace(alert, team=team, tier=tier, body=body)


def subject_line(*parts: str) -> str:
    """An SNS subject: printable ASCII, one line, at most 100 characters (cut with '...')."""
    text = " ".join(p for p in parts if p)
    text = "".join(c if 32 <= ord(c) < 127 else " " for c in text)
    text = " ".join(text.split())
    if len(text) > SUBJECT_MAX_CHARS:
        text = text[: SUBJECT_MAX_CHARS - 3].rstrip() + "..."
    return text or "shareplane alert"


def logs_link(region: str, training_job_name: str | None) -> str | None:
    """The CloudWatch console link to a training job's log streams (None without a name)."""
    if not training_job_name:
        return None
    # The console's fragment encodes '/' as $252F, '?' as $3F and '=' as $3D (its own double escape).
    name = quote(training_job_name, safe="").replace("%", "$25")
    return (
        f"https://console.aws.amazon.com/cloudwatch/home?region={region}#logsV2:log-groups/log-group/"
        f"$252Faws$252Fsagemaker$252FTrainingJobs$3FlogStreamNameFilter$3D{name}"
    )


def worded(
    kind: AlertKind, facts: Mapping[str, Any], variant: str | None = None
) -> tuple[Severity | None, str, str]:
    """The severity, headline and fix ``ALERT_SPECS`` gives one case of ``kind``, filled with ``facts``."""
    spec = ALERT_SPECS[kind]
    wording = spec.wording_of(variant)
    return (
        wording.severity or spec.severity,
        wording.headline.format_map(facts),
        wording.fix.format_map(facts),
    )


def failure_alert(
    decision: FailureDecision,
    *,
    job_arn: str,
    job_name: str | None,
    share: str,
    queue: str,
    logs: str | None,
    recent: Sequence[Mapping[str, Any]] = (),
) -> Alert:
    """The alert for a failure decision whose action is ALERT (a storm becomes the share's digest)."""
    if decision.storm:
        return storm_digest(decision, share=share, queue=queue, recent=recent, job_arn=job_arn)
    after = "" if decision.attempt == 0 else f" after {decision.attempt} failures"
    facts = {
        "failure_class": decision.failure_class.value,
        "after_failures": after,
        "class_fix": decision.fix,
    }
    _, headline, fix = worded(AlertKind.FAILURE, facts)
    body = {
        "job": job_arn,
        "jobName": job_name,
        "share": share,
        "class": decision.failure_class.value,
        "rule": decision.rule_id,
        "reason": decision.reason_excerpt,
        "attempt": decision.attempt,
        "decision": decision.action.value,
        "why": decision.why,
        "logs": logs,
        "fix": fix,
    }
    subject = subject_line(
        f"[{decision.severity.value}]", f"{share}:", job_name or job_id_of(job_arn), headline
    )
    return Alert(AlertKind.FAILURE, decision.severity, share, queue, subject, body, job_arn, job_arn)


def storm_digest(
    decision: FailureDecision,
    *,
    share: str,
    queue: str,
    recent: Sequence[Mapping[str, Any]],
    job_arn: str | None = None,
) -> Alert:
    """One alert for a share's failure storm, listing its recent failures (newest first)."""
    listed = sorted(recent, key=lambda f: f.get("at", 0), reverse=True)[:DIGEST_MAX_ITEMS]
    severity, headline, fix = worded(AlertKind.STORM, {"count": len(recent), "share": share})
    body = {
        "job": job_arn,
        "share": share,
        "class": decision.failure_class.value,
        "rule": decision.rule_id,
        "reason": decision.reason_excerpt,
        "attempt": decision.attempt,
        "decision": "requeueing paused",
        "why": decision.why,
        "fix": fix,
        "failures": listed,
        "failureCount": len(recent),
    }
    severity = severity or Severity.CRITICAL
    subject = subject_line(f"[{severity.value}]", f"{share}:", headline)
    return Alert(AlertKind.STORM, severity, share, queue, subject, body, f"share:{share}", job_arn)


def job_alert(
    kind: AlertKind,
    *,
    share: str,
    queue: str,
    job_arn: str,
    job_name: str | None,
    reason: str,
    facts: Mapping[str, Any] | None = None,
    variant: str | None = None,
    extra: Mapping[str, Any] | None = None,
    team: str | None = None,
    tier: str | None = None,
    subject_key: str | None = None,
    severity: Severity | None = None,
) -> Alert:
    """An alert about one job that is not a classified failure (blocked queue, preemptions, ...).

    The headline, fix and severity are ``ALERT_SPECS``' for ``kind`` (and ``variant``), filled with
    ``facts``; ``severity`` is the alert's own where the row has none. ``subject_key`` (default: the
    job) is what must not alert twice within the quiet window.
    """
    specified, headline, fix = worded(kind, {"queue": queue, **(facts or {})}, variant)
    severity = severity or specified
    if severity is None:
        raise InvalidInputError("severity", f"{kind.value} has no fixed severity", "pass the alert's own")
    body = {
        "job": job_arn,
        "jobName": job_name,
        "share": share,
        "class": None,
        "rule": None,
        "reason": reason[:200],
        "attempt": 0,
        "decision": kind.value,
        "fix": fix,
        **(extra or {}),
    }
    subject = subject_line(f"[{severity.value}]", f"{share}:", job_name or job_id_of(job_arn), headline)
    return Alert(kind, severity, share, queue, subject, body, subject_key or job_arn, job_arn, team, tier)


#: Dimensions of each failure-path metric, the same way as ``lifecycle.METRIC_DIMENSIONS``: low
#: cardinality only (job ids ride along as EMF properties).
FAILURE_METRIC_DIMENSIONS: Mapping[str, tuple[str, ...]] = {
    "FailuresByClass": ("Queue", "Team", "Class"),
    "Requeues": ("Queue", "Team"),
    "RequeuesRefused": ("Queue", "Team"),
    "Alerts": ("Kind", "Severity"),
    "PriorityEscalations": ("Queue", "Tier"),
    "ReconcileRepairs": ("Queue",),
    "UnknownToBatch": ("Queue",),
    "RunnableJobs": ("Queue", "Tier"),
    "OldestWaitSeconds": ("Queue", "Tier"),
    "InstancesInUse": ("Queue", "Team"),
    "InstancesEntitled": ("Queue", "Team"),
    "InstanceCapacity": ("Queue",),
    "Utilization": ("Queue",),
    # Reclaim: per beneficiary (Reclaims) or victim (the others) team and tier; teams x tiers stay few.
    "Reclaims": ("Queue", "Team", "Tier"),
    "ReclaimVictims": ("Queue", "Team", "Tier"),
    "ReclaimGpuHoursLost": ("Queue", "Team", "Tier"),
    "ReclaimsSkipped": ("Queue", "Reason"),
    # The idle detector, per share (team and tier): decisions recorded once, and idle GPU-hours counted
    # once through a per-job watermark (service/detect_idle.py).
    "IdleJobsFlagged": ("Queue", "Team", "Tier"),
    "HungJobsFlagged": ("Queue", "Team", "Tier"),
    "IdleJobsStopped": ("Queue", "Team", "Tier"),
    "HungJobsRequeued": ("Queue", "Team", "Tier"),
    "IdleGpuHours": ("Queue", "Team", "Tier"),
    "ReclaimedGpuHours": ("Queue", "Team", "Tier"),
    # Each tick: the GPU-weighted mean per-GPU utilisation of the share's running jobs (SageMaker's
    # GPUUtilization), beside the allocation the dashboard shows from InstancesInUse and Utilization.
    "TrueGpuUtilization": ("Queue", "Team", "Tier"),
    # One item a scheduled run could not handle (a deleted queue, an unreadable job), by the run's step.
    "WatchItemsFailed": ("Step",),
}


@dataclass(frozen=True)
class FailureMetricEvent:
    """A failure-path measurement; shaped like ``JobMetricEvent`` so the same EMF sink emits it."""

    name: str
    value: float
    unit: str = "Count"  # Count | Seconds | Percent | None

    def __post_init__(self) -> None:
        if self.name not in FAILURE_METRIC_DIMENSIONS:
            raise InvalidInputError(
                "name", f"{self.name} is not a failure metric", "add it to FAILURE_METRIC_DIMENSIONS"
            )

    @property
    def dimensions(self) -> tuple[str, ...]:
        return FAILURE_METRIC_DIMENSIONS[self.name]


def permission_denied_alert(
    *, action: str, resource: str | None, role: str | None, function: str, message: str
) -> Alert:
    """One alert per role and missing action: what to grant, to whom, and that records wait in the DLQ."""
    facts = {
        "action": action,
        "on_resource": f" on {resource}" if resource else "",
        "who": role or f"the role of {function}",
    }
    severity, headline, fix = worded(AlertKind.PERMISSION_DENIED, facts)
    severity = severity or Severity.CRITICAL
    body = {
        "function": function,
        "role": role,
        "action": action,
        "resource": resource,
        "reason": message[:300],
        "decision": "configuration_error",
        "fix": fix,
    }
    subject = subject_line(f"[{severity.value}]", function, headline)
    return Alert(
        AlertKind.PERMISSION_DENIED, severity, "", "", subject, body, f"role:{role or function}#{action}"
    )


def uploader_alert(attribution: UploadAttribution, team: str | None, submitters: Sequence[str]) -> Alert:
    """The one alert of an upload by a principal outside its team's submitters (``record_uploader``)."""
    facts = {"name": attribution.key.rsplit("/", 1)[-1], "team": team}
    severity, headline, fix = worded(AlertKind.UPLOADER_NOT_SUBMITTER, facts)
    severity = severity or Severity.WARNING
    body = {
        "kind": AlertKind.UPLOADER_NOT_SUBMITTER.value,
        "team": team,
        "object": {"bucket": attribution.bucket, "key": attribution.key},
        "requestId": attribution.request_id,
        "principal": attribution.principal_arn,
        "policyPrincipal": attribution.policy_principal,
        "submitters": list(submitters),
        "reason": f"{attribution.principal_arn} wrote {attribution.key}, and is not one of "
        f"teams.{team}.submitters",
        "decision": "not_a_submitter",
        "fix": fix,
    }
    subject = subject_line(f"[{severity.value}]", f"{team or 'unknown'}:", headline)
    return Alert(
        AlertKind.UPLOADER_NOT_SUBMITTER,
        severity,
        "none",
        "none",
        subject,
        body,
        f"upload:{attribution.request_id}",
        team=team,
    )
