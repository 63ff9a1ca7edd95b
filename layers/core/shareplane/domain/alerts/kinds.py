"""Every alert kind, one row each: who sends it, when, its severity, its quiet window and its wording.

``ALERT_SPECS`` is the one table an alert is read from: a call site names the kind and the facts
(``job_alert``), the subject's headline and the fix are this table's templates filled with those
facts, and the sender keeps the same alert quiet for the row's window. A new alert kind is one row
here and its trigger. The alerts reference (``docs/reference/alerts.md``) is generated from this table.

Templates are ``str.format`` templates over the facts a call site passes (``{count}``, ``{queue}``, ...);
a kind that says different things in different cases (an idle job warned, then stopped) has one
wording per case, its ``variants``, each with the severity it is sent at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from ..config.failure_rules import STORM_FIX, Severity
from ..config.shares import SharesConfig
from ..submit.attribution import UPLOAD_JOIN_RETENTION_SECONDS

__all__ = [
    "ALERT_SPECS",
    "DEFAULT_QUIET_SECONDS",
    "ONCE_PER_JOB_SECONDS",
    "ONCE_PER_MONTH_SECONDS",
    "AlertKind",
    "AlertSpec",
    "Wording",
    "quiet_seconds",
]

#: How long an alert of one kind stays quiet for the same job (or share, for storms).
DEFAULT_QUIET_SECONDS = 6 * 3600
#: Alerts a job gets once (preemptions, a blocked queue, a reclaim): once per job for a week.
ONCE_PER_JOB_SECONDS = 7 * 24 * 3600
#: Longer than any month, so a budget threshold alerts once in the month its key names.
ONCE_PER_MONTH_SECONDS = 32 * 24 * 3600
#: As long as the upload join is kept: a redelivered CloudTrail event of one request never alerts twice.
ONCE_PER_UPLOAD_SECONDS = UPLOAD_JOIN_RETENTION_SECONDS


class AlertKind(StrEnum):
    """What an alert is about (SNS message attribute ``kind``)."""

    FAILURE = "failure"  # a failed job that is not retried (or no longer)
    STORM = "storm"  # a share failing faster than the storm guard allows: one digest
    REQUEUE_REFUSED = "requeue_refused"  # Batch refused the resubmission
    REPEATED_PREEMPTION = "repeated_preemption"
    QUEUE_BLOCKED = "queue_blocked"
    WAIT_SLO = "wait_slo"  # a job waits past its tier's SLO even at its escalation ceiling
    UNKNOWN_TO_BATCH = "unknown_to_batch"  # the table thinks a job is active; Batch does not know it
    RECLAIM = "reclaim"  # a job was stopped so a higher tier's waiting job could start (to the victim's team)
    PERMISSION_DENIED = "permission_denied"  # AWS refused a control-plane call: its role lacks a permission
    BUDGET = "budget"  # a team's month spend reached one of its budget's alert thresholds
    IDLE = "idle"  # a running job's GPUs stayed idle for its team's window (alert, warning or stop)
    HUNG = "hung"  # a running job's GPUs are busy but it wrote no checkpoint for its team's intervals
    UPLOADER_NOT_SUBMITTER = "uploader_not_submitter"  # a drop written by someone not in its submitters


@dataclass(frozen=True)
class Wording:
    """What one case of a kind says: the subject's headline and the fix (``str.format`` templates)."""

    headline: str
    fix: str
    #: The severity this case is sent at; None: the kind's.
    severity: Severity | None = None


@dataclass(frozen=True)
class AlertSpec:
    """One alert kind: who sends it and when, its severity, quiet window and wording."""

    sent_by: str
    when: str
    #: None: each alert's own, decided as ``severity_rule`` says (a failure class's policy).
    severity: Severity | None
    #: How long the same alert (job or share, and kind) stays quiet; None: the storm guard's window.
    quiet_seconds: float | None
    #: What one quiet window covers ("per job", "per share", ...).
    quiet_per: str
    wording: Wording
    #: A wording per case, for a kind that says different things (the case's name -> its wording).
    variants: Mapping[str, Wording] = field(default_factory=lambda: MappingProxyType({}))
    #: How the severity is decided when the row has none, or varies by case (for the reference).
    severity_rule: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "variants", MappingProxyType(dict(self.variants)))

    def wording_of(self, variant: str | None) -> Wording:
        """The wording of one case (the kind's own when ``variant`` is None)."""
        return self.wording if variant is None else self.variants[variant]


