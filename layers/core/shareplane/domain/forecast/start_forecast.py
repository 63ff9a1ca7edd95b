"""When will a waiting job start: the queue run forward from its live state, many times over.

Pure: the live state, the history and a seed go in, start-time quantiles come out. The Lambda, the
CLI (`shareplane why`, `submit --dry-run`) and the what-if backtest (``gpusim.forecast.backtest``) all call
``forecast_starts``; none of them has a copy of the rules below.

The forward model is the scheduling core of an AWS Batch job queue, as gpusim's schedulers run it:

- fair-share: the share with the lowest standing (decayed usage plus what its running jobs will add,
  ``shareplane.domain.shares.fairshare``) is served next; within a share higher ``schedulingPriority`` first,
  then submission order; usage accrues as ``instances x weightFactor`` and decays with the policy's
  window; ``computeReservation`` holds back ``(cr/100) ** activeShares`` of the capacity.
- FIFO: submission order.
- quota shares: each share's head in submission order, a share up to its limit, beyond it only
  when the queue lends idle capacity (``borrow``). Preemption is not modelled (it moves capacity
  between shares, not the order of a share's queue).
- head-of-line blocking (a head that does not fit stops the pass) or not, as the queue runs.

What the model does not know it samples, from what was observable when the forecast is made:

- Run times come from a Kaplan-Meier curve (``Survival``) of the job's share and size class
  (``size_class``: 1, 2, 3-4, 5-8, ... instances; big jobs run longer): finished runs are events, the
  jobs running now are censored at their age (finished runs alone are biased short: the long ones
  are still going), each run weighted by how lately it started (``run_half_life_seconds``: the
  jobs to come resemble the ones started this week more than those started a month ago), and the
  runs that began before the history's window counted from the age they had when it opened (delayed
  entry). Where that curve has fewer than ``min_share_runs`` finished runs, everyone's of
  the size class stands in, then the share's of every size, then everyone's. The curve ends at the
  longest run seen (Efron's tail: that run counts as ending there), so a draw is always a length
  seen; a job already running longer than that ends within as long again, uniformly.
- A queued job's run time: a draw from the curve. A running job's: a draw conditioned on having
  lasted as long as it has (inverse transform from S(elapsed) down), minus its age.
- Future arrivals: a Poisson process, over the first ``recent_arrival_seconds`` ahead at the rate of
  as many last seconds, then at the rate of the last ``arrival_lookback_seconds`` (or the part of
  them observed, ``History.arrivals_since``, but a day at least), each a copy (share, instances,
  priority) of one of the lookback's arrivals.

Each of ``samples`` runs gives every target job a start time (or none within ``horizon_seconds``);
the quantiles of those are the forecast. Every draw comes from one ``random.Random`` seeded by the
caller, so the same inputs give the same forecast.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from ..errors import InvalidInputError
from ..shares import fairshare

#: The one lane a FIFO queue's jobs wait in, whatever their share.
FIFO_LANE = ""


class QueueKind(StrEnum):
    """How the queue picks its next job (the kind of its scheduling policy)."""

    FAIRSHARE = "FAIRSHARE"
    FIFO = "FIFO"
    QUOTA = "QUOTA"


@dataclass(frozen=True)
class ShareState:
    """A share as the queue sees it now: its weight (fair-share), decayed usage and quota limit."""

    name: str
    weight_factor: float = fairshare.DEFAULT_WEIGHT
    #: Decayed usage (instance x weight seconds) at the forecast's ``now``.
    usage: float = 0.0
    #: Quota shares: the instances the share is entitled to (None: no limit of its own).
    limit: int | None = None


@dataclass(frozen=True)
class QueuedJob:
    """A job waiting (RUNNABLE) now; ``order`` is its place in submission order (lower is older)."""

    name: str
    share: str
    instances: int
    priority: int
    submitted_at: float
    order: int = 0


@dataclass(frozen=True)
class RunningJob:
    """A job holding capacity now, since ``started_at`` (its first SCHEDULED of this attempt)."""

    name: str
    share: str
    instances: int
    started_at: float


@dataclass(frozen=True)
class LiveQueue:
    """One job queue's state at ``now``: what Batch and the jobs table show, no more."""

    now: float
    capacity: int
    kind: QueueKind
    shares: tuple[ShareState, ...]
    running: tuple[RunningJob, ...]
    queued: tuple[QueuedJob, ...]
    decay_seconds: float = 0.0
    compute_reservation: int = 0
    head_of_line_blocking: bool = True
    #: Quota queues: whether a share may borrow idle capacity beyond its limit (LEND_AND_BORROW).
    borrow: bool = True

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise InvalidInputError("capacity", f"{self.capacity} instances", "give the queue capacity >= 1")
        names = [s.name for s in self.shares]
        if len(set(names)) != len(names):
            raise InvalidInputError("shares", f"{names} repeats a name", "list each share once")
        jobs: list[QueuedJob | RunningJob] = [*self.queued, *self.running]
        for job in jobs:
            if job.instances < 1:
                raise InvalidInputError(
                    f"job {job.name}.instances", f"{job.instances}", "count instances from 1"
                )


