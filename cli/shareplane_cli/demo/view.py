"""The demo's progress: on a terminal, a live view (per-team instances against entitlement, utilization,
latest transitions); elsewhere (a log, a CI job), a line every half hour of virtual time."""

from __future__ import annotations

import time

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table

from .usage import FINAL, HOLDING, UsageTracker


class LiveView:
    """A rich Live display refreshed from the usage tracker a few times a second."""

    def __init__(self, entitlements: dict[str, int], capacity: int, total_jobs: int, live: Live) -> None:
        self.entitlements = entitlements
        self.capacity = capacity
        self.live = live
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} jobs")
        )
        self.total_jobs = total_jobs
        self.task = self.progress.add_task("virtual 0:00", total=total_jobs)
        self._shown = 0.0

    def __call__(self, tracker: UsageTracker, now: float) -> None:
        """on_tick of the live run."""
        if time.monotonic() - self._shown < 0.25:
            return
        self._shown = time.monotonic()
        jobs, timeline, recent = tracker.snapshot()
        table = Table(title="instances by team", expand=False)
        for column in ("team", "running", "queued", "entitled"):
            table.add_column(column, justify="right" if column != "team" else "left")
        for team, entitled in self.entitlements.items():
            running = sum(j.instances for j in jobs if j.team == team and j.status in HOLDING)
            queued = sum(
                j.instances for j in jobs if j.team == team and j.status in ("SUBMITTED", "RUNNABLE")
            )
            table.add_row(team, str(running), str(queued), str(entitled))
        in_use = sum(timeline[-1][1].values()) if timeline else 0
        transitions = Table(title="latest transitions", show_header=False)
        for at, name, status in recent[-6:]:
            transitions.add_row(f"{at / 3600:5.2f}h", name, status)
        done = sum(1 for j in jobs if j.status in FINAL)
        # A requeue or a reclaimed job's resubmission is a job of its own: the total grows with them.
        self.progress.update(
            self.task,
            completed=done,
            total=max(self.total_jobs, len(jobs)),
            description=f"virtual {clock(now)}",
        )
        utilization = f"utilization now: {in_use}/{self.capacity} instances ({in_use / self.capacity:.0%})"
        self.live.update(Group(self.progress, table, utilization, transitions))


def clock(seconds: float) -> str:
    """Virtual time since the start as ``h:mm``."""
    return f"{int(seconds // 3600)}:{int(seconds % 3600 // 60):02d}"


class ProgressLines:
    """The demo's progress as a line every ``every`` virtual seconds, where no live view can be drawn."""

    def __init__(
        self,
        console: Console,
        entitlements: dict[str, int],
        capacity: int,
        total_jobs: int,
        every: float = 1800,
    ) -> None:
        self.console, self.entitlements, self.capacity = console, entitlements, capacity
        self.total_jobs, self.every = total_jobs, every
        self._next = 0.0

    def __call__(self, tracker: UsageTracker, now: float) -> None:
        """on_tick of the live run."""
        if now < self._next:
            return
        self._next = (now // self.every + 1) * self.every
        jobs, _, _ = tracker.snapshot()
        done = sum(1 for j in jobs if j.status in FINAL)
        held = {
            team: sum(j.instances for j in jobs if j.team == team and j.status in HOLDING)
            for team in self.entitlements
        }
        teams = ", ".join(
            f"{team} {held[team]} (entitled {self.entitlements[team]})" for team in self.entitlements
        )
        self.console.print(
            f"demo: virtual {clock(now)}, {done} of {max(self.total_jobs, len(jobs))} jobs ended, "
            f"{sum(held.values())}/{self.capacity} instances in use: {teams}",
            highlight=False,
        )