def quiet_seconds(kind: AlertKind, config: SharesConfig) -> float:
    """How long an alert of ``kind`` stays quiet for the same job or share, under ``config``."""
    window = ALERT_SPECS[kind].quiet_seconds
    return config.failures.storm.window_seconds if window is None else window


_IDLE_FIX_ALERT = (
    "check the job's logs and GPU metrics (links below): a data-loading stall, a hung collective or a "
    "finished script that did not exit; stop it if it is not working"
)
_IDLE_FIX_STOP = "nothing runs any more: fix the stall (logs below) and submit again"
_REQUEUED_FIX = (
    "nothing to do: the job was requeued and resumes from its last checkpoint; read the logs of the hang"
)
#: Idle and hung jobs: one wording per act (``domain.idle.policy.Act``), the act's severity with it.
_IDLE_ACTS = {
    "alert": Wording("GPUs idle", _IDLE_FIX_ALERT, Severity.INFO),
    "warn": Wording(
        "GPUs idle: will be stopped unless they wake up",
        "make the job use its GPUs, or stop it yourself; it is stopped when the warning grace ends",
        Severity.WARNING,
    ),
    "stop": Wording("stopped: GPUs idle past the warning", _IDLE_FIX_STOP, Severity.WARNING),
    "stop_and_requeue": Wording(
        "hung: stopped and requeued from its last checkpoint", _REQUEUED_FIX, Severity.WARNING
    ),
}
#: Hung jobs: their own alert, then the idle acts' wording for what is done about them.
_HUNG_ACTS = {
    **_IDLE_ACTS,
    "alert": Wording("hung: GPUs busy, no new checkpoint", _IDLE_FIX_ALERT, Severity.INFO),
}
_BUDGET_FIX = (
    "see `shareplane usage --team {team} --since month --by user` for who spent it; {enforced}; "
    "raise budgets.{team}.monthly_usd in the shares config if the spend is intended"
)

