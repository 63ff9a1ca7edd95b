"""reclaim_capacity: stop lower-tier jobs (resuming from checkpoint) for a job waiting past its threshold."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from shareplane.bootstrap import guard_permissions, reclaim_ports
from shareplane.service.reclaim_capacity import handle_message

# The service is named here, not through POWERTOOLS_SERVICE_NAME: with that variable set, Powertools
# adds a "service" dimension to every metric, and the dashboard's SEARCH schemas would miss them all.
logger = Logger(service="shareplane")
processor = BatchProcessor(event_type=EventType.SQS)
copy_config_to_registered_loggers(source_logger=logger, include={"shareplane"})


@guard_permissions
def record_handler(record: SQSRecord) -> None:
    """One RUNNABLE event, due re-check, schedule tick or manual run; a raise fails only this record."""
    message = json.loads(record.body)
    detail = message.get("detail") or {} if isinstance(message, dict) else {}
    logger.set_correlation_id(message.get("jobArn") or detail.get("jobArn") or message.get("time"))
    outcome = handle_message(message, reclaim_ports())
    logger.info(
        "reclaim",
        extra={"result": outcome.result, "stopped": outcome.stopped, "planned": outcome.planned},
    )


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS batch in, partial-batch failures out: bad records retry and end in the DLQ alone."""
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
