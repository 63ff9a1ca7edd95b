"""handle_failure: failed GPU jobs from SQS -> requeue with checkpoint resume, or one alert."""

from __future__ import annotations

from typing import Any

from shareplane import sqs_batch
from shareplane.bootstrap import root
from shareplane.service.handle_failure import handle_message

logger = sqs_batch.logger


def handle(message: Any) -> None:
    """Handle one failure event or requeue-due message."""
    detail = message.get("detail") or {}
    logger.set_correlation_id(message.get("jobArn") or detail.get("jobArn") or detail.get("TrainingJobArn"))
    outcome = handle_message(message, root().failure_ports)
    logger.info(
        "handled",
        extra={"result": outcome.result, "decision": outcome.decision, "new_job": outcome.new_job_arn},
    )


lambda_handler = sqs_batch.lambda_handler(handle)
