"""detect_idle: flag running jobs whose GPUs stay idle (or that hang), and alert, warn, stop or requeue."""

from __future__ import annotations

from typing import Any

from shareplane import sqs_batch
from shareplane.bootstrap import root
from shareplane.schemas.idle import parse_idle_message
from shareplane.service.detect_idle import detect_idle

logger = sqs_batch.logger


def handle(message: Any) -> None:
    """One schedule tick or manual run."""
    request = parse_idle_message(message)
    logger.set_correlation_id(request.event_id or message.get("time"))
    outcome = detect_idle(request, root().idle_ports)
    logger.info(
        "idle",
        extra={"result": outcome.result, "acted": outcome.acted, "stopped": outcome.stopped},
    )


lambda_handler = sqs_batch.SqsBatchHandler(handle)
