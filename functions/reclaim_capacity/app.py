"""reclaim_capacity: stop lower-tier jobs (resuming from checkpoint) for a job waiting past its threshold."""

from __future__ import annotations

from typing import Any

from shareplane import sqs_batch
from shareplane.bootstrap import root
from shareplane.service.reclaim_capacity import handle_message

logger = sqs_batch.logger


def handle(message: Any) -> None:
    """One RUNNABLE event, due re-check, schedule tick or manual run."""
    detail = message.get("detail") or {} if isinstance(message, dict) else {}
    logger.set_correlation_id(message.get("jobArn") or detail.get("jobArn") or message.get("time"))
    outcome = handle_message(message, root().reclaim_ports)
    logger.info(
        "reclaim",
        extra={"result": outcome.result, "stopped": outcome.stopped, "planned": outcome.planned},
    )


lambda_handler = sqs_batch.lambda_handler(handle)
