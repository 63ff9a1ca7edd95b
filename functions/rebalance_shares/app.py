"""rebalance_shares: on each schedule tick (from SQS), re-fit team shares to demand and audit the change."""

from __future__ import annotations

from typing import Any

from shareplane import sqs_batch
from shareplane.bootstrap import root
from shareplane.schemas.scheduled import parse_scheduled_event, tick_id, tick_time
from shareplane.service.rebalance_shares import rebalance_tick

logger = sqs_batch.logger


def handle(message: Any) -> None:
    """Run the rebalancer for one tick; a redelivered tick applies nothing twice."""
    event = parse_scheduled_event(message)
    tick = tick_id(event)
    logger.set_correlation_id(tick)
    composition = root()
    outcome = rebalance_tick(
        tick,
        # The tick's time, not the clock's: a redelivered tick decides exactly as its first delivery,
        # and on the local stack cooldowns and wait windows run on the emulator's virtual clock.
        tick_time(event),
        composition.rebalance_ports,
        # The clock only bounds how far ahead of it a tick may be dated; decisions use the tick's time.
        clock_now=composition.clock(),
    )
    logger.info(
        "rebalanced", extra={"action": outcome.action, "reason": outcome.reason, "plan_id": outcome.plan_id}
    )


lambda_handler = sqs_batch.SqsBatchHandler(handle)
