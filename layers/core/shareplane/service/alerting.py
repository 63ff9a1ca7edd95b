"""Sending an alert once: claim its dedupe item, publish, confirm (or give the claim back).

Every path that alerts (the failure path, the watch, reclaim, the idle detector, the uploader) carries
one ``AlertSender`` in its ports bundle. It brings the alert ledger (the jobs table's ``ALERT#``
items, which `shareplane alerts` lists), the topic and the Alerts metric; the quiet window is the
kind's, from ``domain.alerts.kinds.ALERT_SPECS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..domain.alerts.alert import Alert, FailureMetricEvent, owned_by
from ..domain.alerts.kinds import quiet_seconds
from ..domain.config.shares import SharesConfig
from .ports import AlertLedger, AlertPublisher, MetricsSink


@dataclass(frozen=True)
class AlertSender:
    """The one way an alert goes out: deduplicated in the alert ledger, published, counted."""

    ledger: AlertLedger
    topic: AlertPublisher
    metrics: MetricsSink
    #: Who owns each share (routing), and the storm window (the storm alert's quiet window).
    config: SharesConfig
    #: The wall clock: only how long an unconfirmed claim has been held (a processing lease).
    clock: Callable[[], float]

    def send(self, alert: Alert, now: float) -> bool:
        """Publish ``alert`` unless the same (job or share, and kind) is quiet at ``now``; True if sent."""
        alert = owned_by(alert, self.config)
        # The quiet window runs in event time; how long an unconfirmed claim has been held (a sender
        # that died before confirming) is processing time, which only the clock knows.
        quiet = quiet_seconds(alert.kind, self.config)
        if not self.ledger.claim_alert(alert, now, quiet, claimed_at=self.clock()):
            return False
        try:
            self.topic.publish(alert.subject, dict(alert.body), alert.attributes)
        except Exception:
            self.ledger.release_alert(alert)  # let the redelivery send it
            raise
        self.ledger.confirm_alert(alert, now)
        dimensions = {"Kind": alert.kind.value, "Severity": alert.severity.value}
        count_failure_metric(self.metrics, "Alerts", dimensions, alert.job_arn or "")
        return True


def count_failure_metric(
    metrics: MetricsSink, name: str, dimensions: Mapping[str, str], job_arn: str
) -> None:
    """Count one failure-path event (a metric of ``FAILURE_METRIC_DIMENSIONS``) for ``job_arn``."""
    metrics.emit([FailureMetricEvent(name, 1)], dimensions, {"jobArn": job_arn})
