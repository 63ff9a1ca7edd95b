"""Checkpoint-aware reclaim: which running jobs to stop so a job waiting past its tier's threshold starts.

Fair-share never preempts, and capacity a job frees goes to the share fair-share picks next, not to
the job that has waited longest. With one share identifier per team and tier (``ShareLayout.TEAM_TIER``)
a HIGHPRI share is the one fair-share picks, so capacity freed by stopping lower-tier jobs reaches
the waiting HIGHPRI job. This module decides which jobs to stop; an adapter stops them and the
requeue path resubmits them with their CheckpointConfig. Pure: a ``ReclaimSnapshot`` in, a
``ReclaimPlan`` out, time from the snapshot.

The rules, in order:

1. A waiting job may reclaim once it has waited its tier's ``reclaim_after_seconds`` (wait = since
   submission; tiers without the setting never reclaim). Waiters are served highest tier first, then
   the longest waiting. A waiter whose instances fit in free capacity plus the capacity already being
   released for it reclaims nothing; capacity being released for a waiter is counted for no other.
2. Victims run on the waiter's instance type, in a strictly lower tier, and are either in the
   waiter's own team or hold capacity *borrowed* beyond their own team's entitlement. A team's
   borrowed jobs are its most recently dispatched ones: walking its running jobs from the oldest
   dispatch, a job whose instances take the team past its entitlement is borrowed.
3. Never a victim: a job that cannot resume, i.e. without a CheckpointConfig or with one under which
   no checkpoint was ever written (unless ``allow_no_checkpoint_victims``; such a job then loses
   everything since its dispatch), a job
   younger than ``min_runtime_seconds`` in its current attempt, a job stopped or preempted within
   ``cooldown_seconds``, a job already being stopped (its capacity is its beneficiary's), and a job
   whose own stop this waiter caused (no thrash: a victim never reclaims from the job that displaced
   it, and the reverse).
4. Candidates fall into classes: lowest tier first, then borrowed before own-team. The pool is the
   smallest run of classes, in that order, whose instances cover what the waiter is short of. In the
   pool, the plan takes the least work lost (instances x seconds since the last checkpoint, or since
   dispatch), then the fewest victims, then job ids: an exact 0/1 knapsack over the shortfall and
   the number of victims.
5. Budgets: at most ``max_victims_per_job`` victims for one waiter over its life,
   ``max_victims_per_window`` per ``rate_window_seconds`` and ``max_victims_per_day`` per queue
   (the snapshot says how many the window and the day already took). A waiter whose shortfall
   cannot be covered within them reclaims nothing (stopping part of what it needs helps nobody).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..config.shares import ReclaimConfig, Tier, TierConfig
from ..errors import InvalidInputError
from ..instance_types.capacity import Capacity

TIER_RANK = {tier: rank for rank, tier in enumerate(Tier)}  # 0 = HIGHPRI

SKIP_FITS = "fits in free capacity"
SKIP_NO_VICTIMS = "no eligible victims cover the shortfall"
SKIP_JOB_BUDGET = "victim budget per job spent"
SKIP_RUN_BUDGET = "victim budget per window or per day spent"


def _check_time(field_name: str, value: float | None) -> None:
    if value is not None and not (isinstance(value, int | float) and 0 <= value < 1e11):
        raise InvalidInputError(field_name, f"{value!r} is not an epoch second", "pass seconds since 1970")


@dataclass(frozen=True)
class WaitingJob:
    """A job waiting to be dispatched (RUNNABLE), as reclaim sees it."""

    job_id: str
    team: str
    tier: Tier
    instance_type: str
    instances: int
    #: Submission time: a job's wait runs from submission to its first dispatch.
    waiting_since: float
    #: Jobs this one was stopped for (it never reclaims from them).
    displaced_by: frozenset[str] = frozenset()
    #: Victims already stopped for this job (the per-job budget).
    victims_so_far: int = 0

    def __post_init__(self) -> None:
        _check_time("waiting_since", self.waiting_since)
        if self.instances < 1:
            raise InvalidInputError("instances", f"{self.instances} is below 1", "count instances from 1")


@dataclass(frozen=True)
class RunningJob:
    """A dispatched job (SCHEDULED, STARTING or RUNNING) that holds instances."""

    job_id: str
    team: str
    tier: Tier
    instance_type: str
    instances: int
    #: When its current attempt was dispatched.
    dispatched_at: float
    #: Whether it has a CheckpointConfig (a trainer without one loses everything when stopped).
    checkpoints: bool
    #: When its newest checkpoint object was written; None: none yet (or not read).
    last_checkpoint_at: float | None = None
    #: When it was last stopped by a reclaim or preempted; None: never.
    last_stopped_at: float | None = None
    #: Already being stopped for this waiting job: its instances are about to be free, for that job.
    stopping_for: str | None = None
    #: Jobs this one was stopped for in the past (they never lose capacity to it, and it not to them).
    displaced_by: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for name in ("dispatched_at", "last_checkpoint_at", "last_stopped_at"):
            _check_time(name, getattr(self, name))
        if self.instances < 1:
            raise InvalidInputError("instances", f"{self.instances} is below 1", "count instances from 1")

    @property
    def resumable(self) -> bool:
        """Whether a stop leaves something to resume from: a CheckpointConfig under which a checkpoint
        was written (a configured path that stayed empty resumes nothing)."""
        return self.checkpoints and self.last_checkpoint_at is not None

    def work_since_checkpoint(self, now: float) -> float:
        """Seconds of training a stop now would lose: since the newest checkpoint of this attempt."""
        since = self.dispatched_at
        if self.checkpoints and self.last_checkpoint_at is not None:
            since = max(since, self.last_checkpoint_at)
        return max(0.0, now - since)


@dataclass(frozen=True)
class ReclaimSnapshot:
    """Everything one reclaim decision reads: the queue's capacity, entitlements, waiters and runners."""

    now: float
    #: Instances of each type the queue may run at once (any mapping is read as one).
    capacity: Capacity
    #: Team -> the instances of each type it is entitled to (any mappings are read as capacities).
    entitlements: Mapping[str, Capacity]
    waiting: tuple[WaitingJob, ...]
    running: tuple[RunningJob, ...]
    #: Victims already stopped today (UTC day of ``now``).
    victims_today: int = 0
    #: Victims already stopped in the rate window of ``now`` (``rate_window``).
    victims_in_window: int = 0

    def __post_init__(self) -> None:
        _check_time("now", self.now)
        object.__setattr__(self, "capacity", Capacity(self.capacity))
        object.__setattr__(self, "entitlements", _capacities(self.entitlements))


