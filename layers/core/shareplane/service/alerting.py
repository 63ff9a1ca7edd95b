"""Sending an alert once: claim its dedupe item, publish, confirm (or give the claim back).

The failure path, the watch and reclaim send their alerts through ``send_alert``; each brings a
ledger with the claim/confirm/release items (the jobs table's ``ALERT#`` items).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from ..domain.alerts.alert import Alert, FailureMetricEvent, owned_by
from ..domain.config.shares import SharesConfig
from .ports import AlertPublisher, MetricsSink

#: Repeated-preemption and blocked-queue alerts: once per job for a week.
ONCE_PER_JOB_SECONDS = 7 * 24 * 3600


class AlertLedger(Protocol):
    """The alert dedupe items (FailureLedger's and ReclaimLedger's alert half)."""

    def claim_alert(
        self, alert: Alert, now: float, quiet_seconds: float, *, claimed_at: float | None = None
    ) -> bool: ...

    def confirm_alert(self, alert: Alert, now: float) -> None: ...

    def release_alert(self, alert: Alert) -> None: ...


class AlertSender(Protocol):
    """What sending an alert needs (the failure path's ports, or reclaim's)."""

    @property
    def ledger(self) -> AlertLedger: ...

    @property
    def alerts(self) -> AlertPublisher: ...

    @property
    def metrics(self) -> MetricsSink: ...

    @property
    def clock(self) -> Callable[[], float]: ...

    @property
    def config(self) -> SharesConfig: ...


def send_alert(alert: Alert, ports: AlertSender, *, quiet_seconds: float, now: float) -> bool:
    """Publish ``alert`` unless the same one (job or share, and kind) is quiet at ``now``; True when sent."""
    alert = owned_by(alert, ports.config)
    # The quiet window runs in event time; how long an unconfirmed claim has been held (a sender that
    # died before confirming) is processing time, which only the clock knows.
    if not ports.ledger.claim_alert(alert, now, quiet_seconds, claimed_at=ports.clock()):
        return False
    try:
        ports.alerts.publish(alert.subject, dict(alert.body), alert.attributes)
    except Exception:
        ports.ledger.release_alert(alert)  # let the redelivery send it
        raise
    ports.ledger.confirm_alert(alert, now)
    count_failure_metric(
        ports, "Alerts", {"Kind": alert.kind.value, "Severity": alert.severity.value}, alert.job_arn or ""
    )
    return True


def count_failure_metric(ports: AlertSender, name: str, dimensions: Mapping[str, str], job_arn: str) -> None:
    """Count one failure-path event (a metric of ``FAILURE_METRIC_DIMENSIONS``) for ``job_arn``."""
    ports.metrics.emit([FailureMetricEvent(name, 1)], dimensions, {"jobArn": job_arn})
