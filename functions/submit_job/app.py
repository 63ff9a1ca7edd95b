"""submit_job: job specs dropped under submit/ in the drop bucket, from SQS, submitted to AWS Batch."""

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
from shareplane.domain.errors import ConfigError
from shareplane.schemas.s3 import parse_object_created
from shareplane.service.submit_job import SubmitPorts, submit_dropped_spec

# The service is named here, not through POWERTOOLS_SERVICE_NAME: with that variable set, Powertools
# adds a "service" dimension to every metric, and the dashboard's SEARCH schemas would miss them all.
logger = Logger(service="shareplane")
processor = BatchProcessor(event_type=EventType.SQS)
copy_config_to_registered_loggers(source_logger=logger, include={"shareplane"})


@guard_permissions
def record_handler(record: SQSRecord) -> None:
    """Answer every object the S3 event names; a raise fails only this record (SQS retries it)."""
    deps = dependencies()
    if deps.config is None:
        raise ConfigError(
            "SHAREPLANE_CONFIG", "is not set", "deploy the stack with the SharesConfig parameter"
        )
    ports = SubmitPorts(
        deps.spec_bucket,
        deps.batch_jobs,
        deps.store,
        deps.store,
        deps.metrics,
        deps.alerts,
        deps.upload_attributions,
    )
    for dropped in parse_object_created(json.loads(record.body)):
        logger.set_correlation_id(f"s3://{dropped.bucket}/{dropped.key}")
        outcome = submit_dropped_spec(
            dropped, ports, deps.config, deps.submit_queues, int(time.time() * 1000)
        )
        logger.info(
            "answered",
            extra={
                "status": outcome.status,
                "answer": outcome.answer,
                "jobs": [j.job_arn for j in outcome.jobs],
            },
        )


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS batch in, partial-batch failures out: bad records retry and end in the DLQ alone."""
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
