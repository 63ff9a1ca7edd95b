"""The alerts reference: each alert kind, when it is sent, its severity and quiet window; the SNS attributes.

The kinds and attributes come from the code (``AlertKind``, the submit path's and the uploader's own
kinds, ``Alert.attributes``); what each kind means is kept here, in ``NOTES``, and a kind the code has
but ``NOTES`` lacks fails the generator (and so the docs tests).
"""

from __future__ import annotations

from pathlib import Path

from shareplane.domain.alerts.alert import DEFAULT_QUIET_SECONDS, Alert, AlertKind
from shareplane.domain.config.failure_rules import Severity
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.cost.budget_alerts import ONCE_PER_MONTH_SECONDS
from shareplane.domain.submit.attribution import ALERT_KIND_NOT_A_SUBMITTER
from shareplane.domain.submit.submission import ALERT_KIND_REJECTED
from shareplane.service.alerting import ONCE_PER_JOB_SECONDS

from . import markdown
from .markdown import code, table

__all__ = ["ATTRIBUTES", "NOTES", "kinds", "page"]


def _duration(seconds: float) -> str:
    if seconds % 86400 == 0:
        return f"{int(seconds // 86400)} days ({int(seconds)} s)"
    if seconds % 3600 == 0:
        return f"{int(seconds // 3600)} h ({int(seconds)} s)"
    return f"{int(seconds)} s"


_STORM_WINDOW = SharesConfig.model_fields["failures"].default.storm.window_seconds

#: kind -> (sent by, when, severity, quiet window: the same job or share and kind stays silent this long).
NOTES: dict[str, tuple[str, str, str, str]] = {
    AlertKind.FAILURE: (
        "handle_failure",
        "a failed job is not retried (its class is not retryable, or its failure budget is spent)",
        "the failure class's policy (`failures.classes`): info, warning or critical",
        f"{_duration(DEFAULT_QUIET_SECONDS)} per job",
    ),
    AlertKind.STORM: (
        "handle_failure",
        "a share fails faster than the storm guard allows (`failures.storm`): requeueing pauses, one digest",
        Severity.CRITICAL,
        f"the storm window, `failures.storm.window_seconds` ({_duration(_STORM_WINDOW)} by default),"
        " per share",
    ),
    AlertKind.REQUEUE_REFUSED: (
        "handle_failure",
        "Batch refused the resubmission of a job the failure path decided to requeue",
        Severity.CRITICAL,
        f"{_duration(DEFAULT_QUIET_SECONDS)} per job",
    ),
    AlertKind.REPEATED_PREEMPTION: (
        "handle_failure",
        "a job was preempted `failures.preemption_alert_after` times (3 by default)",
        Severity.WARNING,
        f"{_duration(ONCE_PER_JOB_SECONDS)} per job",
    ),
    AlertKind.QUEUE_BLOCKED: (
        "handle_failure",
        "Batch reports a job blocking its queue (`Batch Service Job Queue Blocked`)",
        Severity.CRITICAL,
        f"{_duration(ONCE_PER_JOB_SECONDS)} per job",
    ),
    AlertKind.WAIT_SLO: (
        "watch_jobs",
        "a job waits past its tier's wait SLO even at its escalation ceiling"
        " (carries its newest start prediction)",
        Severity.WARNING,
        f"{_duration(ONCE_PER_JOB_SECONDS)} per job",
    ),
    AlertKind.UNKNOWN_TO_BATCH: (
        "watch_jobs, handle_failure",
        "the jobs table holds a job as active that Batch no longer knows",
        Severity.WARNING,
        f"{_duration(ONCE_PER_JOB_SECONDS)} per job",
    ),
    AlertKind.RECLAIM: (
        "reclaim_capacity",
        "a job was stopped so a higher tier's waiting job could start (to the victim's team)",
        Severity.WARNING,
        f"{_duration(ONCE_PER_JOB_SECONDS)} per victim",
    ),
    AlertKind.PERMISSION_DENIED: (
        "every function (the permission guard)",
        "AWS refused one of the control plane's own calls: the role lacks the named action",
        Severity.CRITICAL,
        f"{_duration(DEFAULT_QUIET_SECONDS)} per role and action"
        " (once per instance when the ledger cannot be written)",
    ),
    AlertKind.BUDGET: (
        "watch_jobs",
        "a team's month spend reached one of `budgets.<team>.alert_thresholds`",
        "warning below 100% of the budget, critical at it",
        f"{_duration(ONCE_PER_MONTH_SECONDS)}: once per threshold and month",
    ),
    AlertKind.IDLE: (
        "detect_idle",
        "a running job's GPUs stayed idle for its policy's window"
        " (an alert, a warning before a stop, or the stop)",
        "info for an alert, warning for a warning or a stop",
        f"{_duration(ONCE_PER_JOB_SECONDS)} per job, act and idle period",
    ),
    AlertKind.HUNG: (
        "detect_idle",
        "a running job's GPUs are busy but it wrote no checkpoint for its policy's intervals",
        "info for an alert, warning for a stop and requeue",
        f"{_duration(ONCE_PER_JOB_SECONDS)} per job, act and hung period",
    ),
    ALERT_KIND_REJECTED: (
        "submit_job",
        "a dropped spec (or some of its jobs) was rejected,"
        " or a badly named file was dropped under a team's folder",
        Severity.WARNING,
        "none: one per rejected drop (a re-delivered drop is answered once)",
    ),
    ALERT_KIND_NOT_A_SUBMITTER: (
        "record_uploader",
        "a drop was written by a principal not in `teams.<team>.submitters`"
        " (the bucket policy and the config drifted)",
        Severity.WARNING,
        "none: one per upload request",
    ),
}