@dataclass(frozen=True)
class FinishedRun:
    """A finished attempt from the history: how long it held capacity, and how many instances."""

    share: str
    held_seconds: float
    instances: int = 1
    #: When it ended (None: not known; the run then counts as observed from its start).
    ended_at: float | None = None


@dataclass(frozen=True)
class Arrival:
    """A past submission: when, into which share, how many instances, at which priority."""

    at: float
    share: str
    instances: int
    priority: int


@dataclass(frozen=True)
class History:
    """What has been observed before ``now``: finished runs and recent arrivals."""

    finished: tuple[FinishedRun, ...] = ()
    arrivals: tuple[Arrival, ...] = ()
    #: Since when ``arrivals`` holds every submission (the oldest job read, the trace's start): a
    #: rate over the lookback would count the unobserved part of it as a time nothing arrived.
    arrivals_since: float = -math.inf
    #: Since when ``finished`` holds every run that ended (the history's window: the runs that ended
    #: within it, ``explain.wait.HISTORY_SECONDS``). A run that started before then is in the
    #: history only because it outlasted that instant, so its run time is counted from there
    #: (``Survival``: left truncation); -inf when the history holds no such window.
    finished_since: float = -math.inf


#: Waits are calibrated on log(wait + 10 minutes): a 2-day miss on a 20-day wait weighs what a 1-hour
#: miss on a 10-hour wait does, and a zero wait stays finite.
LOG_WAIT_OFFSET_SECONDS = 600.0


def log_wait(wait: float) -> float:
    """A wait on the scale the calibration works on: log(wait + 10 minutes)."""
    return math.log(max(0.0, wait) + LOG_WAIT_OFFSET_SECONDS)


def from_log_wait(value: float) -> float:
    """The wait a ``log_wait`` value stands for (inf stays inf)."""
    return max(0.0, math.exp(value) - LOG_WAIT_OFFSET_SECONDS) if value < 700 else math.inf


@dataclass(frozen=True)
class Calibration:
    """How the runs' raw quantiles become what a user is shown: the p50 wait scaled by ``p50_scale``,
    the low moved down by ``low_log_margin`` and the high up by ``high_log_margin``, on the
    ``log_wait`` scale.

    The Monte Carlo range holds the spread of the run-time and arrival draws, not the model's own
    error; conformal margins measured on past predictions add it (conformalized quantile regression,
    Romano, Patterson and Candes 2019). Each bound has a margin of its own, so a model that misses
    further on one side can be given their asymmetric variant; the backtest chooses between one
    margin for both and one per bound on its earlier half (docs/design/start-forecast.md: one for
    both, as shipped). A job too few runs started has
    the range [the horizon's end, later), whose low takes ``low_log_margin`` too. Waits are counted
    from the forecast's ``now``.
    """

    p50_scale: float = 1.0
    low_log_margin: float = 0.0
    high_log_margin: float = 0.0

    def __post_init__(self) -> None:
        if not self.p50_scale > 0:
            raise InvalidInputError(
                "p50_scale", f"{self.p50_scale}", "use a scale > 0 (1 leaves the p50 as run)"
            )
        for name in ("low_log_margin", "high_log_margin"):
            if not math.isfinite(getattr(self, name)):
                raise InvalidInputError(
                    name, f"{getattr(self, name)}", "use a finite margin (0 leaves the bound)"
                )

    def median(self, raw: float | None, now: float) -> float | None:
        """The shown p50 start from the runs' p50 start (None: beyond the horizon, stays None)."""
        return None if raw is None else now + max(0.0, raw - now) * self.p50_scale

    def low(self, raw: float | None, now: float, horizon: float) -> float:
        """The shown low start. A raw low beyond the horizon (too few runs started the job) is the
        horizon's end: the range is [that less the margin, later), not empty."""
        wait = horizon if raw is None else max(0.0, raw - now)
        return now + _widened(wait, -self.low_log_margin)

    def high(self, raw: float | None, now: float) -> float | None:
        """The shown high start (None: later than the horizon, stays open)."""
        return None if raw is None else now + _widened(max(0.0, raw - now), self.high_log_margin)

    def shown(
        self, low: float | None, median: float | None, high: float | None, now: float, horizon: float
    ) -> tuple[float, float | None, float | None]:
        """The shown low, median and high from the runs' raw ones, in order: a p50 scaled below the
        low (or above the high) by a scale and margins tuned apart widens the range to hold it."""
        shown_low, shown_median, shown_high = (
            self.low(low, now, horizon),
            self.median(median, now),
            self.high(high, now),
        )
        if shown_median is None:
            return shown_low, None, shown_high
        return (
            min(shown_low, shown_median),
            shown_median,
            None if shown_high is None else max(shown_high, shown_median),
        )


