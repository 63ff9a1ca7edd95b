"""The ``Meter``: what one policy run measures as it goes (GPUs held and demanded, waits, entitlement
owed and received, capacity lent and paid back), without scanning the jobs."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from shareplane.domain.shares.observation import TierObservation

from ..model import Job
from .config import TIERS
from .lending import Lending, spread
from .scenario import Scenario, ScenarioJob


class Meter:
    """Integrates held and demanded units per share from the model's observer calls, without a job scan
    (O(shares) a call at most: ``Lending`` looks at every team)."""

    def __init__(
        self,
        scenario: Scenario,
        clock: Callable[[], float],
        unsaved: Callable[[Job, float], float] = lambda job, now: now - (job.scheduled_at or now),
    ) -> None:
        n = len(scenario.shares)
        self.now = clock
        self.unsaved = unsaved
        self.capacity = scenario.capacity_units
        self.entitled = list(scenario.entitlements)
        self.end = scenario.window
        self.jobs = {j.name: j for j in scenario.jobs}
        self.held = [0] * n
        self.demand = [0] * n
        self.held_tier = [[0] * len(TIERS) for _ in range(n)]
        self.demand_tier = [[0] * len(TIERS) for _ in range(n)]
        self.received = [0.0] * n
        self.owed = [0.0] * n
        self.share_t = [0.0] * n
        self.total_held = 0
        self.total_demand = 0
        self.t = 0.0
        self.held_area = 0.0
        self.bound_area = 0.0
        self.buckets = scenario.config.report_buckets
        self.width = self.end / self.buckets if self.end > 0 else 1.0
        self.bucket_held = [0.0] * self.buckets
        self.bucket_bound = [0.0] * self.buckets
        self.bucket_share_held = [[0.0] * self.buckets for _ in range(n)]
        self.lending = Lending(self.entitled, self.buckets, self.width)
        self.lost_unit_seconds = 0.0  # to preemption
        self.reclaim_lost_unit_seconds = 0.0
        self.waits: list[list[float]] = [[] for _ in TIERS]
        self.recent: list[deque[tuple[float, float]]] = [deque() for _ in TIERS]
        self.waiting: list[dict[str, float]] = [{} for _ in TIERS]  # not yet dispatched: name -> created

    def _advance(self, now: float) -> None:
        t1 = min(now, self.end)
        t0 = self.t
        if t1 <= t0:
            return
        held, bound = self.total_held, min(self.capacity, self.total_demand)
        self.held_area += held * (t1 - t0)
        self.lending.advance(self.held, t1 - t0)
        self.bound_area += bound * (t1 - t0)
        if held:
            spread(self.bucket_held, self.width, held, t0, t1)
        if bound:
            spread(self.bucket_bound, self.width, bound, t0, t1)
        self.t = t1

    def _advance_share(self, i: int, now: float) -> None:
        t1 = min(now, self.end)
        dt = t1 - self.share_t[i]
        if dt > 0:
            held = self.held[i]
            self.received[i] += held * dt
            if held:
                spread(self.bucket_share_held[i], self.width, held, self.share_t[i], t1)
            demand = self.demand[i]
            if demand:
                self.owed[i] += min(self.entitled[i], demand) * dt
            self.share_t[i] = t1

    def arrive(self, job: ScenarioJob, now: float) -> None:
        """A job was submitted: its units join its share's demand."""
        self._advance(now)
        i, u = job.share, job.units
        self._advance_share(i, now)
        self.demand[i] += u
        self.demand_tier[i][job.tier] += u
        self.total_demand += u
        self.waiting[job.tier][job.name] = now

    def observe(self, kind: str, job: Job) -> None:
        """The model's observer: dispatch, preempt, release, finish."""
        sj = self.jobs[job.name]
        now = self.now()
        self._advance(now)
        i, u = sj.share, job.count
        self._advance_share(i, now)
        if kind == "dispatch":
            self.held[i] += u
            self.held_tier[i][sj.tier] += u
            self.total_held += u
            if job.dispatches == 1:
                created = self.waiting[sj.tier].pop(sj.name, now)
                wait = now - created
                self.waits[sj.tier].append(wait)
                self.recent[sj.tier].append((now, wait))
        elif kind == "release":
            self.held[i] -= u
            self.held_tier[i][sj.tier] -= u
            self.total_held -= u
        elif kind == "finish":
            self.demand[i] -= u
            self.demand_tier[i][sj.tier] -= u
            self.total_demand -= u
            self.waiting[sj.tier].pop(sj.name, None)
        elif kind in ("preempt", "reclaim"):
            # The work since the last checkpoint (or the dispatch) is lost; only its part inside the
            # window counts, as GPU-hours used do.
            lost = self.unsaved(job, now)
            inside = max(0.0, min(now, self.end) - max(now - lost, 0.0))
            if kind == "preempt":
                self.lost_unit_seconds += u * inside
            else:
                self.reclaim_lost_unit_seconds += u * inside

    def close(self, now: float) -> None:
        """Integrate every share up to the end of the window (or ``now`` if earlier)."""
        self._advance(now)
        for i in range(len(self.held)):
            self._advance_share(i, now)

    def tier_observation(self, tier: int, now: float, window: float, slo: float) -> TierObservation:
        """A tier's raw waits: dispatched in the last ``window`` s, and the ages of all still waiting."""
        recent = self.recent[tier]
        while recent and recent[0][0] < now - window:
            recent.popleft()
        # ``waiting`` is in arrival order, so the ages come out longest first.
        return TierObservation(
            slo_seconds=slo,
            recent_waits=tuple(w for _, w in recent),
            waiting_ages=tuple(now - created for created in self.waiting[tier].values()),
        )
