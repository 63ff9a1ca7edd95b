"""Where the local stack's chatter goes: a log file, so the terminal keeps what a person acts on.

moto logs a warning for every template resource its CloudFormation cannot create ("No Moto
CloudFormation support for AWS::CloudWatch::Alarm", one per alarm) and raises a UserWarning for
each; the loop reports every schedule tick and the runner every invocation. All of it is worth
keeping and none of it is worth reading on the first screen: it goes to one file, named on screen.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.text import Text

if TYPE_CHECKING:
    from .runner import Invocation

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@dataclass
class NoiseLog:
    """The open log file: ``note`` appends a line of the stack's own chatter (rich markup removed)."""

    path: Path
    handler: logging.Handler
    lines: int = 0
    warnings: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def note(self, message: str, kind: str = "note") -> None:
        """Write one line; ``kind`` is counted for the summary (tick, invocation, ...)."""
        plain = Text.from_markup(message).plain if "[" in message else message
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
        self.handler.acquire()
        try:
            self.handler.stream.write(f"{stamp} {kind}: {plain}\n")  # type: ignore[attr-defined]
            self.handler.flush()
        finally:
            self.handler.release()
        self.lines += 1
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def tick(self, message: str) -> None:
        """A schedule tick the loop reported (``StackLoop``'s ``report``)."""
        self.note(message, "schedule")

    def invocation(self, invocation: Invocation) -> None:
        """A handler invocation the runner made (``FunctionRunner``'s ``on_invocation``)."""
        self.note(invocation_line(invocation), "invocation")

    def where(self) -> str:
        """The line that tells a person where the chatter went."""
        return f"log: {escape(str(self.path))} (moto's warnings, schedule ticks, every invocation)"

    def summary(self) -> str:
        """What the log holds, counted."""
        ticks, invocations = self.counts.get("schedule", 0), self.counts.get("invocation", 0)
        return f"{self.warnings} local stack warnings, {ticks} schedule ticks, {invocations} invocations"


def invocation_line(invocation: Invocation) -> str:
    """One handler invocation in a line: the function, its records and how many failed."""
    return f"{invocation.function}: {invocation.records} records, {invocation.failed} failed"


class _Counting(logging.FileHandler):
    def __init__(self, path: Path, owner: list[NoiseLog]) -> None:
        super().__init__(path, mode="w", encoding="utf-8")
        self._owner = owner

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        if self._owner and record.levelno >= logging.WARNING:
            self._owner[0].warnings += 1


@contextmanager
def noise_to_log(path: Path) -> Iterator[NoiseLog]:
    """While open, warnings and WARNING+ log records of every library go to ``path``, not the terminal.

    Python prints a log record that no handler takes (moto's, here) straight to stderr, and a
    warning through ``warnings.showwarning``; a handler on the root logger and ``captureWarnings``
    take both. A warning is written once per text and place (Python's default), so a library that
    warns on every call does not grow the file without bound; log records are all written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    owner: list[NoiseLog] = []
    handler = _Counting(path, owner)
    handler.setFormatter(logging.Formatter(_FORMAT))
    log = NoiseLog(path=path, handler=handler)
    owner.append(log)
    root = logging.getLogger()
    root.addHandler(handler)
    logging.captureWarnings(True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            yield log
    finally:
        logging.captureWarnings(False)
        root.removeHandler(handler)
        handler.close()
