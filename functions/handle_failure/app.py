"""handle_failure: failed GPU jobs from SQS -> requeue with checkpoint resume, or one alert."""

from __future__ import annotations

from typing import Any

from shareplane.bootstrap import root
from shareplane.service.handle_failure import handle_message
from shareplane.sqs_batch import logger, sqs_batch_handler


def handle(message: Any) -> None:
    """Handle one failure event or requeue-due message."""
    detail = message.get("detail") or {}
    logger.set_correlation_id(message.get("jobArn") or detail.get("jobArn") or detail.get("TrainingJobArn"))
    outcome = handle_message(message, root().failure_ports)
    logger.info(
        "handled",
        extra={"result": outcome.result, "decision": outcome.decision, "new_job": outcome.new_job_arn},
    )


lambda_handler = sqs_batch_handler(handle)
