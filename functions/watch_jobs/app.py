"""watch_jobs: every tick, escalate jobs past their wait SLO, reconcile with AWS Batch, publish gauges."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from shareplane.bootstrap import failure_ports, guard_permissions
from shareplane.service.watch_jobs import read_tick, watch_tick

# The service is named here, not through POWERTOOLS_SERVICE_NAME: with that variable set, Powertools
# adds a "service" dimension to every metric, and the dashboard's SEARCH schemas would miss them all.
logger = Logger(service="shareplane")
processor = BatchProcessor(event_type=EventType.SQS)
copy_config_to_registered_loggers(source_logger=logger, include={"shareplane"})


@guard_permissions
def record_handler(record: SQSRecord) -> None:
    """One tick (the schedule's Scheduled Event, or {"shareplane":"watch"} by hand): one watch run."""
    ports = failure_ports()
    tick = read_tick(json.loads(record.body), ports)
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


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS batch of ticks in, partial-batch failures out."""
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
