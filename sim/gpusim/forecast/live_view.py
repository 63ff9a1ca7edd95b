"""The replay's model read as the control plane reads Batch and the jobs table, at a prediction's instant.

What ``LiveView.live_queue`` gives the forecast holds nothing from the future: run times appear only
once an attempt has ended, arrivals only once submitted.
"""

from __future__ import annotations

import bisect
import random
import statistics
from collections import deque

from shareplane.domain.explain.wait import HISTORY_SECONDS
from shareplane.domain.forecast.start_forecast import (
    Arrival,
    FinishedRun,
    History,
    LiveQueue,
    QueuedJob,
    QueueKind,
    RunningJob,
    ShareState,
)
from shareplane.domain.shares.fairshare import accrue

from ..model import Job
from ..states import DISPATCHED, FINAL
from ..whatif.config import TIERS, Policy
from ..whatif.run import PolicyRun
from ..whatif.scenario import Scenario, ScenarioJob

BASELINE_WINDOW_SECONDS = 86400.0


class LiveView:
    """What the control plane could see of a replay so far: finished attempts, first dispatches."""

    def __init__(self, run: PolicyRun) -> None:
        self.run = run
        self.finished: list[FinishedRun] = []
        #: When each of ``finished`` ended (ascending: the replay's clock only moves forward).
        self.finished_at: list[float] = []
        self.first_dispatch: dict[str, float] = {}
        self.recent_starts: list[deque[tuple[float, float]]] = [deque() for _ in TIERS]
        self.tier_of = {j.name: j.tier for j in run.scenario.jobs}
        sc, fair = run.scenario, run.policy.fair
        #: Every submission as the history shows it, in submission order, built once: a prediction's
        #: history is a slice of it (``arrival_span``), not thousands of new objects.
        self.arrivals = tuple(
            Arrival(j.submit, run.share_identifier(j) if fair else sc.shares[j.share], j.units, j.priority)
            for j in sc.jobs
        )
        #: The control plane has seen every submission since the trace's first.
        self.observed_since = self.arrivals[0].at if self.arrivals else 0.0
        inner = run.model.observer

        def observe(kind: str, job: Job) -> None:
            if inner is not None:
                inner(kind, job)
            self._observe(kind, job)

        run.model.observer = observe

    def _observe(self, kind: str, job: Job) -> None:
        now = self.run.model.engine.now
        if kind == "dispatch" and job.dispatches == 1:
            self.first_dispatch[job.name] = now
            self.recent_starts[self.tier_of[job.name]].append((now, now - job.created))
        elif kind == "release":
            self.finished.append(
                FinishedRun(self.share_of(job), now - (job.scheduled_at or now), job.count, ended_at=now)
            )
            self.finished_at.append(now)

    def share_of(self, job: Job) -> str:
        return job.qshare.name if job.qshare is not None else (job.share or "")

    def baseline_wait(self, tier: int, now: float) -> float:
        """The median wait of the tier's jobs that started in the last 24 h (0 when none did)."""
        recent = self.recent_starts[tier]
        while recent and recent[0][0] < now - BASELINE_WINDOW_SECONDS:
            recent.popleft()
        return statistics.median(w for _, w in recent) if recent else 0.0

    def live_queue(self, target: ScenarioJob, arrivals_lookback: float) -> tuple[LiveQueue, History]:
        """The queue now, plus ``target`` as just submitted (the last in submission order)."""
        run, sc = self.run, self.run.scenario
        model, queue = run.model, run.queue
        now = model.engine.now
        running, queued = [], []
        for job in model.jobs.values():
            if job.status in DISPATCHED:
                running.append(RunningJob(job.name, self.share_of(job), job.count, job.scheduled_at or now))
            elif job.status not in FINAL:
                queued.append(
                    QueuedJob(job.name, self.share_of(job), job.count, job.priority, job.created, job.seq)
                )
        fair = run.policy.fair
        target_share = run.share_identifier(target) if fair else sc.shares[target.share]
        queued.append(
            QueuedJob(target.name, target_share, target.units, target.priority, now, model._job_seq + 1)
        )
        if fair:
            policy = queue.policy
            if policy is None:
                raise RuntimeError(f"the {run.policy} replay's fair-share queue has no scheduling policy")
            window = policy.decay_window
            shares = {
                w.share_identifier: ShareState(w.share_identifier, w.weight_factor) for w in policy.weights
            }
            for name, sh in queue.shares.items():
                # The closed form, without moving the model's own counter (the replay stays bit-equal).
                usage = accrue(sh.usage, sh.rate, now - sh.t0, window)
                shares[name] = ShareState(name, sh.weight, usage)
            live = LiveQueue(
                now=now,
                capacity=sc.capacity_units,
                kind=QueueKind.FAIRSHARE,
                shares=tuple(shares.values()),
                running=tuple(running),
                queued=tuple(queued),
                decay_seconds=sc.config.share_decay_seconds,
                head_of_line_blocking=sc.config.head_of_line_blocking,
            )
        else:
            live = LiveQueue(
                now=now,
                capacity=sc.capacity_units,
                kind=QueueKind.QUOTA,
                shares=tuple(ShareState(s, limit=e) for s, e in zip(sc.shares, sc.entitlements, strict=True)),
                running=tuple(running),
                queued=tuple(queued),
                head_of_line_blocking=sc.config.head_of_line_blocking,
                borrow=run.policy is not Policy.STATIC,
            )
        lo, hi = self.arrival_span(arrivals_lookback)
        # The runs that ended in the last HISTORY_SECONDS, as the live path reads the jobs table.
        since = now - HISTORY_SECONDS
        recent = bisect.bisect_left(self.finished_at, since)
        history = History(tuple(self.finished[recent:]), self.arrivals[lo:hi], self.observed_since, since)
        return live, history

    def arrival_span(self, lookback: float) -> tuple[int, int]:
        """Where the arrivals of the last ``lookback`` seconds are in ``arrivals`` (before now only)."""
        now, submits = self.run.model.engine.now, run_submits(self.run.scenario)
        # Submitted strictly before now: the target and anything else arriving now are not yet in.
        return bisect.bisect_left(submits, now - lookback), bisect.bisect_left(submits, now)


_SUBMITS: dict[int, list[float]] = {}


def run_submits(scenario: Scenario) -> list[float]:
    """The scenario's submission times, sorted (cached per scenario)."""
    key = id(scenario)
    if key not in _SUBMITS:
        _SUBMITS.clear()
        _SUBMITS[key] = [j.submit for j in scenario.jobs]
    return _SUBMITS[key]


def sample_jobs(scenario: Scenario, size: int, seed: int) -> list[ScenarioJob]:
    """A seeded sample of the scenario's jobs (all of them when it has fewer), in submission order."""
    rng = random.Random(f"eta-sample-{seed}")
    jobs = list(scenario.jobs)
    picked = jobs if size >= len(jobs) else rng.sample(jobs, size)
    return sorted(picked, key=lambda j: (j.submit, j.name))
