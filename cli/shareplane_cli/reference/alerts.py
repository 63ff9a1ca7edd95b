"""The alerts reference: each alert kind, when it is sent, its severity and quiet window; the SNS attributes.

The kinds, who sends each, when, its severity and its quiet window are the code's own table
(``domain.alerts.kinds.ALERT_SPECS``); only the submit path's receipt alert, which has no quiet window
and no row there, is described here (``OTHER_KINDS``). An attribute the code sends but ``ATTRIBUTES``
lacks fails the generator (and so the docs tests).
"""

from __future__ import annotations

from pathlib import Path

from shareplane.domain.alerts.alert import Alert
from shareplane.domain.alerts.kinds import ALERT_SPECS, AlertKind, AlertSpec
from shareplane.domain.config.failure_rules import Severity
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.submit.submission import ALERT_KIND_REJECTED

from . import markdown
from .markdown import code, table

__all__ = ["ATTRIBUTES", "OTHER_KINDS", "kinds", "page"]


def _duration(seconds: float) -> str:
    if seconds % 86400 == 0:
        return f"{int(seconds // 86400)} days ({int(seconds)} s)"
    if seconds % 3600 == 0:
        return f"{int(seconds // 3600)} h ({int(seconds)} s)"
    return f"{int(seconds)} s"


_STORM_WINDOW = SharesConfig.model_fields["failures"].default.storm.window_seconds

#: kind -> (sent by, when, severity, quiet window) of the alerts outside ``ALERT_SPECS``.
OTHER_KINDS: dict[str, tuple[str, str, str, str]] = {
    ALERT_KIND_REJECTED: (
        "submit_job",
        "a dropped spec (or some of its jobs) was rejected,"
        " or a badly named file was dropped under a team's folder",
        Severity.WARNING,
        "none: one per rejected drop (a re-delivered drop is answered once)",
    ),
}


def _row(spec: AlertSpec) -> tuple[str, str, str, str]:
    """A kind's sent by, when, severity and quiet window, from its row in ``ALERT_SPECS``."""
    severity = spec.severity_rule or str(spec.severity)
    if spec.quiet_seconds is None:
        window = (
            f"the storm window, `failures.storm.window_seconds` ({_duration(_STORM_WINDOW)} by default),"
            f" {spec.quiet_per}"
        )
    elif spec.quiet_per.startswith("per "):
        window = f"{_duration(spec.quiet_seconds)} {spec.quiet_per}"
    else:
        window = f"{_duration(spec.quiet_seconds)}: {spec.quiet_per}"
    return spec.sent_by, spec.when, severity, window


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
    return [k.value for k in AlertKind] + list(OTHER_KINDS)


def _attributes() -> list[str]:
    sample = Alert(AlertKind.FAILURE, Severity.INFO, "s", "q", "subject", {}, "key")
    return list(sample.attributes)


def page(repo: Path) -> str:
    """The alerts reference page."""
    undocumented = [a for a in _attributes() if a not in ATTRIBUTES]
    if undocumented:
        raise ValueError(
            f"alert attributes {undocumented} have no entry in shareplane_cli/reference/alerts.py: add one"
        )
    rows = {k.value: _row(ALERT_SPECS[k]) for k in AlertKind} | OTHER_KINDS
    kind_rows = [(code(k), *(str(v) for v in rows[k])) for k in kinds()]
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
