"""handle_failure: failed GPU jobs from SQS -> requeue with checkpoint resume, or one alert."""

from __future__ import annotations

from typing import Any

from shareplane import sqs_batch
from shareplane.bootstrap import root
from shareplane.schemas.failure import parse_failure_trigger
from shareplane.service.handle_failure import handle_failure

logger = sqs_batch.logger


def handle(message: Any) -> None:
    """One failure event or requeue-due message."""
    trigger = parse_failure_trigger(message)
    logger.set_correlation_id(trigger.job_arn)
    outcome = handle_failure(trigger, root().failure_ports)
    logger.info(
        "handled",
        extra={"result": outcome.result, "decision": outcome.decision, "new_job": outcome.new_job_arn},
    )


lambda_handler = sqs_batch.SqsBatchHandler(handle)
