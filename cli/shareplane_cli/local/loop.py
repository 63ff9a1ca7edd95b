"""One turn of the local stack: fire the template's due schedules on the virtual clock, poll the queues."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .emulator import Schedule, ScheduleClock, scheduled_event, template_schedules
from .runner import FunctionRunner
from .stack import ACCOUNT, REGION, LocalStack


@dataclass
class StackLoop:
    """Drives a started LocalStack with an emulator: schedules, then every function's queue."""

    stack: LocalStack
    runner: FunctionRunner
    report: Callable[[str], None] = lambda _message: None
    clock: ScheduleClock = field(init=False)
    skipped: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        assert self.stack.translated is not None and self.stack.emulator is not None, "start the stack first"
        resources = {**self.stack.translated.cloudformation["Resources"], **self.stack.translated.held_back}
        schedules, self.skipped = template_schedules(resources, self.stack.resolve)
        self.clock = ScheduleClock(schedules, start=self.stack.emulator.virtual_now())

    def step(self) -> int:
        """Fire what is due, poll each queue once; returns how many records were handled.

        The emulator's clock is held while a schedule fires or a handler runs: the handlers' own time
        passes as no virtual time (on AWS a Lambda answers in about a second, while here at 400x a
        second of handler time would be minutes of cluster time).
        """
        hold = self.stack.clock.held
        for schedule in self.clock.due(self.stack.emulator.virtual_now()):
            with hold():
                self.fire(schedule)
        return sum(self.runner.poll_once(f, hold) for f in self.stack.functions if f.queue_logical_id)

    def run_until(self, deadline: float, done: Callable[[], bool], what: str) -> None:
        """Step until ``done()``; past ``deadline`` (``time.monotonic()``), fail naming ``what``."""
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"not reached by the wall-clock deadline: {what}")
            self.step()
            time.sleep(0.05)

    def fire(self, schedule: Schedule) -> None:
        """Deliver one schedule's input to its target: a function of the template, or a queue."""
        stack = self.stack
        function = next((f for f in stack.functions if f.logical_id == schedule.target), None)
        try:
            payload = schedule.input
            if payload is None:  # a schedule rule: the Scheduled Event, stamped with the virtual time
                emulator = stack.emulator
                rule = stack.physical_ids.get(schedule.logical_id, schedule.logical_id)
                arn = rule if rule.startswith("arn:") else f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{rule}"
                payload = scheduled_event(arn, emulator.model.ms(emulator.virtual_now()), ACCOUNT, REGION)
            if function is not None:
                self.runner.invoke(function, payload)
            else:
                stack.client("sqs").send_message(
                    QueueUrl=stack.queue_url(schedule.target), MessageBody=json.dumps(payload)
                )
            self.report(f"schedule {schedule.logical_id} -> {schedule.target}")
        except Exception as exc:  # noqa: BLE001 - a failing scheduled run is reported; the stack keeps running
            self.report(f"[red]schedule {schedule.logical_id} -> {schedule.target} failed:[/] {exc!r}")
