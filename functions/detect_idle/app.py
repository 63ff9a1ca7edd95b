"""detect_idle: flag running jobs whose GPUs stay idle (or that hang), and alert, warn, stop or requeue."""

from __future__ import annotations

from typing import Any

from shareplane import sqs_batch
from shareplane.bootstrap import root
from shareplane.service.detect_idle import handle_message

logger = sqs_batch.logger


def handle(message: Any) -> None:
    """One schedule tick or manual run."""
    if isinstance(message, dict):
        logger.set_correlation_id(message.get("id") or message.get("time"))
    outcome = handle_message(message, root().idle_ports)
    logger.info(
        "idle",
        extra={"result": outcome.result, "acted": outcome.acted, "stopped": outcome.stopped},
    )


lambda_handler = sqs_batch.lambda_handler(handle)
