"""record_uploader: CloudTrail's data events of drops (who uploaded them), from SQS, onto their jobs."""

from __future__ import annotations

from typing import Any

from shareplane import sqs_batch
from shareplane.bootstrap import root
from shareplane.schemas.cloudtrail import parse_s3_write
from shareplane.service.record_uploader import record_upload

logger = sqs_batch.logger


def handle(message: Any) -> None:
    """Store one upload's principal and write it on its jobs."""
    attribution = parse_s3_write(message)
    if attribution is None:
        logger.info("refused write: S3 created nothing")
        return
    logger.set_correlation_id(f"s3://{attribution.bucket}/{attribution.key}")
    composition = root()
    outcome = record_upload(attribution, composition.uploader_ports, int(composition.clock()))
    logger.info(
        "uploader recorded",
        extra={"check": outcome.check, "jobs": list(outcome.jobs_updated), "alerted": outcome.alerted},
    )


lambda_handler = sqs_batch.SqsBatchHandler(handle)