def _widened(wait: float, log_margin: float) -> float:
    """``wait`` moved by ``log_margin`` on the ``log_wait`` scale (no margin leaves it exact)."""
    return from_log_wait(log_wait(wait) + log_margin) if log_margin else wait


def track_margin(margin: float, missed: bool, target: float, step: float) -> float:
    """One step of online calibration: the margin after one more outcome of a shown range.

    Adaptive conformal inference (Gibbs and Candes 2021) on the margin's scale: a miss widens by
    ``step x target``, a cover narrows by ``step x (1 - target)``; over any sequence of outcomes the
    share covered tends to ``target``. Pure, so the live path and the backtest step it alike.
    """
    return margin + step * ((1.0 if missed else 0.0) - (1.0 - target))


#: No calibration: the runs' own quantiles.
UNCALIBRATED = Calibration()
#: What users are shown: the backtest's choice on the earlier half of its predictions
#: (``gpusim.forecast.calibration.tune`` on Philly at 0.95 load, fair-share, seed 0, 1,000 predictions on
#: the trace followed by a copy of itself, kept in tests/sim/data/eta_philly_fairshare_seed0.json;
#: docs/design/start-forecast.md): one margin for both bounds (``pooled``, the method chosen inside
#: that half). On the later half this range covered 0.8013 of the actual starts (target 0.70-0.95),
#: and on seed 1's later half 0.8092.
SHIPPED_CALIBRATION = Calibration(p50_scale=1.0, low_log_margin=0.5274, high_log_margin=0.5274)


@dataclass(frozen=True)
class ForecastSettings:
    """How many runs, how far ahead, and the sampling choices (see the module docstring)."""

    samples: int = 100
    #: Thirty days: in the Philly backtest at 0.95 load, LOWPRI jobs in the deep backlog waited up to
    #: 19.5 days (a 200-prediction sample: 29 of 56 such waits were longer than 14 days, the old horizon).
    horizon_seconds: float = 30 * 86400.0
    #: Arrivals are projected over the horizon, so their rate is measured over as long: a shorter
    #: window carries a burst into every day ahead, and a job joins a deep backlog just when the
    #: recent rate ran above capacity. Chosen on the backtest's earlier half (14 days, 30, or all
    #: history; docs/design/start-forecast.md).
    arrival_lookback_seconds: float = 30 * 86400.0
    #: The first this many seconds ahead arrive at the rate of as many last seconds, then at the
    #: lookback's: a backlog that builds up under a rising load keeps rising for a while, but a burst
    #: is not carried over the whole horizon (the kinds copied stay the lookback's). 0: one rate.
    #: Chosen with ``run_half_life_seconds`` on the backtest's earlier halves: neither alone was better
    #: on both seeds, since a too-low rate and too-long run times had offset each other.
    recent_arrival_seconds: float = 7 * 86400.0
    #: A table younger than this (a new deployment, the demo) has seen a burst, not a rate: its
    #: arrivals are counted over this long at least, so the first hour's burst is not projected
    #: over the 30 days ahead (nor a forward run made of tens of thousands of its copies). A choice
    #: of ours, not measured: the backtest's predictions all come after 11 days of the trace.
    shortest_arrival_span_seconds: float = 86400.0
    min_share_runs: int = 20
    #: The run-time curves weigh a run by how lately it started: its weight halves with each of these
    #: seconds (0: every run alike). The jobs submitted next resemble those started lately more than
    #: those started weeks ago (on Philly, a few weeks-long runs from a quiet first fortnight otherwise
    #: made every new one-GPU job 3% likely to run three weeks). Chosen on the backtest's earlier half
    #: (docs/design/start-forecast.md).
    run_half_life_seconds: float = 1.75 * 86400.0
    #: The lower and upper quantiles reported (p10 and p90 by default).
    low_quantile: float = 0.1
    high_quantile: float = 0.9
    #: The run time assumed when no finished run is known at all.
    fallback_run_seconds: float = 3600.0
    #: How the runs' quantiles become the shown ones (``Calibration``; the backtest measures these).
    calibration: Calibration = SHIPPED_CALIBRATION

    def __post_init__(self) -> None:
        if not 1 <= self.samples <= 10000:
            raise InvalidInputError("samples", f"{self.samples}", "use 1..10000 samples")
        if self.horizon_seconds <= 0:
            raise InvalidInputError("horizon_seconds", f"{self.horizon_seconds}", "use a horizon > 0")
        if not 0 < self.low_quantile < self.high_quantile < 1:
            raise InvalidInputError(
                "low_quantile/high_quantile",
                f"{self.low_quantile}/{self.high_quantile}",
                "use 0 < low < high < 1",
            )


