"""One turn of the local stack: let virtual time pass, fire the template's due schedules, poll the queues."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from gpusim.engine import SteppedClock

from .emulator import Schedule, ScheduleClock, scheduled_event, template_schedules
from .runner import FunctionRunner
from .stack import ACCOUNT, REGION, LocalStack

#: At most this much virtual time passes between two turns, however long the machine took between
#: them: a turn submits, fires schedules and polls queues, so a longer stall would pass as cluster
#: time in which nothing was decided (30 s: a tenth of the 5-minute schedules and the demo's threshold).
MAX_VIRTUAL_SECONDS_PER_STEP = 30.0


@dataclass
class StackLoop:
    """Drives a started LocalStack with an emulator: schedules, then every function's queue.

    On a wall clock (``HoldableClock``, ``shareplane up``) virtual time passes as the wall clock runs,
    at most ``max_virtual_seconds_per_step`` a turn. On a ``SteppedClock`` (the demo, the tests) it
    passes only when a turn found nothing to do: the next turn first moves it to the next moment
    something is due (a schedule, a delayed message, the caller's ``wake_at``), at most
    ``max_virtual_seconds_per_step`` ahead, and waits until the emulator's events of that time are on
    the embedded EventBridge, so no turn polls before they arrive.
    """

    stack: LocalStack
    runner: FunctionRunner
    report: Callable[[str], None] = lambda _message: None
    #: Virtual seconds the clock may run between two turns (None: as the wall clock runs, for a
    #: driver that sleeps between turns on purpose and whose user acts in wall time, as ``up``).
    max_virtual_seconds_per_step: float | None = MAX_VIRTUAL_SECONDS_PER_STEP
    clock: ScheduleClock = field(init=False)
    skipped: dict[str, str] = field(init=False)
    #: Whether the last turn found nothing to do (on a SteppedClock, the next one moves the clock).
    _idle: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        assert self.stack.translated is not None and self.stack.emulator is not None, "start the stack first"
        resources = {**self.stack.translated.cloudformation["Resources"], **self.stack.translated.held_back}
        schedules, self.skipped = template_schedules(resources, self.stack.resolve)
        self.clock = ScheduleClock(schedules, start=self.stack.emulator.virtual_now())

    @property
    def stepped(self) -> bool:
        """Whether virtual time passes only between turns (a SteppedClock), not with the wall clock."""
        return isinstance(self.stack.clock, SteppedClock)

    def step(self, wake_at: float | None = None) -> int:
        """Let time pass, fire what is due, poll each queue once; returns how many records were handled.

        ``wake_at``: a virtual time the caller acts at (a submission), which a stepped turn does not
        pass. The emulator's clock is held while a schedule fires or a handler runs: the handlers'
        own time passes as no virtual time (on AWS a Lambda answers in about a second, while here at
        400x a second of handler time would be minutes of cluster time). The messages a handler
        delays wait on the virtual clock too.
        """
        stack, emulator = self.stack, self.stack.emulator
        assert emulator is not None
        if self.stepped:
            self._advance(wake_at)
        elif self.max_virtual_seconds_per_step is not None:
            stack.clock.run_at_most(self.max_virtual_seconds_per_step / emulator.speed)
        if stack.delays is not None:
            now = emulator.virtual_now()
            stack.delays.capture(now)  # sent outside a turn (a drain): counted from this turn
            stack.delays.release(now)
        fired = self.clock.due(emulator.virtual_now())
        for schedule in fired:
            with self.handling():
                self.fire(schedule)
        handled = sum(self.runner.poll_once(f, self.handling) for f in stack.functions if f.queue_logical_id)
        self._idle = not fired and not handled
        return handled

    def _advance(self, wake_at: float | None) -> None:
        """On a SteppedClock: after an idle turn, move to the next moment something is due; then let
        the emulator run what is due and put its events on EventBridge."""
        emulator = self.stack.emulator
        assert emulator is not None and isinstance(self.stack.clock, SteppedClock)
        now = emulator.virtual_now()
        if self._idle:
            bound = self.max_virtual_seconds_per_step or MAX_VIRTUAL_SECONDS_PER_STEP
            delays = self.stack.delays
            due = [self.clock.next_due(), delays.next_due() if delays else None, wake_at]
            target = min([now + bound, *(t for t in due if t is not None and t > now)])
            self.stack.clock.advance((target - now) / emulator.speed)
        emulator.wait_for_events()

    @contextmanager
    def handling(self) -> Iterator[None]:
        """The clock held while handlers work; then the delays they asked for, counted from that time."""
        stack, emulator = self.stack, self.stack.emulator
        assert emulator is not None
        with stack.clock.held():
            try:
                yield
            finally:
                if stack.delays is not None:
                    stack.delays.capture(emulator.virtual_now())

    def turn(self, poll_seconds: float) -> int:
        """One turn of a loop paced by the wall clock (``shareplane up``): a step, then ``poll_seconds``
        of sleep when it found nothing to do; returns how many records it handled."""
        handled = self.step()
        if not handled:
            time.sleep(poll_seconds)
        return handled

    def run_until(self, deadline: float, done: Callable[[], bool], what: str) -> None:
        """Step until ``done()``; past ``deadline`` (``time.monotonic()``), fail naming ``what``."""
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"not reached by the wall-clock deadline: {what}")
            self.step()
            if not self.stepped:
                time.sleep(0.05)

    def fire(self, schedule: Schedule) -> None:
        """Deliver one schedule's input to its target: a function of the template, or a queue."""
        stack = self.stack
        function = next((f for f in stack.functions if f.logical_id == schedule.target), None)
        try:
            payload = schedule.input
            if payload is None:  # a schedule rule: the Scheduled Event, stamped with the virtual time
                emulator = stack.running_emulator()
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