@dataclass(frozen=True)
class Victim:
    """One job to stop, and what stopping it costs."""

    job_id: str
    team: str
    tier: Tier
    instances: int
    borrowed: bool
    #: Seconds since its newest checkpoint; None: it has none.
    checkpoint_age_seconds: float | None
    #: Training seconds lost (since the newest checkpoint or the dispatch) times instances.
    lost_instance_seconds: float


@dataclass(frozen=True)
class Reclaim:
    """Stop ``victims`` so ``job_id`` can start."""

    job_id: str
    team: str
    tier: Tier
    waited_seconds: float
    short_instances: int
    victims: tuple[Victim, ...]

    @property
    def lost_instance_seconds(self) -> float:
        """Work all victims lose, in instance-seconds."""
        return sum(v.lost_instance_seconds for v in self.victims)


@dataclass(frozen=True)
class Skip:
    """A waiter past its threshold that reclaims nothing, and why."""

    job_id: str
    reason: str


@dataclass(frozen=True)
class ReclaimPlan:
    """What to stop now, for whom; and the waiters that get nothing, with the reason."""

    now: float
    reclaims: tuple[Reclaim, ...] = ()
    skipped: tuple[Skip, ...] = ()

    @property
    def victim_ids(self) -> tuple[str, ...]:
        """Every job to stop, in plan order."""
        return tuple(v.job_id for r in self.reclaims for v in r.victims)


@dataclass
class _Candidate:
    job: RunningJob
    borrowed: bool
    lost: float
    taken: bool = field(default=False)

    @property
    def klass(self) -> tuple[int, int]:
        # Lowest tier first (larger rank), then borrowed before the waiter's own team's entitled work.
        return (-TIER_RANK[self.job.tier], 0 if self.borrowed else 1)


def _capacities(per_team: Mapping[str, Mapping[str, float]]) -> dict[str, Capacity]:
    return {team: Capacity(counts) for team, counts in per_team.items()}


def borrowed_jobs(running: Iterable[RunningJob], entitlements: Mapping[str, Mapping[str, float]]) -> set[str]:
    """Ids of the jobs holding capacity beyond their team's entitlement: the most recently dispatched."""
    entitled = _capacities(entitlements)
    held: dict[str, Capacity] = {}
    out: set[str] = set()
    for job in sorted(running, key=lambda j: (j.dispatched_at, j.job_id)):
        held[job.team] = held.get(job.team, Capacity()).plus(job.instance_type, job.instances)
        if held[job.team].excess_over(entitled.get(job.team, Capacity()), job.instance_type) > 0:
            out.add(job.job_id)
    return out


