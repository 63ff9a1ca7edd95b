"""rebalance_shares: on each schedule tick (from SQS), re-fit team shares to demand and audit the change."""

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
from shareplane.schemas.scheduled import parse_scheduled_event, tick_id, tick_time
from shareplane.service.rebalance_shares import rebalance_shares

# The service is named here, not through POWERTOOLS_SERVICE_NAME: with that variable set, Powertools
# adds a "service" dimension to every metric, and the dashboard's SEARCH schemas would miss them all.
logger = Logger(service="shareplane")
processor = BatchProcessor(event_type=EventType.SQS)
copy_config_to_registered_loggers(source_logger=logger, include={"shareplane"})


@guard_permissions
def record_handler(record: SQSRecord) -> None:
    """Run the rebalancer for one tick; a redelivered tick applies nothing twice."""
    event = parse_scheduled_event(json.loads(record.body))
    tick = tick_id(event)
    logger.set_correlation_id(tick)
    deps = dependencies()
    if deps.config is None:
        raise ConfigError("SHAREPLANE_CONFIG", "is not set", "deploy with the SharesConfig parameter")
    outcome = rebalance_shares(
        tick,
        # The tick's time, not the clock's: a redelivered tick decides exactly as its first delivery,
        # and on the local stack cooldowns and wait windows run on the emulator's virtual clock.
        tick_time(event),
        deps.config,
        deps.rebalance_settings,
        deps.batch_policy,
        deps.share_store,
        deps.metrics,
        # The clock only bounds how far ahead of it a tick may be dated; decisions use the tick's time.
        clock_now=time.time(),
    )
    logger.info(
        "rebalanced", extra={"action": outcome.action, "reason": outcome.reason, "plan_id": outcome.plan_id}
    )


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS batch in, partial-batch failures out: a failed tick retries and ends in the DLQ alone."""
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
