"""The one shape of every handler: an SQS batch in, partial-batch failures out.

A function's ``app.py`` makes its ``lambda_handler`` an ``SqsBatchHandler`` of what to do with
one message (the record's body, parsed): parse it, run its use case on the composition root's
ports, log what it did. Everything else every handler does the same way is here: the Powertools
logger and batch processor, and the permission guard (an AccessDenied is alerted once, see
``service.permission_denied``). A raise fails only its own record: SQS retries it, and after
maxReceiveCount it goes to the DLQ alone.

A handler imports this module first (``from shareplane import sqs_batch`` sorts before every
``shareplane.*`` import): Powertools' batch utility builds its parser models, which no handler
uses, when pydantic is already imported, and the shares config and event schemas import pydantic
(docs/design/cold-start.md has what that cost).
``tests/unit/test_architecture.py`` fails when a handler loads those models.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from .bootstrap import guard_permissions

# The service is named here, not through POWERTOOLS_SERVICE_NAME: with that variable set, Powertools
# adds a "service" dimension to every metric, and the dashboard's SEARCH schemas would miss them all.
logger = Logger(service="shareplane")


class SqsBatchHandler:
    """A Lambda handler of SQS batches that hands each record's message to ``record_handler``."""

    def __init__(self, handle_message: Callable[[Any], None]) -> None:
        #: The function's own message handler behind the permission guard: what runs for each record.
        self.record_handler = guard_permissions(handle_message)
        #: The invocation being handled (None between invocations): its remaining time bounds optional work.
        self.context: LambdaContext | None = None
        self._processor = BatchProcessor(event_type=EventType.SQS)
        self._handle_batch = logger.inject_lambda_context(self._process)
        # Made here, once the handler module has imported its path: the loggers of those modules
        # (shareplane.*) log as this one does (JSON, with the correlation id).
        copy_config_to_registered_loggers(source_logger=logger, include={"shareplane"})

    def __call__(self, event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        result: dict[str, Any] = self._handle_batch(event, context)
        return result

    def remaining_seconds(self) -> float | None:
        """Seconds left in the invocation being handled (None outside one)."""
        context = self.context
        return None if context is None else context.get_remaining_time_in_millis() / 1000

    def _process(self, event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        self.context = context
        try:
            response = process_partial_response(
                event=event, record_handler=self._record, processor=self._processor, context=context
            )
        finally:
            self.context = None
        return dict(response)

    def _record(self, record: SQSRecord) -> None:
        self.record_handler(json.loads(record.body))