def least_loss_victims(pool: list[_Candidate], short: int, limit: int) -> list[_Candidate] | None:
    """The subset of at most ``limit`` jobs covering ``short`` instances that loses the least work,
    then has the fewest jobs, then the smallest ids; None when none covers it.

    A 0/1 knapsack over the shortfall (sums capped at ``short``) and the victim count, exact:
    O(len(pool) x short x limit).
    """
    Best = tuple[float, tuple[str, ...], tuple[int, ...]]
    limit = min(limit, len(pool))
    # best[k][covered]: the least-loss way to cover ``covered`` instances with exactly k victims.
    best: list[list[Best | None]] = [[None] * (short + 1) for _ in range(limit + 1)]
    best[0][0] = (0.0, (), ())
    for index, cand in enumerate(pool):
        size = cand.job.instances
        for k in range(limit - 1, -1, -1):
            for covered in range(short, -1, -1):
                cur = best[k][covered]
                if cur is None:
                    continue
                to = min(short, covered + size)
                new = (cur[0] + cand.lost, tuple(sorted((*cur[1], cand.job.job_id))), (*cur[2], index))
                old = best[k + 1][to]
                if old is None or new[:2] < old[:2]:
                    best[k + 1][to] = new
    found = [(b[0], k, b[1], b[2]) for k in range(1, limit + 1) if (b := best[k][short]) is not None]
    if not found:
        return None
    return [pool[i] for i in min(found)[3]]


def plan_reclaim(
    snapshot: ReclaimSnapshot, tiers: Mapping[Tier, TierConfig], rules: ReclaimConfig
) -> ReclaimPlan:
    """Decide which running jobs to stop so the waiters past their tier's threshold can start."""
    now = snapshot.now
    free, reserved = _free_and_reserved(snapshot)
    candidates = _candidates(snapshot, rules)
    run_budget = max(
        0,
        min(
            rules.max_victims_per_window - snapshot.victims_in_window,
            rules.max_victims_per_day - snapshot.victims_today,
        ),
    )
    reclaims: list[Reclaim] = []
    skipped: list[Skip] = []
    for waiter in _due(snapshot, tiers):
        unit = waiter.instance_type
        own = reserved.get(waiter.job_id, 0)
        # Whole instances: a shortfall of a fraction of one still needs a whole victim's.
        short = math.ceil(waiter.instances - free.of(unit) - own)
        if short <= 0:
            free = free.plus(unit, own - waiter.instances)
            skipped.append(Skip(waiter.job_id, SKIP_FITS))
            continue
        job_budget = rules.max_victims_per_job - waiter.victims_so_far
        if job_budget <= 0:
            skipped.append(Skip(waiter.job_id, SKIP_JOB_BUDGET))
            continue
        pool = _cheapest_classes(_eligible(candidates, waiter), short)
        if sum(c.job.instances for c in pool) < short:
            skipped.append(Skip(waiter.job_id, SKIP_NO_VICTIMS))
            continue
        limit = min(job_budget, run_budget)
        chosen = least_loss_victims(pool, short, limit) if limit > 0 else None
        if chosen is None:
            within_job_budget = least_loss_victims(pool, short, job_budget) is not None
            skipped.append(Skip(waiter.job_id, SKIP_RUN_BUDGET if within_job_budget else SKIP_JOB_BUDGET))
            continue
        for c in chosen:
            c.taken = True
        run_budget -= len(chosen)
        free = free.plus(unit, own + sum(c.job.instances for c in chosen) - waiter.instances)
        reclaims.append(
            Reclaim(
                job_id=waiter.job_id,
                team=waiter.team,
                tier=waiter.tier,
                waited_seconds=now - waiter.waiting_since,
                short_instances=short,
                victims=_victims(chosen, now),
            )
        )
    return ReclaimPlan(now=now, reclaims=tuple(reclaims), skipped=tuple(skipped))


def _free_and_reserved(snapshot: ReclaimSnapshot) -> tuple[Capacity, dict[str, int]]:
    """Capacity no job holds, and per waiting job the instances being released for it.

    Capacity being released for a job still waiting is that job's; any other release is free.
    """
    waiting_ids = {w.job_id for w in snapshot.waiting}
    free = snapshot.capacity
    reserved: dict[str, int] = {}
    for job in snapshot.running:
        if job.stopping_for is None:
            free = free.minus(job.instance_type, job.instances)
        elif job.stopping_for in waiting_ids:
            free = free.minus(job.instance_type, job.instances)
            reserved[job.stopping_for] = reserved.get(job.stopping_for, 0) + job.instances
    return free, reserved