#: SNS message attribute -> what it holds (every attribute is a String, for subscription filter policies).
ATTRIBUTES: dict[str, str] = {
    "severity": "critical, warning or info",
    "team": "the team that owns the share, from the config (`none` when no team does)",
    "tier": "the tier of the share identifier in team x tier, else the job's (`none` when unknown)",
    "share": "the share identifier or quota share name (`none` for a CPU FIFO job)",
    "kind": "one of the kinds below",
    "queue": "the job queue's name (`unknown` or `none` when the alert has none)",
}


def kinds() -> list[str]:
    """Every alert kind the code can send."""
    return [k.value for k in AlertKind] + [ALERT_KIND_REJECTED, ALERT_KIND_NOT_A_SUBMITTER]


def _attributes() -> list[str]:
    sample = Alert(AlertKind.FAILURE, Severity.INFO, "s", "q", "subject", {}, "key")
    return list(sample.attributes)


def page(repo: Path) -> str:
    """The alerts reference page."""
    missing = [k for k in kinds() if k not in NOTES]
    undocumented = [a for a in _attributes() if a not in ATTRIBUTES]
    if missing or undocumented:
        raise ValueError(
            f"alert kinds {missing} or attributes {undocumented} have no entry in "
            "shareplane_cli/reference/alerts.py: add one"
        )
    kind_rows = [(code(k), *(str(v) for v in NOTES[k])) for k in kinds()]
    attribute_rows = [(code(a), ATTRIBUTES[a]) for a in _attributes()]
    intro = (
        "Every alert goes to one SNS topic (the stack output `AlertsTopicArn`; the template's "
        "`AlertEmail` subscribes an address). Each message carries the attributes below, so a team "
        'subscribes its own endpoint with a filter policy such as `{"team": ["ProdExp1"]}` (add '
        '`"tier": ["HIGHPRI"]` for its urgent work only, or `"kind": ["budget"]`). The subject is '
        "printable ASCII of at most 100 characters; the body is JSON (job, team, tier, share, class, a "
        "reason excerpt, attempt, decision, a link to the training job's logs, the suggested fix). "
        "The same job (or share, for a storm) and kind stays silent for its quiet window, measured in "
        "event time, through a conditional write in the jobs table."
    )
    return markdown.page(
        "Alerts",
        intro,
        "## SNS message attributes\n\n" + table(("attribute", "what it holds"), attribute_rows),
        "## Kinds\n\n" + table(("kind", "sent by", "when", "severity", "quiet window"), kind_rows),
    )