@dataclass(frozen=True)
class StartForecast:
    """A job's predicted start (epoch seconds, like ``now``): low/median/high quantiles of the runs,
    as ``settings.calibration`` turns them into what a user is shown.

    The median and high are None when fewer than that share of the runs started the job within the
    horizon; the low is then the horizon's end (less the calibration's margin): the job starts later.
    """

    job: str
    low: float | None
    median: float | None
    high: float | None
    started_fraction: float
    samples: int
    #: Every run's start of the job, sorted (runs that never started it are left out).
    starts: tuple[float, ...] = ()

    def waits_from(self, submitted_at: float) -> list[float | None]:
        """The low, median and high starts as waits from ``submitted_at`` (seconds)."""
        return [None if t is None else max(0.0, t - submitted_at) for t in (self.low, self.median, self.high)]


# ----------------------------------------------------------------------------------- sampling
class ObservedRun(NamedTuple):
    """One run as the run-time curves count it: how long it lasted (finished) or has lasted so far
    (still running), how much it counts, and the age at which it came under observation."""

    length: float
    finished: bool
    #: ``RunTimes.of``: halves with each ``run_half_life_seconds`` since the run started.
    weight: float = 1.0
    #: > 0 for a run that started before the history's window: it is in the history only because it
    #: outlasted that age (``Survival``, delayed entry).
    entry: float = 0.0


@dataclass
class Survival:
    """A Kaplan-Meier run-time curve: finished runs are events, running jobs censored at their age.

    Finished runs alone are biased short (a long run is still going when the short ones have ended);
    counting each running job as "lasted at least this long" removes that bias. A history of the runs
    that ended within a window is biased long the other way: of the runs started before the window,
    only those that outlasted its start are in it (the short ones ended unseen), so each such run is
    counted from the age it had then (left truncation, "delayed entry"), not from 0. Each run counts
    with its weight (a weighted product-limit estimate): the runs started lately stand for the runs
    to come more than those started weeks ago (``RunTimes.of``).
    """

    times: list[float]  # distinct event times, ascending
    #: S(t) just after each event time, negated so ``bisect`` can search the decreasing curve.
    neg_surv: list[float]
    events: int
    longest: float  # the longest run seen, finished or still running
    #: S(0): what ``draw_new`` scales by (below 1 only when runs of length 0 were seen).
    at_start: float = 1.0

    @classmethod
    def of(cls, runs: Sequence[ObservedRun]) -> Survival:
        """The curve of these runs. A run is at risk at age t from its entry to its end: at each end,
        S falls by the weight of the runs that ended there over the weight of the runs at risk."""
        marks = sorted((max(0.0, r.length), r.finished, r.weight) for r in runs)
        # The runs that came under observation late, by entry age, and the weight entering at or after each.
        late = sorted((r.entry, r.weight) for r in runs if r.entry > 0)
        late_ages = [age for age, _ in late]
        entering = list(itertools.accumulate(reversed([w for _, w in late]), initial=0.0))[::-1]
        at_risk = math.fsum(weight for _, _, weight in marks)
        times: list[float] = []
        neg: list[float] = []
        surv = 1.0
        i = 0
        while i < len(marks):
            t = marks[i][0]
            died = total = 0.0
            while i < len(marks) and marks[i][0] == t:
                if marks[i][1]:
                    died += marks[i][2]
                total += marks[i][2]
                i += 1
            if died:
                # The runs that came under observation at t or later are not yet at risk at t.
                risk = at_risk - entering[bisect.bisect_left(late_ages, t)] if late else at_risk
                surv *= max(0.0, 1.0 - died / risk) if risk > 0 else 0.0
                times.append(t)
                neg.append(-surv)
            at_risk -= total
        longest = max((m[0] for m in marks), default=0.0)
        if marks and surv > 0 and (not times or longest > times[-1]):
            # Efron's tail: the longest run (still going) counts as ending there, so every draw is a
            # length seen, not an invented one.
            times.append(longest)
            neg.append(-0.0)
        events = sum(1 for r in runs if r.finished)
        return cls(times, neg, events, longest, 1.0 if not times or times[0] > 0 else -neg[0])

    def survival_at(self, t: float) -> float:
        """S(t): the share of runs lasting longer than ``t``."""
        k = bisect.bisect_right(self.times, t)
        return 1.0 if k == 0 else -self.neg_surv[k - 1]

    def draw_new(self, rng: random.Random) -> float:
        """``draw_beyond(0.0, rng)`` (the same draw from the same stream), for a queued job: the hot path."""
        left = self.at_start
        k = bisect.bisect_left(self.neg_surv, -rng.random() * left)
        if left > 0 and k < len(self.times):
            return self.times[k]
        return rng.random()

    def draw_beyond(self, elapsed: float, rng: random.Random) -> float:
        """A run time given the run has lasted ``elapsed`` (inverse transform on the curve)."""
        left = self.survival_at(elapsed)
        u = rng.random() * left
        k = bisect.bisect_left(self.neg_surv, -u)  # the first time with S(t) <= u
        if left > 0 and k < len(self.times):
            return max(self.times[k], elapsed)
        # Running longer than any run seen: ends within as long again (history says nothing more).
        return elapsed + max(elapsed, 1.0) * rng.random()