def _candidates(snapshot: ReclaimSnapshot, rules: ReclaimConfig) -> list[_Candidate]:
    """The running jobs the rules let be stopped (resumable, past their minimum runtime and cooldown)."""
    now = snapshot.now
    holding = [j for j in snapshot.running if j.stopping_for is None]
    borrowed = borrowed_jobs(holding, snapshot.entitlements)
    return [
        _Candidate(job, job.job_id in borrowed, job.instances * job.work_since_checkpoint(now))
        for job in sorted(holding, key=lambda j: j.job_id)
        if (job.resumable or rules.allow_no_checkpoint_victims)
        and now - job.dispatched_at >= rules.min_runtime_seconds
        and (job.last_stopped_at is None or now - job.last_stopped_at >= rules.cooldown_seconds)
    ]


def _due(snapshot: ReclaimSnapshot, tiers: Mapping[Tier, TierConfig]) -> list[WaitingJob]:
    """The waiters past their tier's reclaim threshold: highest tier first, then the longest waiting."""
    due = []
    for waiter in snapshot.waiting:
        after = tiers[waiter.tier].reclaim_after_seconds if waiter.tier in tiers else None
        if after is not None and snapshot.now - waiter.waiting_since >= after:
            due.append(waiter)
    return sorted(due, key=lambda w: (TIER_RANK[w.tier], w.waiting_since, w.job_id))


def _eligible(candidates: Iterable[_Candidate], waiter: WaitingJob) -> list[_Candidate]:
    """The candidates that may be stopped for ``waiter``: untaken, its instance type, a lower tier, its
    own team's or borrowed, and not a job the two have displaced each other for before."""
    return [
        c
        for c in candidates
        if not c.taken
        and c.job.instance_type == waiter.instance_type
        and TIER_RANK[c.job.tier] > TIER_RANK[waiter.tier]
        and (c.job.team == waiter.team or c.borrowed)
        and c.job.job_id not in waiter.displaced_by
        and waiter.job_id not in c.job.displaced_by
    ]


def _cheapest_classes(eligible: list[_Candidate], short: int) -> list[_Candidate]:
    """The eligible jobs of the cheapest classes (lowest tier, borrowed first) that together cover
    ``short`` instances, or all of them when none do."""
    pool: list[_Candidate] = []
    for klass in sorted({c.klass for c in eligible}):
        pool += [c for c in eligible if c.klass == klass]
        if sum(c.job.instances for c in pool) >= short:
            break
    return pool


def _victims(chosen: Iterable[_Candidate], now: float) -> tuple[Victim, ...]:
    """The chosen candidates as the plan names them, in job-id order."""
    return tuple(
        Victim(
            job_id=c.job.job_id,
            team=c.job.team,
            tier=c.job.tier,
            instances=c.job.instances,
            borrowed=c.borrowed,
            checkpoint_age_seconds=(
                now - c.job.last_checkpoint_at if c.job.last_checkpoint_at is not None else None
            ),
            lost_instance_seconds=c.lost,
        )
        for c in sorted(chosen, key=lambda c: c.job.job_id)
    )


def lost_minutes(victim: Victim) -> float:
    """Instance-minutes of training the victim loses: instances x seconds since its checkpoint / 60."""
    return victim.lost_instance_seconds / 60.0


def utc_day(now: float) -> str:
    """The UTC day (``YYYY-MM-DD``) of an epoch second: the per-day victim budget's bucket."""
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")


def rate_window(now: float, seconds: int) -> str:
    """The rate window an epoch second falls in (``<length>s@<start>``): the rate limit's bucket."""
    start = int(now // seconds) * seconds
    return f"{seconds}s@{start}"


@dataclass(frozen=True)
class ClaimBudgets:
    """The counters a claim adds its victims to (the waiting job's, the day's, the rate window's), and
    the most each may hold: one transaction checks all three, so no run or race overruns any."""

    day: str
    window: str
    max_per_job: int
    max_per_day: int
    max_per_window: int

    @classmethod
    def at(cls, now: float, rules: ReclaimConfig) -> ClaimBudgets:
        """The budgets of a decision made at ``now``."""
        return cls(
            day=utc_day(now),
            window=rate_window(now, rules.rate_window_seconds),
            max_per_job=rules.max_victims_per_job,
            max_per_day=rules.max_victims_per_day,
            max_per_window=rules.max_victims_per_window,
        )
