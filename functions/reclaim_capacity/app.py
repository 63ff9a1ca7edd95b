"""reclaim_capacity: stop lower-tier jobs (resuming from checkpoint) for a job waiting past its threshold."""

from __future__ import annotations

from typing import Any

from shareplane import sqs_batch
from shareplane.bootstrap import root
from shareplane.schemas.reclaim import ReclaimRun, parse_reclaim_message
from shareplane.service.reclaim_capacity import reclaim

logger = sqs_batch.logger


def handle(message: Any) -> None:
    """One RUNNABLE event, due re-check, schedule tick or manual run."""
    trigger = parse_reclaim_message(message)
    job_arn = None if isinstance(trigger, ReclaimRun) else trigger.job_arn
    logger.set_correlation_id(job_arn or message.get("time"))
    outcome = reclaim(trigger, root().reclaim_ports)
    logger.info(
        "reclaim",
        extra={"result": outcome.result, "stopped": outcome.stopped, "planned": outcome.planned},
    )


lambda_handler = sqs_batch.SqsBatchHandler(handle)
