"""Deliver a message back to the failure path later: SQS DelaySeconds, or EventBridge Scheduler past 900 s."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from ..domain.failures.record import RequeueDue
from ..domain.reclaim.record import ReclaimDue
from .due_messages import due_body

if TYPE_CHECKING:
    from mypy_boto3_scheduler import EventBridgeSchedulerClient
    from mypy_boto3_sqs import SQSClient

#: SQS's DelaySeconds maximum.
SQS_MAX_DELAY = 900


class QueueRequeueTimer:
    """RequeueTimer on the failure path's own queue (and a one-time schedule for long waits)."""

    def __init__(
        self,
        sqs: SQSClient,
        scheduler: EventBridgeSchedulerClient | None,
        queue_url: str,
        scheduler_role_arn: str | None,
    ) -> None:
        self._sqs = sqs
        self._scheduler = scheduler
        self._queue_url = queue_url
        self._role_arn = scheduler_role_arn
        self._queue_arn: str | None = None

    def after(self, message: RequeueDue | ReclaimDue, delay_seconds: int, now: float) -> None:
        """Send now with a delay (<= 900 s), else create a one-time schedule that sends it when due."""
        body = json.dumps(due_body(message), sort_keys=True)
        delay = max(0, int(delay_seconds))
        if delay <= SQS_MAX_DELAY:
            self._sqs.send_message(QueueUrl=self._queue_url, MessageBody=body, DelaySeconds=delay)
            return
        if not self._role_arn:
            raise RuntimeError("SCHEDULER_ROLE_ARN is not set; waits over 900 s need EventBridge Scheduler")
        if self._scheduler is None:
            raise RuntimeError("this timer has no EventBridge Scheduler client; waits over 900 s need one")
        due = datetime.fromtimestamp(now + delay, UTC).replace(microsecond=0)
        # Named by content: a duplicate creation is a ConflictException, i.e. already scheduled.
        name = "shareplane-rq-" + hashlib.sha256(body.encode()).hexdigest()[:40]
        try:
            self._scheduler.create_schedule(
                Name=name,
                ScheduleExpression=f"at({due.strftime('%Y-%m-%dT%H:%M:%S')})",
                ScheduleExpressionTimezone="UTC",
                FlexibleTimeWindow={"Mode": "OFF"},
                Target={"Arn": self.queue_arn, "RoleArn": self._role_arn, "Input": body},
                ActionAfterCompletion="DELETE",
                Description="shareplane: a failed job's requeue is due",
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConflictException":
                raise

    @property
    def queue_arn(self) -> str:
        """The queue's ARN (read once)."""
        if self._queue_arn is None:
            attributes = self._sqs.get_queue_attributes(QueueUrl=self._queue_url, AttributeNames=["QueueArn"])
            self._queue_arn = str(attributes["Attributes"]["QueueArn"])
        return self._queue_arn