def size_class(instances: int) -> int:
    """Jobs of 1, 2, 3-4, 5-8, 9-16, ... instances: each class has run-time curves of its own.

    Run time grows with size: in the Philly trace a one-GPU job runs 2.1 h on average, a 5-8 GPU job
    56.6 h. A curve over all sizes, dominated by the many small jobs, gives a queued big job a small
    job's run time and so misses most of the capacity it will hold.
    """
    return max(0, instances - 1).bit_length()


@dataclass
class RunTimes:
    """Run-time curves per share and size class, falling back as history thins.

    A job's curve is the first with at least ``min_share_runs`` finished runs of: its share's runs of
    its size class, everyone's of its size class, its share's of every size, everyone's. Curves are
    built when first asked for (a forecast needs a few of them, rarely all).
    """

    #: Finished and running runs by (share, size class).
    runs: dict[tuple[str, int], list[ObservedRun]] = field(default_factory=dict)
    min_share_runs: int = 20
    fallback: float = 3600.0
    #: Built curves by (share or None for everyone's, size class or None for every size).
    curves: dict[tuple[str | None, int | None], Survival] = field(default_factory=dict)
    chosen: dict[tuple[str, int], Survival | None] = field(default_factory=dict)
    #: ``curve`` by (share, instances): a queued job's draw skips the size class and the fallbacks.
    by_job: dict[tuple[str, int], Survival | None] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        finished: Sequence[FinishedRun],
        min_share_runs: int,
        fallback: float,
        running: Sequence[RunningJob] = (),
        now: float = 0.0,
        since: float = -math.inf,
        half_life: float = 0.0,
    ) -> RunTimes:
        """The curves of these runs; ``since``: the history window's start (``History.finished_since``);
        ``half_life``: a run's weight halves with each of these seconds between its start and ``now``
        (0: every run weighs 1; a finished run whose end is unknown weighs 1)."""
        runs: dict[tuple[str, int], list[ObservedRun]] = {}

        def observe(share: str, instances: int, started_at: float | None, length: float, ended: bool) -> None:
            entry = 0.0
            if started_at is not None and started_at < since:
                entry = since - started_at
                if entry >= length:
                    return  # ended as the window opened: never under observation in it
            weight = 1.0
            if half_life > 0 and started_at is not None:
                weight = 0.5 ** (max(0.0, now - started_at) / half_life)
            runs.setdefault((share, size_class(instances)), []).append(
                ObservedRun(length, ended, weight, entry)
            )

        for run in finished:
            started = None if run.ended_at is None else run.ended_at - run.held_seconds
            observe(run.share, run.instances, started, run.held_seconds, True)
        for job in running:
            observe(job.share, job.instances, job.started_at, now - job.started_at, False)
        return cls(runs, min_share_runs, fallback)

    def of_pool(self, share: str | None, size: int | None) -> Survival:
        """The curve of ``share``'s runs (None: everyone's) of ``size`` class (None: every size)."""
        key = (share, size)
        built = self.curves.get(key)
        if built is None:
            pooled = [
                run
                for (s, c), runs in self.runs.items()
                if (share is None or s == share) and (size is None or c == size)
                for run in runs
            ]
            built = self.curves[key] = Survival.of(pooled)
        return built

    def curve(self, share: str, instances: int = 1) -> Survival | None:
        size = size_class(instances)
        key = (share, size)
        if key not in self.chosen:
            pick: Survival | None = None
            for pool in ((share, size), (None, size), (share, None)):
                candidate = self.of_pool(*pool)
                if candidate.events >= self.min_share_runs:
                    pick = candidate
                    break
            else:
                everyone = self.of_pool(None, None)
                pick = everyone if everyone.events else None
            self.chosen[key] = pick
        return self.chosen[key]

    def draw(self, share: str, rng: random.Random, instances: int = 1) -> float:
        """A queued job's run time."""
        key = (share, instances)
        if key in self.by_job:
            curve = self.by_job[key]
        else:
            curve = self.by_job[key] = self.curve(share, instances)
        return curve.draw_new(rng) if curve else self.fallback * 2 * rng.random()

    def remaining(self, share: str, elapsed: float, rng: random.Random, instances: int = 1) -> float:
        """A running job's remaining time, given it has run ``elapsed`` seconds."""
        curve = self.curve(share, instances)
        if curve is None:
            return max(self.fallback, elapsed) * rng.random()
        return curve.draw_beyond(elapsed, rng) - elapsed


