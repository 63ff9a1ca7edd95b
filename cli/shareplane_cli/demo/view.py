"""The live terminal view: per-team instances against entitlement, utilization, latest transitions."""

from __future__ import annotations

import time

from rich.console import Group
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
        self.progress.update(
            self.task, completed=done, description=f"virtual {int(now // 3600)}:{int(now % 3600 // 60):02d}"
        )
        utilization = f"utilization now: {in_use}/{self.capacity} instances ({in_use / self.capacity:.0%})"
        self.live.update(Group(self.progress, table, utilization, transitions))
