"""Instances in use per team over virtual time, read off the emulator's own event stream, and the
lend/payback ledger they make.

The same tracker watches the live run (the emulator's model) and the static-partition baseline
(the what-if's ``static`` policy, a pure gpusim run), so both are measured the same way.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpusim.whatif.lending import Lending, ledger_json

HOLDING = frozenset({"SCHEDULED", "STARTING", "RUNNING"})
FINAL = frozenset({"SUCCEEDED", "FAILED"})


@dataclass
class JobView:
    """What the tracker knows of one job."""

    name: str
    team: str
    instances: int
    status: str = "SUBMITTED"
    first_dispatch: float | None = None


@dataclass
class UsageTracker:
    """Listens to Batch service-job state changes; keeps a step function of instances per team."""

    now: Callable[[], float]
    instances_by_name: dict[str, int]
    #: Share identifier -> team (the config's mapping: a team has one identifier per tier in the
    #: team_tier layout); identity when not given.
    team_of: Callable[[str], str] = lambda share: share
    jobs: dict[str, JobView] = field(default_factory=dict)
    timeline: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    recent: deque[tuple[float, str, str]] = field(default_factory=lambda: deque(maxlen=8))
    preemptions: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, event: dict[str, Any]) -> None:
        """A model listener: one EventBridge event as the emulator emits it."""
        kind, detail = event["detail-type"], event["detail"]
        if kind == "Batch Service Job Preemption Completed":
            with self._lock:
                self.preemptions += 1
            return
        if kind != "Batch Service Job State Change":
            return
        with self._lock:
            now = self.now()
            arn = detail["jobArn"]
            job = self.jobs.get(arn)
            if job is None:
                name = detail.get("jobName", arn)
                share = detail.get("shareIdentifier") or detail.get("quotaShareName") or "none"
                # The event's own capacityUsage: a job the control plane requeued (a reclaim victim's
                # resubmission) has a name of its own, which the script's names do not know.
                usage = sum(float(u.get("quantity", 0)) for u in detail.get("capacityUsage") or [])
                count = int(usage) if usage > 0 else self.instances_by_name.get(name, 1)
                job = self.jobs[arn] = JobView(name, self.team_of(share), count)
            job.status = detail["status"]
            if job.status in HOLDING and job.first_dispatch is None:
                job.first_dispatch = now
            self.recent.append((now, job.name, job.status))
            self._record(now)

    def _record(self, now: float) -> None:
        in_use: dict[str, int] = {}
        for job in self.jobs.values():
            if job.status in HOLDING:
                in_use[job.team] = in_use.get(job.team, 0) + job.instances
        if self.timeline and self.timeline[-1][0] == now:
            self.timeline[-1] = (now, in_use)
        elif not self.timeline or self.timeline[-1][1] != in_use:
            self.timeline.append((now, in_use))

    def snapshot(
        self,
    ) -> tuple[list[JobView], list[tuple[float, dict[str, int]]], list[tuple[float, str, str]]]:
        """A consistent copy for a live view."""
        with self._lock:
            return [JobView(**vars(j)) for j in self.jobs.values()], list(self.timeline), list(self.recent)

    def all_final(self, expected: int) -> bool:
        """Whether at least ``expected`` jobs were seen and every one of them has ended."""
        with self._lock:
            return len(self.jobs) >= expected and all(j.status in FINAL for j in self.jobs.values())


def instance_seconds(
    timeline: list[tuple[float, dict[str, int]]], start: float, end: float
) -> dict[str, float]:
    """Integral of instances in use per team over [start, end] of a step-function timeline."""
    totals: dict[str, float] = {}
    for (t, in_use), (t_next, _) in zip(timeline, [*timeline[1:], (end, {})], strict=True):
        lo, hi = max(t, start), min(t_next, end)
        if hi > lo:
            for team, count in in_use.items():
                totals[team] = totals.get(team, 0.0) + count * (hi - lo)
    return totals


def utilization(
    timeline: list[tuple[float, dict[str, int]]], capacity: int, start: float, end: float
) -> float:
    """Instance-seconds used over capacity x window."""
    if end <= start:
        return 0.0
    return sum(instance_seconds(timeline, start, end).values()) / (capacity * (end - start))


#: The demo ledger's buckets: five virtual minutes, so every virtual hour ends one.
LEDGER_BUCKET_SECONDS = 300.0


def ledger(
    timeline: list[tuple[float, dict[str, int]]], entitlements: Mapping[str, int], end: float
) -> dict[str, Any]:
    """Each team's lend/payback ledger over [0, end] of a usage timeline, in instance-hours, as JSON
    (``gpusim.whatif.lending.ledger_json``): the what-if's rule
    (``shareplane.domain.shares.lending.loans``) over the instances each team held against its
    entitlement. Teams outside ``entitlements`` are not counted."""
    teams = list(entitlements)
    lending = Lending(
        [entitlements[t] for t in teams],
        max(1, math.ceil(end / LEDGER_BUCKET_SECONDS)),
        LEDGER_BUCKET_SECONDS,
    )
    times = [min(t, end) for t, _ in timeline] + [end]
    lending.advance([0] * len(teams), times[0])  # nothing is held before the first event
    for (t, in_use), t_next in zip(timeline, times[1:], strict=True):
        lending.advance([in_use.get(team, 0) for team in teams], t_next - min(t, end))
    return ledger_json(
        LEDGER_BUCKET_SECONDS / 3600,
        {team: [s / 3600 for s in lending.lent_series(i)] for i, team in enumerate(teams)},
        {team: [s / 3600 for s in lending.paid_back_series(i)] for i, team in enumerate(teams)},
        "instance_hours",
    )
