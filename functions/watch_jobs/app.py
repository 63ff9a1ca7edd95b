"""watch_jobs: each tick, reconcile with AWS Batch, predict waiting jobs' starts, escalate, publish gauges."""

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
    report = watch_tick(ports, tick, root().forecast_ports)
    logger.info(
        "watched",
        extra={
            "escalated": len(report.escalated),
            "reconciled": report.reconciled,
            "repaired": report.repaired,
            "training_reconciled": report.training_reconciled,
            "training_repaired": report.training_repaired,
            "unknown_to_batch": len(report.unknown_to_batch),
            "alerts": report.alerts,
            "predicted": len(report.predictions),
            "predictions_stored": report.predictions_stored,
        },
    )


lambda_handler = sqs_batch.SqsBatchHandler(handle)
