"""The ``Meter``: what one policy run measures as it goes (GPUs held and demanded, waits, entitlement
owed and received, capacity lent and paid back), without scanning the jobs."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from shareplane.domain.shares.observation import TierObservation

from ..model import Job
from .config import TIERS
from .scenario import Scenario, ScenarioJob


class Lending:
    """Each team's capacity lent to the others and paid back to it, integrated over held series.

    At an instant, with ``held_i`` the units team ``i`` holds (all its tier identifiers together) and
    ``E_i`` its entitlement, the capacity on loan is ``L = min(sum of (E_i - held_i)+, sum of (held_i -
    E_i)+)``: entitlement left idle by some teams and held by others beyond theirs. A team holding less
    than its entitlement *lends* its part of ``L`` in proportion to its idle entitlement ``(E_i -
    held_i)``; a team holding more *is paid back* its part of ``L`` in proportion to its excess
    ``(held_i - E_i)``. With two teams that is the smaller of the lender's idle entitlement and the
    borrower's excess; with more, what is lent equals what is borrowed at every instant (no loan
    counted twice). Whether a team has work does not matter: entitlement it leaves idle is lent as
    soon as another team uses it. Both integrate over time (unit-seconds); ``paid_back_share`` is a
    team's paid back over its lent, None when it lent nothing, above 1 when it borrowed more than it
    lent.
    """

    def __init__(self, entitled: list[int]) -> None:
        self.entitled = entitled
        self.lent = [0.0] * len(entitled)
        self.paid_back = [0.0] * len(entitled)

    def advance(self, held: list[int], dt: float) -> None:
        """``held`` units per team throughout the next ``dt`` seconds."""
        spare = [max(0, e - h) for e, h in zip(self.entitled, held, strict=True)]
        excess = [max(0, h - e) for e, h in zip(self.entitled, held, strict=True)]
        total_spare, total_excess = sum(spare), sum(excess)
        on_loan = min(total_spare, total_excess)
        if not on_loan or dt <= 0:
            return
        for i in range(len(held)):
            if spare[i]:
                self.lent[i] += spare[i] * on_loan / total_spare * dt
            elif excess[i]:
                self.paid_back[i] += excess[i] * on_loan / total_excess * dt

    def paid_back_share(self, i: int) -> float | None:
        """What team ``i`` was paid back over what it lent; None when it lent nothing."""
        return self.paid_back[i] / self.lent[i] if self.lent[i] > 0 else None


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
        self.lending = Lending(self.entitled)
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
        if held or bound:
            width, last = self.width, self.buckets - 1
            b = min(int(t0 / width), last)
            # The bucket index moves on every step, so float rounding at a boundary cannot stall it.
            while t0 < t1:
                stop = t1 if b >= last else min(t1, (b + 1) * width)
                if stop > t0:
                    self.bucket_held[b] += held * (stop - t0)
                    self.bucket_bound[b] += bound * (stop - t0)
                    t0 = stop
                b += 1
        self.t = t1

    def _spread(self, buckets: list[float], value: float, t0: float, t1: float) -> None:
        """Add ``value`` x time over [t0, t1] to the report buckets it crosses."""
        width, last = self.width, self.buckets - 1
        b = min(int(t0 / width), last)
        while t0 < t1:
            stop = t1 if b >= last else min(t1, (b + 1) * width)
            if stop > t0:
                buckets[b] += value * (stop - t0)
                t0 = stop
            b += 1

    def _advance_share(self, i: int, now: float) -> None:
        t1 = min(now, self.end)
        dt = t1 - self.share_t[i]
        if dt > 0:
            held = self.held[i]
            self.received[i] += held * dt
            if held:
                self._spread(self.bucket_share_held[i], held, self.share_t[i], t1)
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
