"""The clock owner: a heap of (time, priority, seq, callback, arg); time moves only in ``step``.

``RealtimeEngine`` is the same engine on a scaled wall clock (the emulator's mode): an HTTP server
thread takes ``lock``, calls ``advance_to_now()`` and then reads or changes the model.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

URGENT = 0
NORMAL = 1
#: Runs after every other event at the same instant: the scheduler pass, so it sees all of them.
LATE = 2

Callback = Callable[[Any], None]


class Engine:
    """Discrete-event engine: one clock, one heap, FIFO tie-break among equal (time, priority)."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._queue: list[tuple[float, int, int, Callback, Any]] = []
        self._seq = itertools.count()

    @property
    def now(self) -> float:
        """Virtual seconds since the start of the run."""
        return self._now

    def schedule(self, delay: float, callback: Callback, arg: Any = None, priority: int = NORMAL) -> None:
        """Run ``callback(arg)`` ``delay`` virtual seconds from now (never in the past)."""
        heapq.heappush(self._queue, (self._now + max(delay, 0.0), priority, next(self._seq), callback, arg))

    def schedule_at(self, when: float, callback: Callback, arg: Any = None, priority: int = NORMAL) -> None:
        """Run ``callback(arg)`` at virtual time ``when`` (clamped to now)."""
        heapq.heappush(self._queue, (max(when, self._now), priority, next(self._seq), callback, arg))

    def peek(self) -> float:
        """Time of the next event, or infinity when nothing is scheduled."""
        return self._queue[0][0] if self._queue else float("inf")

    def step(self) -> None:
        """Pop the next event, move the clock to it and run it."""
        when, _, _, callback, arg = heapq.heappop(self._queue)
        self._now = when
        callback(arg)

    def run(self, until: float | None = None) -> None:
        """Run events until the heap is empty, or up to ``until`` (then the clock stands at ``until``)."""
        queue = self._queue
        pop = heapq.heappop
        if until is None:
            while queue:
                when, _, _, callback, arg = pop(queue)
                self._now = when
                callback(arg)
            return
        while queue and queue[0][0] <= until:
            when, _, _, callback, arg = pop(queue)
            self._now = when
            callback(arg)
        if until > self._now:
            self._now = float(until)


class HoldableClock:
    """A monotonic wall clock that can be held still and bounded; a ``RealtimeEngine`` on it follows.

    The local stack holds it while its handlers work: on AWS a Lambda answers an event in about a
    second, but on a loaded laptop at 400x a second of handler time would pass as minutes of
    virtual time, and decisions (a reclaim, a requeue) would come that much late. It also bounds how
    far the clock may run before its driver's next turn (``run_at_most``): a stall between turns (the
    machine busy with other work) would otherwise pass as minutes too, and the cluster would move on
    while nothing submitted, polled or decided.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        # (held since, total held before, the reading it may not fall below, nor pass): one tuple,
        # read and replaced at once, because the emulator's threads read the clock while the loop
        # holds and bounds it. The floor is the reading when a hold or a bound last changed the
        # arithmetic, so rounding in it never takes a reading back.
        self._state: tuple[float | None, float, float, float] = (None, 0.0, -math.inf, math.inf)

    def __call__(self) -> float:
        held_at, held_for, floor, ceiling = self._state
        return min(max((self._clock() if held_at is None else held_at) - held_for, floor), ceiling)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the clock for the duration of the block (nested holds are one hold)."""
        held_at, held_for, floor, ceiling = self._state
        if held_at is not None:
            yield
            return
        since = self._clock()
        self._state = (since, held_for, floor, ceiling)
        try:
            yield
        finally:
            reading = self()
            _, held_for, _, ceiling = self._state
            self._state = (None, held_for + self._clock() - since, reading, ceiling)

    def run_at_most(self, seconds: float) -> None:
        """From its reading now, let the clock run at most ``seconds`` until the next call.

        Time it stood at its bound counts as held, so the reading goes on from there, never back.
        The bound stays until the next call: a driver that stops calling stops the clock, so code
        that waits for the emulator to move must go on calling (turn the loop) while it waits.
        """
        reading = self()
        held_at, held_for, _, ceiling = self._state
        raw = (self._clock() if held_at is None else held_at) - held_for
        if raw > ceiling:
            held_for += raw - ceiling
        self._state = (held_at, held_for, reading, reading + seconds)


class SteppedClock:
    """A clock that moves only when its driver says: the local stack run as a discrete-event simulation.

    A ``RealtimeEngine`` on a ``HoldableClock`` follows the wall clock, so a driver waits in wall time
    for the cluster's hours to pass and holds the clock while its handlers work. On this clock
    nothing passes by itself: the driver (``StackLoop``) runs its handlers while it stands still and,
    when a turn finds nothing to do, moves it to the next moment something is due (``advance``). The
    cluster's hours then cost only the work done in them, and a run no longer depends on how busy
    the machine is. It keeps ``HoldableClock``'s interface, so the same emulator runs on either.
    """

    def __init__(self) -> None:
        self._reading = 0.0

    def __call__(self) -> float:
        return self._reading

    @contextmanager
    def held(self) -> Iterator[None]:
        """A no-op: the clock stands still unless advanced."""
        yield

    def run_at_most(self, seconds: float) -> None:
        """A no-op: the clock never runs by itself."""

    def advance(self, seconds: float) -> None:
        """Move the reading ``seconds`` forward."""
        if seconds < 0:
            raise ValueError("a clock never goes back")
        self._reading += seconds


class RealtimeEngine(Engine):
    """The same engine whose virtual time follows the wall clock, ``speed`` virtual seconds per second.

    Nothing runs by itself: a caller (the emulator's HTTP thread or a pump thread) holds ``lock`` and
    calls ``advance_to_now()``, which runs every event due by the scaled wall time.
    """

    def __init__(
        self, speed: float = 1.0, start: float = 0.0, wall_clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(start)
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._wall_clock = wall_clock
        self._wall_start = wall_clock()
        self._virtual_start = float(start)
        self.lock = threading.RLock()

    def virtual_now(self) -> float:
        """The virtual time the wall clock corresponds to now."""
        return self._virtual_start + (self._wall_clock() - self._wall_start) * self.speed

    def advance_to_now(self) -> float:
        """Run every event due by the scaled wall time and return the new virtual time."""
        with self.lock:
            self.run(until=max(self.virtual_now(), self._now))
            return self._now

    def wall_seconds_to_next(self) -> float:
        """Wall seconds until the next event is due (infinity when none): how long a pump may sleep."""
        with self.lock:
            nxt = self.peek()
        if nxt == float("inf"):
            return nxt
        return max((nxt - self.virtual_now()) / self.speed, 0.0)
