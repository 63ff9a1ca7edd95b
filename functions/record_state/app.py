"""record_state: every Batch and SageMaker job state change, from SQS, into DynamoDB and EMF metrics."""

from __future__ import annotations

from typing import Any

from shareplane import sqs_batch
from shareplane.bootstrap import root
from shareplane.schemas import parse_state_event
from shareplane.service.record_state import record_state

logger = sqs_batch.logger


def handle(message: Any) -> None:
    """Parse one EventBridge event from the queue and record it."""
    observation = parse_state_event(message)
    logger.set_correlation_id(
        getattr(observation, "job_arn", None) or getattr(observation, "training_job_arn", None)
    )
    outcome = record_state(observation, root().record_state_ports)
    logger.info(
        "recorded", extra={"entity": outcome.entity, "decision": outcome.decision, "status": outcome.status}
    )


lambda_handler = sqs_batch.SqsBatchHandler(handle)