def arrival_rate(
    arrivals: Sequence[Arrival], now: float, lookback: float, since: float = -math.inf, shortest: float = 0.0
) -> tuple[float, list[Arrival]]:
    """Arrivals per second over the last ``lookback`` seconds, or the part of them observed (from
    ``since``, ``History.arrivals_since``) but no less than ``shortest``, and those arrivals."""
    start = max(now - lookback, since)
    span = max(now - start, min(shortest, lookback))
    recent = [a for a in arrivals if start <= a.at <= now]
    return (len(recent) / span if span > 0 else 0.0), recent


# ------------------------------------------------------------------------------ forward model
class _Share:
    __slots__ = ("name", "weight", "usage", "t0", "rate", "limit", "in_use", "heap", "active")

    def __init__(self, state: ShareState, now: float) -> None:
        self.name = state.name
        self.weight = state.weight_factor
        self.usage = state.usage
        self.t0 = now
        self.rate = 0.0
        self.limit = state.limit
        self.in_use = 0
        #: (-priority, order, name, instances, share the run time is drawn for)
        self.heap: list[tuple[int, int, str, int, str]] = []
        self.active = False


#: A sampled arrival's kind, as ``_Run._arrive`` queues it: (lane, heap key's first field, instances,
#: share the run time is drawn for).
ArrivalKind = tuple[str, int, int, str]


def arrival_kinds(recent: Sequence[Arrival], kind: QueueKind) -> list[ArrivalKind]:
    """The recent arrivals as the forward runs copy them (built once per forecast, not per arrival)."""
    fifo = kind is QueueKind.FIFO
    return [
        (FIFO_LANE if fifo else a.share, 0 if fifo else -a.priority, a.instances, a.share) for a in recent
    ]


