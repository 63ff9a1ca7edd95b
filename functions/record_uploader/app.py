"""record_uploader: CloudTrail's data events of drops (who uploaded them), from SQS, onto their jobs."""

from __future__ import annotations

import json
import time
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from shareplane.bootstrap import dependencies, guard_permissions
from shareplane.schemas.cloudtrail import parse_s3_write
from shareplane.service.record_uploader import UploaderPorts, record_upload

# The service is named here, not through POWERTOOLS_SERVICE_NAME (see submit_job: metric dimensions).
logger = Logger(service="shareplane")
processor = BatchProcessor(event_type=EventType.SQS)
copy_config_to_registered_loggers(source_logger=logger, include={"shareplane"})


@guard_permissions
def record_handler(record: SQSRecord) -> None:
    """Store one upload's principal and write it on its jobs; a raise fails only this record."""
    attribution = parse_s3_write(json.loads(record.body))
    if attribution is None:
        logger.info("refused write: S3 created nothing")
        return
    logger.set_correlation_id(f"s3://{attribution.bucket}/{attribution.key}")
    deps = dependencies()
    outcome = record_upload(
        attribution,
        UploaderPorts(deps.upload_attributions, deps.alerts),
        deps.require_config(),
        int(time.time()),
    )
    logger.info(
        "uploader recorded",
        extra={"check": outcome.check, "jobs": list(outcome.jobs_updated), "alerted": outcome.alerted},
    )


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS batch in, partial-batch failures out: bad records retry and end in the DLQ alone."""
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
