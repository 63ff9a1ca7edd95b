"""Each periodic run's tick watermark in the jobs table (``TICK#<runner>`` / ``TICK``: ``lastTick``).

The watch and reclaim record the newest schedule tick they handled here, one item per runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .dynamodb_items import advance_tick_watermark, tick_watermark

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class DynamoTickWatermarks:
    """TickWatermarks on the jobs table (a conditional update only ever moves a watermark forward)."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def last_tick(self, runner: str) -> str | None:
        """The newest schedule tick ``runner`` handled."""
        return tick_watermark(self._client, self._table, runner)

    def advance_tick(self, runner: str, tick: str) -> None:
        """Move ``runner``'s tick watermark forward to ``tick``."""
        advance_tick_watermark(self._client, self._table, runner, tick)
