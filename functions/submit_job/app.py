"""submit_job: job specs dropped under submit/ in the drop bucket, from SQS, submitted to AWS Batch."""

from __future__ import annotations

from typing import Any

from shareplane import sqs_batch
from shareplane.bootstrap import root
from shareplane.schemas.s3 import parse_object_created
from shareplane.service.submit_job import submit_dropped_spec

logger = sqs_batch.logger

#: Seconds of the invocation the receipt's forecast leaves to the rest of the batch: this drop's answer,
#: copy and delete (three S3 requests), and the next records, whose submissions come before any forecast.
RESERVE_SECONDS = 15.0


def forecast_time_left() -> float:
    """Seconds of this invocation the receipt's forecast may still take."""
    remaining = lambda_handler.remaining_seconds()
    return float("inf") if remaining is None else remaining - RESERVE_SECONDS


def handle(message: Any) -> None:
    """Answer every object the S3 event names."""
    composition = root()
    ports = composition.submit_ports
    for dropped in parse_object_created(message):
        logger.set_correlation_id(f"s3://{dropped.bucket}/{dropped.key}")
        now_ms = int(composition.clock() * 1000)
        outcome = submit_dropped_spec(dropped, ports, now_ms, time_left=forecast_time_left)
        logger.info(
            "answered",
            extra={
                "status": outcome.status,
                "answer": outcome.answer,
                "jobs": [j.job_arn for j in outcome.jobs],
            },
        )


lambda_handler = sqs_batch.SqsBatchHandler(handle)