class _Run:
    """One forward run of the queue; ``starts`` gets each target's first dispatch time.

    The hot paths are written out by hand (the forecast spends nearly all its time here), each with
    the arithmetic and the draws of the plain form (``fairshare.accrue``, one ``rng`` stream in one
    order), so the runs are bit for bit what the plain form gives (``tests/unit/domain``).
    """

    def __init__(
        self,
        queue: LiveQueue,
        run_times: RunTimes,
        rates: tuple[float, float, float],
        recent: Sequence[ArrivalKind],
        targets: Collection[str],
        horizon: float,
        rng: random.Random,
        lanes: Mapping[str, list[tuple[int, int, str, int, str]]],
    ) -> None:
        self.q = queue
        self.rng = rng
        self.run_times = run_times
        self.window = fairshare.decay_window(queue.decay_seconds)
        self.now = queue.now
        self.end = queue.now + horizon
        self.free = queue.capacity
        self.kept_for, self.kept = math.nan, 1.0  # see _keep
        self.shares: dict[str, _Share] = {s.name: _Share(s, queue.now) for s in queue.shares}
        self.finishes: list[tuple[float, int, str, int]] = []  # (time, tiebreak, share, instances)
        self.counter = 0
        self.pending = set(targets)
        self.starts: dict[str, float] = {}
        #: The arrival rate until ``switch_at``, and after it (``ForecastSettings.recent_arrival_seconds``).
        self.rate, self.switch_at, self.later_rate = rates
        self.recent = recent
        self.next_order = max((j.order for j in queue.queued), default=0) + 1
        for job in queue.running:
            sh = self._share(job.share)
            elapsed = max(0.0, queue.now - job.started_at)
            self._hold(
                sh, job.instances, queue.now + run_times.remaining(job.share, elapsed, rng, job.instances)
            )
        for name, lane in lanes.items():
            self._share(name).heap = list(lane)  # a copy of a heap is a heap
        self.next_arrival = self._after(queue.now)

    def _share(self, name: str) -> _Share:
        sh = self.shares.get(name)
        if sh is None:
            sh = self.shares[name] = _Share(ShareState(name), self.now)
        return sh

    def _after(self, t: float) -> float:
        if t < self.switch_at:
            nxt = (
                t + -math.log(1.0 - self.rng.random()) / self.rate
                if self.rate > 0 and self.recent
                else math.inf
            )
            if nxt < self.switch_at:
                return nxt
            # Poisson arrivals are memoryless: from the switch on, the later rate's process starts afresh.
            t, self.switch_at, self.rate = self.switch_at, math.inf, self.later_rate
        if self.rate > 0 and self.recent:
            # ``rng.expovariate(rate)`` written out, its own formula (CPython 3.11-3.13): the same draw.
            return t + -math.log(1.0 - self.rng.random()) / self.rate
        return math.inf

    def _keep(self, elapsed: float) -> float:
        """``exp(-elapsed / window)``, remembered for the last ``elapsed`` asked: the shares brought up
        to date at one instant (most of them, at the last pass) ask the same (same float in, same out).
        """
        if elapsed != self.kept_for:
            self.kept_for, self.kept = elapsed, math.exp(-elapsed / self.window)
        return self.kept

    def _accrue(self, sh: _Share) -> None:
        """Bring ``sh``'s usage to ``now``: ``fairshare.accrue``, term for term."""
        if sh.t0 != self.now:
            keep = self._keep(self.now - sh.t0)
            sh.usage = sh.usage * keep + sh.rate * self.window * (1.0 - keep)
            sh.t0 = self.now

    def _hold(self, sh: _Share, instances: int, until: float) -> None:
        self._accrue(sh)
        sh.rate += instances * sh.weight
        sh.in_use += instances
        self.free -= instances
        self.counter += 1
        heapq.heappush(self.finishes, (until, self.counter, sh.name, instances))

    def _start(self, sh: _Share) -> None:
        _, _, name, instances, share = heapq.heappop(sh.heap)
        now = self.now
        if name in self.pending:
            self.pending.discard(name)
            self.starts[name] = now
        until = now + self.run_times.draw(share, self.rng, instances)
        # ``_hold``, written out (one call fewer per start); a pass has mostly brought ``sh`` to now.
        if sh.t0 != now:
            self._accrue(sh)
        sh.rate += instances * sh.weight
        sh.in_use += instances
        self.free -= instances
        self.counter += 1
        heapq.heappush(self.finishes, (until, self.counter, sh.name, instances))

    def run(self) -> dict[str, float]:
        finishes, pending, end, shares, accrue = (
            self.finishes,
            self.pending,
            self.end,
            self.shares,
            self._accrue,
        )
        serve = self._quota_pass if self.q.kind is QueueKind.QUOTA else self._fairshare_pass
        serve()
        while pending:
            t = finishes[0][0] if finishes else math.inf
            if self.next_arrival < t:
                t = self.next_arrival
            if t > end or t == math.inf:
                break
            self.now = t
            while finishes and finishes[0][0] <= t:
                _, _, share, instances = heapq.heappop(finishes)
                sh = shares[share]  # the finish releases its instances
                accrue(sh)
                sh.rate = max(0.0, sh.rate - instances * sh.weight)
                sh.in_use -= instances
                self.free += instances
            while self.next_arrival <= t:
                self._arrive()
                self.next_arrival = self._after(self.next_arrival)
            serve()
        return self.starts

    def _arrive(self) -> None:
        # ``choice`` draws what ``randrange(len(recent))`` draws (one ``_randbelow``), with less around it.
        lane, key, instances, share = self.rng.choice(self.recent)
        sh = self._share(lane)
        self.next_order += 1
        heapq.heappush(sh.heap, (key, self.next_order, "", instances, share))

    # The passes mirror gpusim's schedulers (sim/gpusim/schedulers.py) on this reduced state.
    def _pass(self) -> None:
        if self.q.kind is QueueKind.QUOTA:
            self._quota_pass()
        else:
            self._fairshare_pass()  # FIFO is one lane: the same pass serves it in submission order

    def _usable_free(self) -> int:
        cr = self.q.compute_reservation
        if not cr:
            return self.free
        active = sum(1 for sh in self.shares.values() if sh.heap or sh.in_use)
        usable = fairshare.usable_capacity(self.q.capacity, cr, active)
        return self.free - (self.q.capacity - usable)

    def _fairshare_pass(self) -> None:
        now, window, hol = self.now, self.window, self.q.head_of_line_blocking
        shares = self.shares.values()
        reserving = self.q.compute_reservation != 0  # else ``_usable_free`` is ``free``: no call
        skipped: set[str] = set()
        kept_for, keep = self.kept_for, self.kept  # ``_keep``, read here once
        # Once nothing fits (every job needs an instance) the pass ends: most passes of a deep queue end
        # there, before ranking the shares. Usage accrues in closed form, so skipping changes nothing.
        while self.free > 0:
            best: _Share | None = None
            best_standing = 0.0
            best_order = 0
            for sh in shares:
                heap = sh.heap
                if not heap or (skipped and sh.name in skipped):
                    continue
                # ``fairshare.accrue`` and ``fairshare.standing`` written out, term for term (the same
                # floats): this loop is the forecast's hot path.
                if sh.t0 != now:
                    elapsed = now - sh.t0
                    if elapsed != kept_for:
                        kept_for, keep = elapsed, self._keep(elapsed)
                    sh.usage = sh.usage * keep + sh.rate * window * (1.0 - keep)
                    sh.t0 = now
                standing = sh.usage + sh.rate * window
                # Lowest (standing, head's submission order) first, as comparing the pairs would.
                if (
                    best is None
                    or standing < best_standing
                    or (standing == best_standing and heap[0][1] < best_order)
                ):
                    best, best_standing, best_order = sh, standing, heap[0][1]
            if best is None:
                return
            if best.heap[0][3] > (self._usable_free() if reserving else self.free):
                if hol:
                    return
                skipped.add(best.name)
                continue
            self._start(best)

    def _quota_pass(self) -> None:
        while True:
            heads = sorted((sh.heap[0][1], sh.name) for sh in self.shares.values() if sh.heap)
            for _, share in heads:
                sh = self.shares[share]
                instances = sh.heap[0][3]
                if instances > self.free:
                    continue
                within = sh.limit is None or sh.in_use + instances <= sh.limit
                if within or self.q.borrow:
                    self._start(sh)
                    break
            else:
                return


