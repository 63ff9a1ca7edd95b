"""record_state: every Batch and SageMaker job state change, from SQS, into DynamoDB and EMF metrics."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from shareplane.bootstrap import dependencies, guard_permissions
from shareplane.schemas import parse_state_event
from shareplane.service.record_state import record_observation

# The service is named here, not through POWERTOOLS_SERVICE_NAME: with that variable set, Powertools
# adds a "service" dimension to every metric, and the dashboard's SEARCH schemas would miss them all.
logger = Logger(service="shareplane")
processor = BatchProcessor(event_type=EventType.SQS)
copy_config_to_registered_loggers(source_logger=logger, include={"shareplane"})


@guard_permissions
def record_handler(record: SQSRecord) -> None:
    """Parse one EventBridge event from the queue and record it; a raise fails only this record."""
    observation = parse_state_event(json.loads(record.body))
    logger.set_correlation_id(
        getattr(observation, "job_arn", None) or getattr(observation, "training_job_arn", None)
    )
    deps = dependencies()
    outcome = record_observation(observation, deps.store, deps.metrics, deps.config)
    logger.info(
        "recorded", extra={"entity": outcome.entity, "decision": outcome.decision, "status": outcome.status}
    )


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS batch in, partial-batch failures out: bad records retry and end in the DLQ alone."""
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