ALERT_SPECS: Mapping[AlertKind, AlertSpec] = MappingProxyType(
    {
        AlertKind.FAILURE: AlertSpec(
            "handle_failure",
            "a failed job is not retried (its class is not retryable, or its failure budget is spent)",
            None,
            DEFAULT_QUIET_SECONDS,
            "per job",
            Wording("failed ({failure_class}), not retried{after_failures}", "{class_fix}"),
            severity_rule="the failure class's policy (`failures.classes`): info, warning or critical",
        ),
        AlertKind.STORM: AlertSpec(
            "handle_failure",
            "a share fails faster than the storm guard allows (`failures.storm`): requeueing pauses,"
            " one digest",
            Severity.CRITICAL,
            None,
            "per share",
            Wording(
                "failure storm, {count} failures; requeueing paused",
                STORM_FIX,
            ),
        ),
        AlertKind.REQUEUE_REFUSED: AlertSpec(
            "handle_failure",
            "Batch refused the resubmission of a job the failure path decided to requeue",
            Severity.CRITICAL,
            DEFAULT_QUIET_SECONDS,
            "per job",
            Wording(
                "requeue refused by AWS Batch ({failure_class})",
                "fix what AWS Batch names (the payload, the share, a quota) and resubmit the job by hand",
            ),
        ),
        AlertKind.REPEATED_PREEMPTION: AlertSpec(
            "handle_failure",
            "a job was preempted `failures.preemption_alert_after` times (3 by default)",
            Severity.WARNING,
            ONCE_PER_JOB_SECONDS,
            "per job",
            Wording(
                "preempted {count} times",
                "checkpoint more often, cap preemptionRetriesBeforeTermination, or use a share with "
                "reserved capacity",
            ),
        ),
        AlertKind.QUEUE_BLOCKED: AlertSpec(
            "handle_failure",
            "Batch reports a job blocking its queue (`Batch Service Job Queue Blocked`)",
            Severity.CRITICAL,
            ONCE_PER_JOB_SECONDS,
            "per job",
            Wording(
                "blocks queue {queue}",
                "the job at the head of the queue can never run as requested: fix its instance type or "
                "count, raise the service environment's limits, or terminate it",
            ),
        ),
        AlertKind.WAIT_SLO: AlertSpec(
            "watch_jobs",
            "a job waits past its tier's wait SLO even at its escalation ceiling"
            " (carries its newest start prediction)",
            Severity.WARNING,
            ONCE_PER_JOB_SECONDS,
            "per job",
            Wording(
                "waits {waited_minutes:.0f} min ({tier} SLO {slo_minutes} min)",
                "the share is over its entitlement or capacity is short: check `shareplane jobs` for "
                "what holds the instances, or raise the share's weight",
            ),
        ),
        AlertKind.UNKNOWN_TO_BATCH: AlertSpec(
            "watch_jobs, handle_failure",
            "the jobs table holds a job as active that Batch no longer knows",
            Severity.WARNING,
            ONCE_PER_JOB_SECONDS,
            "per job",
            Wording(
                "is {status} here but unknown to AWS Batch",
                "check the job in the AWS Batch console; resubmit it if it is lost",
            ),
            variants={
                # The failure path's: Batch's FAILED event came, but Batch no longer describes the job.
                "failed": Wording(
                    "failed, and AWS Batch no longer describes it",
                    "resubmit the job from its spec; Batch keeps finished jobs only for a limited time",
                ),
            },
        ),
        AlertKind.RECLAIM: AlertSpec(
            "reclaim_capacity",
            "a job was stopped so a higher tier's waiting job could start (to the victim's team)",
            Severity.WARNING,
            ONCE_PER_JOB_SECONDS,
            "per victim",
            Wording(
                "stopped for {waiting_tier} job {waiting_name}; requeued",
                "nothing to do: the job was requeued and resumes from its last checkpoint; checkpoint more "
                "often to lose less, or stay within your team's entitlement to never be reclaimed from",
            ),
        ),
        AlertKind.PERMISSION_DENIED: AlertSpec(
            "every function (the permission guard)",
            "AWS refused one of the control plane's own calls: the role lacks the named action",
            Severity.CRITICAL,
            DEFAULT_QUIET_SECONDS,
            "per role and action (once per instance when the ledger cannot be written)",
            Wording(
                "is missing {action}",
                "grant {action}{on_resource} to {who} in template.yaml and redeploy; the refused records "
                "stay in the function's dead-letter queue for replay",
            ),
        ),
        AlertKind.BUDGET: AlertSpec(
            "watch_jobs",
            "a team's month spend reached one of `budgets.<team>.alert_thresholds`",
            None,
            ONCE_PER_MONTH_SECONDS,
            "once per threshold and month",
            Wording("{percent}% of the {month} budget spent", _BUDGET_FIX),
            variants={
                "nearing": Wording("{percent}% of the {month} budget spent", _BUDGET_FIX, Severity.WARNING),
                "spent": Wording("{percent}% of the {month} budget spent", _BUDGET_FIX, Severity.CRITICAL),
            },
            severity_rule="warning below 100% of the budget, critical at it",
        ),
        AlertKind.IDLE: AlertSpec(
            "detect_idle",
            "a running job's GPUs stayed idle for its policy's window"
            " (an alert, a warning before a stop, or the stop)",
            None,
            ONCE_PER_JOB_SECONDS,
            "per job, act and idle period",
            _IDLE_ACTS["alert"],
            variants=_IDLE_ACTS,
            severity_rule="info for an alert, warning for a warning or a stop",
        ),
        AlertKind.HUNG: AlertSpec(
            "detect_idle",
            "a running job's GPUs are busy but it wrote no checkpoint for its policy's intervals",
            None,
            ONCE_PER_JOB_SECONDS,
            "per job, act and hung period",
            _HUNG_ACTS["alert"],
            variants=_HUNG_ACTS,
            severity_rule="info for an alert, warning for a stop and requeue",
        ),
        AlertKind.UPLOADER_NOT_SUBMITTER: AlertSpec(
            "record_uploader",
            "a drop was written by a principal not in `teams.<team>.submitters`"
            " (the bucket policy and the config drifted)",
            Severity.WARNING,
            ONCE_PER_UPLOAD_SECONDS,
            "per upload request",
            Wording(
                "drop by a principal not in its submitters: {name}",
                "the drop bucket's policy should have refused this upload; the drop was still answered as "
                "usual (its jobs carry this principal). Check DropBucketPolicy against "
                "teams.{team}.submitters, then cancel the jobs if the upload was not wanted",
            ),
        ),
    }
)