# ------------------------------------------------------------------------------------ the API
def queued_lanes(queue: LiveQueue) -> dict[str, list[tuple[int, int, str, int, str]]]:
    """The queued jobs as each share's heap (FIFO: one lane in submission order, priority ignored)."""
    fifo = queue.kind is QueueKind.FIFO
    lanes: dict[str, list[tuple[int, int, str, int, str]]] = {}
    for job in queue.queued:
        entry = (0 if fifo else -job.priority, job.order, job.name, job.instances, job.share)
        lanes.setdefault(FIFO_LANE if fifo else job.share, []).append(entry)
    for lane in lanes.values():
        heapq.heapify(lane)
    return lanes


def arrival_rates(
    history: History, now: float, settings: ForecastSettings
) -> tuple[tuple[float, float, float], list[Arrival]]:
    """The forward runs' arrivals: (the rate of the last ``recent_arrival_seconds``, when it gives way,
    the rate of the last ``arrival_lookback_seconds``), and the lookback's arrivals the runs copy."""
    rate, recent = arrival_rate(
        history.arrivals,
        now,
        settings.arrival_lookback_seconds,
        history.arrivals_since,
        settings.shortest_arrival_span_seconds,
    )
    # The last days' rate holds as many days ahead (no longer than the lookback: then one rate).
    recent_span = min(settings.recent_arrival_seconds, settings.arrival_lookback_seconds)
    recent_rate = rate
    if recent_span > 0:
        recent_rate, _ = arrival_rate(
            history.arrivals, now, recent_span, history.arrivals_since, settings.shortest_arrival_span_seconds
        )
    return (recent_rate, now + recent_span, rate), recent


def forecast_starts(
    queue: LiveQueue,
    history: History,
    *,
    targets: Collection[str] | None = None,
    settings: ForecastSettings = ForecastSettings(),
    seed: int | str = 0,
) -> dict[str, StartForecast]:
    """Each target's (default: every queued job's) start forecast: ``settings.samples`` forward runs."""
    names = {j.name for j in queue.queued}
    wanted = set(names if targets is None else targets)
    unknown = wanted - names
    if unknown:
        raise InvalidInputError(
            "targets", f"{sorted(unknown)[:3]} are not queued", "forecast jobs that are RUNNABLE now"
        )
    run_times = RunTimes.of(
        history.finished,
        settings.min_share_runs,
        settings.fallback_run_seconds,
        queue.running,
        queue.now,
        history.finished_since,
        settings.run_half_life_seconds,
    )
    rates, recent = arrival_rates(history, queue.now, settings)
    rng = random.Random(seed)
    lanes = queued_lanes(queue)
    kinds = arrival_kinds(recent, queue.kind)
    starts: dict[str, list[float]] = {name: [] for name in wanted}
    for _ in range(settings.samples):
        run = _Run(queue, run_times, rates, kinds, wanted, settings.horizon_seconds, rng, lanes)
        for name, t in run.run().items():
            starts[name].append(t)
    out = {}
    n = settings.samples
    for name, values in starts.items():
        values.sort()

        # Runs that never started the job count as "later than every start": quantiles above the
        # started share are unknown (None).
        def at(q: float, values: list[float] = values) -> float | None:
            k = max(1, math.ceil(q * n))
            return values[k - 1] if k <= len(values) else None

        raw = (at(settings.low_quantile), at(0.5), at(settings.high_quantile))
        low, median, high = settings.calibration.shown(*raw, queue.now, settings.horizon_seconds)
        out[name] = StartForecast(
            job=name,
            low=low,
            median=median,
            high=high,
            started_fraction=len(values) / n,
            samples=n,
            starts=tuple(values),
        )
    return out


def decayed_usage(
    holds: Sequence[tuple[float, float | None, int]], weight: float, window: float, now: float
) -> float:
    """A share's decayed usage at ``now`` from its holds ``(start, end or None while held, instances)``.

    The closed form of ``fairshare.accrue`` per hold, summed (usage is linear in the holds), so the
    CLI can seed the forecast from the jobs table as Batch's own counter would stand.
    """
    total = 0.0
    for start, end, instances in holds:
        stop = now if end is None else min(end, now)
        if stop <= start:
            continue
        grown = fairshare.accrue(0.0, instances * weight, stop - start, window)
        total += fairshare.decayed(grown, now - stop, window)
    return total


def fair_entitlements(capacity: int, weights: Mapping[str, float]) -> dict[str, float]:
    """Instances each of these (active) shares is entitled to: capacity in proportion to 1/weight."""
    inverse = {s: 1.0 / w for s, w in weights.items() if w > 0}
    total = sum(inverse.values())
    return {s: capacity * v / total for s, v in inverse.items()} if total else {}
