"""watch_jobs: every tick, escalate jobs past their wait SLO, reconcile with AWS Batch, publish gauges."""

from __future__ import annotations

from typing import Any

from shareplane import sqs_batch
from shareplane.bootstrap import root
from shareplane.service.watch_jobs import read_tick, watch_tick

logger = sqs_batch.logger


def handle(message: Any) -> None:
    """One tick (the schedule's Scheduled Event, or {"shareplane":"watch"} by hand): one watch run."""
    ports = root().watch_ports
    tick = read_tick(message, ports)
    logger.set_correlation_id(tick.tick)
    report = watch_tick(ports, tick)
    logger.info(
        "watched",
        extra={
            "escalated": len(report.escalated),
            "reconciled": report.reconciled,
            "repaired": report.repaired,
            "unknown_to_batch": len(report.unknown_to_batch),
            "alerts": report.alerts,
        },
    )


lambda_handler = sqs_batch.lambda_handler(handle)
