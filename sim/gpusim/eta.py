"""The start-forecast backtest: predict at submission, compare with the replay's actual first dispatch.

``shareplane simulate --eta`` replays the scenario once per policy, as a plain ``simulate`` does.
For a seeded sample of jobs, at each one's submission instant (before it and anything arriving at
the same instant is submitted), ``live_queue`` reads the model the way the control plane reads
Batch and the jobs table (``live_view``), and ``shareplane.domain.forecast.start_forecast.forecast_starts``
(the same code `shareplane why` runs) predicts its start. Nothing it reads is in the future: run
times appear only once an attempt has ended, arrivals only once submitted (``tests/sim/test_eta.py``
changes the future and checks no prediction moves).

Start is the first dispatch (SCHEDULED); wait is start minus submission. Reported per policy
(``EtaResult.summary``), on the jobs that waited at least ``min_wait_seconds`` (10 minutes):

- ``median_abs_error_seconds``: median of |predicted p50 start - actual start| (null when more than
  half the jobs had no p50 within the horizon: the median error is then unbounded);
- ``coverage_p10_p90``: the share of actual starts within [p10, p90] (a bound the forecast left
  open, because too few runs started the job within the horizon, counts as "later than any");
- ``started_after_last_arrival``: how many of those jobs started after the trace's last submission,
  when the replay's queue only drains: a forecast made live carries the recent arrivals forward and
  cannot know they stop, so those starts measure the trace's end as much as the forecast;
- ``baseline_median_abs_error_seconds``: the same error for the guess a person makes from the
  dashboard: the median wait of the same tier's jobs that started in the 24 h before the prediction
  (0 when none did). The trace has no requested time limits, so a Slurm-style ``squeue --start``
  estimate cannot be built from it; this is the simplest honest baseline it supports.

Anything tuned (``tune``: a scale on the p50 wait and conformal margins that widen the p10-p90
range, one per bound; which way of making the margins, ``choose_method``, inside the earlier half) is
chosen on the earlier half of the predicted jobs (by submission) and reported on the later half
(``later_half.tuned_on_earlier_half``); the untuned p50 and p10-p90 figures are reported beside it,
for the whole sample and both halves. The margins are split conformal prediction (conformalized
quantile regression): the Monte Carlo range holds the run-time and arrival draws' spread but not the
model's own error, which the earlier half measures. All are applied by the domain's
``Calibration``, the code every live path runs (``ForecastSettings.calibration``), and its shipped
values are the earlier half's choice on the predictions kept in tests/sim/data
(``tests/sim/test_eta.py`` checks the choice, ``tests/bench/test_eta_bench.py`` that this code
predicts them): what the later half measures is what ``shareplane why`` shows.
``later_half.online`` reports the alternative that needs no split: the margin adapted online from
outcomes known at each prediction (``online_margins``: adaptive conformal inference).

With ``workers`` > 1 the forecasts run in a process pool beside the replay (same predictions); each
process gets the trace's arrivals once, and each forecast sends only where its history's slice is.
"""

from __future__ import annotations

import bisect
import heapq
import json
import math
import multiprocessing
import random
import statistics
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from shareplane.domain.explain.wait import HISTORY_SECONDS
from shareplane.domain.forecast.start_forecast import (
    Arrival,
    FinishedRun,
    ForecastSettings,
    History,
    LiveQueue,
    QueuedJob,
    QueueKind,
    RunningJob,
    ShareState,
    forecast_starts,
    log_wait,
    track_margin,
)
from shareplane.domain.forecast.start_forecast import (
    Calibration as ShownCalibration,
)
from shareplane.domain.shares.fairshare import accrue

from .model import Job
from .states import DISPATCHED, FINAL
from .whatif import TIERS, Policy, PolicyResult, PolicyRun, Scenario, ScenarioJob

#: Predictions are made for this many jobs (seeded sample) unless told otherwise.
DEFAULT_SAMPLE = 1000
MIN_WAIT_SECONDS = 600.0
BASELINE_WINDOW_SECONDS = 86400.0
#: The backtest's forecast: the live path's settings (a 30-day horizon, 30 days of arrivals) with 10
#: runs a prediction (cost: 1,000 predictions on the 52k-job Philly trace at 0.95 load, where
#: thousands wait, must stay practical on 2 shared cores). Shorter arrival windows carried a burst
#: into every day of a weeks-long forecast: higher-priority copies of it kept passing LOWPRI jobs
#: (with 14 days, no run started 57 of 187 measured earlier-half jobs of a 200-job sample within 30
#: days). Predictions keep the runs' raw starts; ``Calibration`` applies what is tuned.
BACKTEST_SETTINGS = ForecastSettings(samples=10)


@dataclass(frozen=True)
class Prediction:
    """One job's forecast at its submission, the baseline's guess, and (after the run) what happened."""

    job: str
    submitted_at: float
    tier: str
    #: Every run's start, sorted; runs that never started it within the horizon are left out.
    starts: tuple[float, ...]
    samples: int
    baseline_wait: float
    actual_start: float | None = None
    #: The forecast's horizon: a job fewer than the low quantile's share of runs started starts later.
    horizon_seconds: float = math.inf

    def at(self, q: float) -> float:
        """The q-quantile of the runs' starts (inf when fewer than that share started it)."""
        k = max(1, math.ceil(q * self.samples))
        return self.starts[k - 1] if k <= len(self.starts) else math.inf

    def raw(self, q: float) -> float | None:
        """``at`` as the forecast reports it: None beyond the horizon."""
        value = self.at(q)
        return None if value == math.inf else value

    @property
    def actual_wait(self) -> float | None:
        return None if self.actual_start is None else self.actual_start - self.submitted_at


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
            self.finished.append(FinishedRun(self.share_of(job), now - (job.scheduled_at or now), job.count))
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
        recent = bisect.bisect_left(self.finished_at, now - HISTORY_SECONDS)
        return live, History(tuple(self.finished[recent:]), self.arrivals[lo:hi], self.observed_since)

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


@dataclass(frozen=True)
class Calibration:
    """What the backtest may tune on the earlier half: a scale on the p50 wait and the conformal
    margins (``low_margin`` moves the ``low`` bound down, ``high_margin`` the ``high`` bound up, on
    the ``log_wait`` scale; a job too few runs started has the range [the horizon's end, later)).
    All are applied by the domain's ``Calibration`` (``shown``), the code the live forecast runs.
    """

    low: float = 0.1
    high: float = 0.9
    p50_scale: float = 1.0
    low_margin: float = 0.0
    high_margin: float = 0.0

    @property
    def shown(self) -> ShownCalibration:
        """The p50 scale and margins as the forecast applies them (``ForecastSettings.calibration``)."""
        return ShownCalibration(
            p50_scale=self.p50_scale, low_log_margin=self.low_margin, high_log_margin=self.high_margin
        )

    def with_margin(self, margin: float) -> Calibration:
        """One margin for both bounds (the symmetric methods, and the online one, use one)."""
        return replace(self, low_margin=margin, high_margin=margin)

    def beyond_horizon(self, p: Prediction) -> bool:
        """Whether ``p``'s range is [the horizon's end, later): fewer than ``low`` of its runs started it."""
        return p.raw(self.low) is None

    def bounds(self, p: Prediction) -> tuple[float, float]:
        low, _, high = self.shown.shown(
            p.raw(self.low), p.raw(0.5), p.raw(self.high), p.submitted_at, p.horizon_seconds
        )
        return low, math.inf if high is None else high

    def below(self, p: Prediction) -> float:
        """How far (``log_wait`` scale) the actual start fell below the runs' low; negative above it."""
        assert p.actual_wait is not None
        low = p.raw(self.low)
        low_wait = p.horizon_seconds if low is None else low - p.submitted_at
        return log_wait(low_wait) - log_wait(p.actual_wait)

    def above(self, p: Prediction) -> float:
        """How far the actual start fell above the runs' high (-inf when the high is open)."""
        assert p.actual_wait is not None
        high = p.raw(self.high)
        return -math.inf if high is None else log_wait(p.actual_wait) - log_wait(high - p.submitted_at)

    def nonconformity(self, p: Prediction) -> float:
        """How far the actual start fell outside the runs' [low, high], either side; negative inside.

        Conformalized quantile regression (Romano, Patterson, Candes 2019): the interval widened by
        the ``target`` quantile of these scores on held-out jobs covers about ``target`` of new ones.
        """
        return max(self.below(p), self.above(p))

    def point(self, p: Prediction) -> float:
        shown = self.shown.median(p.raw(0.5), p.submitted_at)
        return math.inf if shown is None else shown


UNTUNED = Calibration()
P50_SCALE_CHOICES = (0.5, 0.67, 0.8, 1.0, 1.25, 1.5, 2.0)
#: A group (kind of range, tier) gets a margin of its own from at least this many measured
#: predictions; with fewer, it takes the margin of all of them (fixed before any run).
MIN_GROUP_SIZE = 30


def measured(predictions: Sequence[Prediction]) -> list[Prediction]:
    """The predictions the measures count: jobs that started after waiting at least 10 minutes."""
    return [p for p in predictions if p.actual_wait is not None and p.actual_wait >= MIN_WAIT_SECONDS]


def measure(
    predictions: Sequence[Prediction],
    calibration: Calibration | Fitted = UNTUNED,
    last_arrival: float | None = None,
) -> dict[str, Any]:
    """Errors and coverage on the jobs that waited at least 10 minutes (see the module docstring).

    ``calibration`` is one for every prediction or, for a method with a margin per group, a
    function giving each prediction its own. ``started_after_last_arrival`` counts the jobs that
    started after the trace's last submission (None without ``last_arrival``)."""
    waited = measured(predictions)
    drained = {
        "started_after_last_arrival": None
        if last_arrival is None
        else sum(1 for p in waited if p.actual_start is not None and p.actual_start > last_arrival)
    }
    if not waited:
        return {
            "measured": 0,
            "no_run_started": 0,
            "median_abs_error_seconds": None,
            "coverage": None,
            "baseline_median_abs_error_seconds": None,
            **drained,
        }
    of = calibration if callable(calibration) else (lambda p: calibration)
    errors = [abs(of(p).point(p) - p.actual_start) for p in waited]  # type: ignore[operator]
    baseline = [abs(p.submitted_at + p.baseline_wait - p.actual_start) for p in waited]  # type: ignore[operator]
    inside = 0
    for p in waited:
        low, high = of(p).bounds(p)
        inside += low <= p.actual_start <= high  # type: ignore[operator]
    error = statistics.median(errors)
    return {
        "measured": len(waited),
        # Jobs no run started within the horizon (their range is [horizon, later) less the margin).
        "no_run_started": sum(1 for p in waited if not p.starts),
        "median_abs_error_seconds": round(error, 1) if math.isfinite(error) else None,
        "coverage": round(inside / len(waited), 4),
        "baseline_median_abs_error_seconds": round(statistics.median(baseline), 1),
        **drained,
    }


def conformal_margin(scores: Sequence[float], target: float) -> float:
    """The split-conformal margin for ``target``: the ceil((n + 1) x target)-th smallest score.

    A score is infinite only for a range with no end (an infinite horizon): no margin reaches it, so
    the widest finite one stands in (the range then covers less than ``target``).
    """
    ordered = sorted(scores)
    if not ordered:
        return 0.0
    k = min(len(ordered), math.ceil((len(ordered) + 1) * target))
    finite = [x for x in ordered if math.isfinite(x)]
    return ordered[k - 1] if math.isfinite(ordered[k - 1]) else max(finite, default=0.0)


# ------------------------------------------------------------------- choosing the margins' method
#: A method's margins as fitted: each prediction's calibration.
Fitted = Callable[[Prediction], Calibration]
#: A method: fitted on the measured predictions, from a calibration without margins, for a target.
MarginMethod = Callable[[Sequence[Prediction], Calibration, float], Fitted]


def pooled_margin(waited: Sequence[Prediction], base: Calibration, target: float) -> Calibration:
    """One margin for both bounds of every range (conformalized quantile regression)."""
    return base.with_margin(round(conformal_margin([base.nonconformity(p) for p in waited], target), 4))


def asymmetric_margins(waited: Sequence[Prediction], base: Calibration, target: float) -> Calibration:
    """A margin for each bound, each covering (1 + target) / 2 on its own side (the asymmetric
    variant of Romano, Patterson and Candes 2019): for a model whose misses are mostly on one side."""
    side = (1.0 + target) / 2
    return replace(
        base,
        low_margin=round(conformal_margin([base.below(p) for p in waited], side), 4),
        high_margin=round(conformal_margin([base.above(p) for p in waited], side), 4),
    )


def _for_all(fit: Callable[[Sequence[Prediction], Calibration, float], Calibration]) -> MarginMethod:
    """A method whose one calibration serves every prediction."""

    def fitted(waited: Sequence[Prediction], base: Calibration, target: float) -> Fitted:
        calibration = fit(waited, base, target)
        return lambda p: calibration

    return fitted


def _by_group(key: Callable[[Calibration, Prediction], object]) -> MarginMethod:
    """One symmetric margin per group of ranges, a group known when the range is made
    (group-conditional, "Mondrian", conformal prediction, Vovk et al. 2005); a group with fewer
    than ``MIN_GROUP_SIZE`` measured predictions takes the pooled margin."""

    def fit(waited: Sequence[Prediction], base: Calibration, target: float) -> Fitted:
        everyone = pooled_margin(waited, base, target)
        groups: dict[object, list[float]] = {}
        for p in waited:
            groups.setdefault(key(base, p), []).append(base.nonconformity(p))
        margins = {
            g: base.with_margin(round(conformal_margin(scores, target), 4))
            for g, scores in groups.items()
            if len(scores) >= MIN_GROUP_SIZE
        }
        return lambda p: margins.get(key(base, p), everyone)

    return fit


#: The candidate methods for the margins, in order of preference on a tie (fixed before their
#: selection was run; docs/design/start-forecast.md): by kind of range (within the horizon, or
#: beyond it) and by tier are group-conditional.
MARGIN_METHODS: dict[str, MarginMethod] = {
    "pooled": _for_all(pooled_margin),
    "by_kind": _by_group(lambda base, p: base.beyond_horizon(p)),
    "asymmetric": _for_all(asymmetric_margins),
    "by_tier": _by_group(lambda base, p: p.tier),
}
#: Two methods whose validation coverage is this close count as a tie.
METHOD_TIE = 0.005


def _p50_base(predictions: Sequence[Prediction]) -> Calibration:
    """No margins, and the p50 scale with the least median error on these predictions."""

    def error(scale: float) -> float:
        median = measure(predictions, Calibration(p50_scale=scale))["median_abs_error_seconds"]
        return math.inf if median is None else float(median)

    return Calibration(p50_scale=min(P50_SCALE_CHOICES, key=lambda k: (error(k), abs(k - 1.0))))


def choose_method(
    predictions: Sequence[Prediction], target: float = 0.8
) -> tuple[str, dict[str, float | None]]:
    """Which of ``MARGIN_METHODS`` to use, chosen on these predictions alone (the earlier half):
    each fitted on their first half (by submission), measured on their second; the method whose
    coverage there is nearest ``target`` wins, a tie going to the earlier in the list. Returns the
    method and each one's coverage there."""
    ordered = sorted(predictions, key=lambda p: (p.submitted_at, p.job))
    fit_on, check_on = ordered[: len(ordered) // 2], ordered[len(ordered) // 2 :]
    base, waited = _p50_base(fit_on), measured(fit_on)
    coverage = {
        name: measure(check_on, method(waited, base, target))["coverage"]
        for name, method in MARGIN_METHODS.items()
    }
    distance = {name: math.inf if c is None else abs(c - target) for name, c in coverage.items()}
    best = min(distance.values())
    return next(name for name, d in distance.items() if d <= best + METHOD_TIE), coverage


def tune(predictions: Sequence[Prediction], target: float = 0.8) -> Calibration:
    """On these predictions: the p50 scale with the least median error, and the asymmetric margins,
    the method ``choose_method`` chose on the Philly backtest's earlier half (``tests/sim/test_eta.py``;
    a method with a margin per group could not be shipped: the domain's ``Calibration`` has one per
    bound).

    ``target`` 0.8 is the middle of the 0.70-0.95 the issue asks for, set before any run.
    """
    return asymmetric_margins(measured(predictions), _p50_base(predictions), target)


#: Online calibration's step on the ``log_wait`` scale, fixed before any run: a miss widens the range
#: by 0.8 x 0.05 = 0.04 (4% on each bound), a cover narrows it by 0.01.
ONLINE_STEP = 0.05


def online_margins(
    predictions: Sequence[Prediction], base: Calibration, target: float = 0.8, step: float = ONLINE_STEP
) -> dict[str, float]:
    """Each prediction's margin, adapted online from the outcomes known when it was made.

    Adaptive conformal inference (Gibbs and Candes 2021) on the margin's own scale (quantile
    tracking), one margin for both bounds: starting from none (``base``'s are ignored), every
    outcome seen widens the margin by ``step x target`` when the range missed and narrows it by
    ``step x (1 - target)`` when it covered, so over any sequence about ``target`` of the ranges
    cover. An outcome counts once it is known, as the live system would know it: a start (inside or
    below the range) at that start; a miss above once the range's high end has passed with the job
    still waiting. Only jobs known to have waited 10 minutes count (those measured). Nothing later
    than a prediction moves its margin.
    """
    ordered = sorted(predictions, key=lambda p: (p.submitted_at, p.job))
    known: list[tuple[float, int, bool]] = []  # (when known, tiebreak, missed)
    margin = 0.0
    out: dict[str, float] = {}
    for n, p in enumerate(ordered):
        while known and known[0][0] < p.submitted_at:
            _, _, missed = heapq.heappop(known)
            margin = track_margin(margin, missed, target, step)
        out[p.job] = margin
        if p.actual_start is None:
            continue
        low, high = base.with_margin(margin).bounds(p)
        missed = not low <= p.actual_start <= high
        # A start is known when it happens; a miss above as soon as the high end passes unstarted.
        when = high if p.actual_start > high else p.actual_start
        when = max(when, p.submitted_at + MIN_WAIT_SECONDS)
        if p.actual_start - p.submitted_at >= MIN_WAIT_SECONDS:
            heapq.heappush(known, (when, n, missed))
    return out


def measure_online(
    predictions: Sequence[Prediction], base: Calibration, margins: dict[str, float]
) -> dict[str, Any]:
    """``measure``'s coverage with each prediction's own online margin (``online_margins``)."""
    measures = measure(predictions, lambda p: base.with_margin(margins[p.job]))
    return {"measured": measures["measured"], "coverage": measures["coverage"]}


@dataclass
class EtaResult:
    """Every prediction of one policy's backtest, and its measures."""

    policy: Policy
    predictions: list[Prediction]
    result: PolicyResult
    forecast_seconds: float
    replay_seconds: float
    #: CPU seconds the forecast processes spent (0 when the forecasts ran in this process).
    worker_cpu_seconds: float = 0.0
    calibration: Calibration = UNTUNED
    measures: dict[str, Any] = field(default_factory=dict)
    #: The trace's last submission (seconds): a start after it comes from a queue that only drains,
    #: which no forecast made live can know (None when unknown, as for predictions read back alone).
    last_arrival: float | None = None

    def summary(self) -> dict[str, Any]:
        """The ``eta`` object ``shareplane simulate --eta`` adds to the policy."""
        return {"predictions": len(self.predictions), **self.measures}


def predictions_json(results: Mapping[str, EtaResult]) -> dict[str, Any]:
    """Each policy's raw predictions (the runs' starts before any calibration), for ``load_predictions``,
    and the trace's last submission, for ``load_last_arrival``."""
    last = next((r.last_arrival for r in results.values()), None)
    return {
        "predictions": {name: [asdict(p) for p in r.predictions] for name, r in results.items()},
        "last_arrival": last,
    }


def load_predictions(path: Path) -> dict[str, list[Prediction]]:
    """What ``predictions_json`` wrote (``shareplane simulate --eta --eta-predictions FILE``), by policy."""
    data = json.loads(path.read_text())
    return {
        name: [Prediction(**{**row, "starts": tuple(row["starts"])}) for row in rows]
        for name, rows in data["predictions"].items()
    }


def load_last_arrival(path: Path) -> float | None:
    """The trace's last submission ``predictions_json`` wrote (None in a file written before it was)."""
    value = json.loads(path.read_text()).get("last_arrival")
    return None if value is None else float(value)


def _forecast_one(
    live: LiveQueue, history: History, name: str, settings: ForecastSettings, seed: str
) -> tuple[tuple[float, ...], float]:
    """One target's runs' starts and the CPU seconds they took."""
    cpu = time.process_time()
    starts = forecast_starts(live, history, targets={name}, settings=settings, seed=seed)[name].starts
    return starts, time.process_time() - cpu


#: A forecast process's copy of ``LiveView.arrivals``, given once when the process starts
#: (``_start_worker``): each forecast then sends only where its slice is.
_WORKER_ARRIVALS: tuple[Arrival, ...] = ()
_WORKER_OBSERVED_SINCE = 0.0


def _start_worker(arrivals: tuple[Arrival, ...], observed_since: float) -> None:
    global _WORKER_ARRIVALS, _WORKER_OBSERVED_SINCE
    _WORKER_ARRIVALS, _WORKER_OBSERVED_SINCE = arrivals, observed_since


def _forecast_in_worker(
    live: LiveQueue,
    finished: tuple[FinishedRun, ...],
    span: tuple[int, int],
    name: str,
    settings: ForecastSettings,
    seed: str,
) -> tuple[tuple[float, ...], float]:
    """``_forecast_one`` in a pool process, its history's arrivals read from the process's own copy
    (the same history ``LiveView.live_queue`` gives: the same slice of the same arrivals)."""
    history = History(finished, _WORKER_ARRIVALS[span[0] : span[1]], _WORKER_OBSERVED_SINCE)
    return _forecast_one(live, history, name, settings, seed)


class _Forecaster:
    """The backtest's forecasts, each made at its target's submission instant during the replay.

    In this process, or (``workers`` > 1) in a pool of processes beside the replay: then each
    forecast holds a copy of the live state until ``collect`` takes its result.
    """

    def __init__(self, run: PolicyRun, settings: ForecastSettings, seed: int, workers: int) -> None:
        self.run = run
        self.view = LiveView(run)
        self.settings = settings
        self.seed = seed
        self.workers = workers
        self.made: list[Prediction] = []
        #: Seconds this process spent forecasting (or handing forecasts to the pool).
        self.spent = 0.0
        #: CPU seconds the pool's processes spent.
        self.worker_cpu = 0.0
        self.pool = (
            ProcessPoolExecutor(
                workers,
                mp_context=multiprocessing.get_context("forkserver"),
                initializer=_start_worker,
                initargs=(self.view.arrivals, self.view.observed_since),
            )
            if workers > 1
            else None
        )
        self.in_flight: deque[tuple[int, Future[tuple[tuple[float, ...], float]]]] = deque()

    def collect(self, block_until: int) -> None:
        """Take the pool's results until at most ``block_until`` forecasts are still in flight."""
        while len(self.in_flight) > block_until:
            index, future = self.in_flight.popleft()
            starts, cpu = future.result()
            self.made[index] = replace(self.made[index], starts=starts)
            self.worker_cpu += cpu

    def predict(self, target: ScenarioJob) -> None:
        """Forecast ``target``'s start from the live state now, before it is submitted."""
        started = time.perf_counter()
        settings, now = self.settings, self.run.model.engine.now
        live, history = self.view.live_queue(target, settings.arrival_lookback_seconds)
        name, runs_seed = target.name, f"{self.seed}-{target.name}"
        self.made.append(
            Prediction(
                target.name,
                now,
                TIERS[target.tier].value,
                () if self.pool else _forecast_one(live, history, name, settings, runs_seed)[0],
                settings.samples,
                self.view.baseline_wait(target.tier, now),
                horizon_seconds=settings.horizon_seconds,
            )
        )
        if self.pool:
            span = self.view.arrival_span(settings.arrival_lookback_seconds)
            args = (live, history.finished, span, name, settings, runs_seed)
            forecast = self.pool.submit(_forecast_in_worker, *args)
            self.in_flight.append((len(self.made) - 1, forecast))
            # A few forecasts ahead of the workers at most: each holds a copy of the live state.
            self.collect(2 * self.workers)
        self.spent += time.perf_counter() - started

    def replay(self) -> tuple[PolicyResult, float]:
        """Run the replay to the end and gather every forecast: its result and its wall seconds."""
        started = time.perf_counter()
        try:
            result = self.run.replay()
            waited = time.perf_counter()
            self.collect(0)
            self.spent += time.perf_counter() - waited
        finally:
            if self.pool:
                self.pool.shutdown(cancel_futures=True)
        return result, time.perf_counter() - started


def backtest(
    scenario: Scenario,
    policy: Policy,
    *,
    seed: int = 0,
    sample: int = DEFAULT_SAMPLE,
    settings: ForecastSettings = BACKTEST_SETTINGS,
    jobs: Sequence[ScenarioJob] | None = None,
    workers: int = 1,
) -> EtaResult:
    """Replay ``scenario`` under ``policy``, forecasting each sampled job (or ``jobs``) at its submission.

    ``workers`` > 1 runs the forecasts in that many processes while the replay goes on: each reads
    only the live state copied at its instant and draws from its own seed, so the predictions are
    the same as in-process ones, in less wall time (the CPU time is the same).
    """
    run = PolicyRun(scenario, policy, seed)
    forecaster = _Forecaster(run, settings, seed, workers)
    targets = list(jobs) if jobs is not None else sample_jobs(scenario, sample, seed)
    # Scheduled before the replay's own arrivals, so each runs before its job (and anything else
    # arriving at that instant) is submitted.
    for target in targets:
        run.model.engine.schedule_at(target.submit, forecaster.predict, target)
    result, wall = forecaster.replay()
    first_dispatch = forecaster.view.first_dispatch
    predictions = [replace(p, actual_start=first_dispatch.get(p.job)) for p in forecaster.made]
    submits = run_submits(scenario)
    return EtaResult(
        policy,
        predictions,
        result,
        forecaster.spent,
        wall - forecaster.spent,
        forecaster.worker_cpu,
        last_arrival=submits[-1] if submits else None,
    )


def evaluate(result: EtaResult) -> EtaResult:
    """Fill ``measures``: untuned on the whole and both halves; tuned on the earlier, shown on the later."""
    preds = sorted(result.predictions, key=lambda p: (p.submitted_at, p.job))
    half = len(preds) // 2
    earlier, later = preds[:half], preds[half:]
    chosen = tune(earlier)
    result.calibration = chosen
    last = result.last_arrival
    whole = measure(preds, last_arrival=last)
    tuned = measure(later, chosen)
    by_kind = {
        kind: measure([p for p in later if chosen.beyond_horizon(p) == beyond], chosen)
        for kind, beyond in (("within_horizon", False), ("beyond_horizon", True))
    }
    method, validation = choose_method(earlier)
    # Online: from no margin at the trace's start, adapted from outcomes as they become known.
    untuned_margins = chosen.with_margin(0.0)
    margins = online_margins(preds, untuned_margins)
    online = measure_online(later, untuned_margins, margins)
    result.measures = {
        "measured": whole["measured"],
        "median_abs_error_seconds": whole["median_abs_error_seconds"],
        "coverage_p10_p90": whole["coverage"],
        "baseline_median_abs_error_seconds": whole["baseline_median_abs_error_seconds"],
        "started_after_last_arrival": whole["started_after_last_arrival"],
        "earlier_half": {
            **_renamed(measure(earlier, last_arrival=last)),
            # Which margins' method, chosen inside the earlier half: fitted on its first half,
            # measured on its second (``choose_method``); ``tune`` fits the asymmetric one.
            "method_selection": {"coverage": validation, "chosen": method},
        },
        "later_half": {
            **_renamed(measure(later, last_arrival=last)),
            "tuned_on_earlier_half": {
                "interval": [chosen.low, chosen.high],
                "p50_scale": chosen.p50_scale,
                "low_margin_log_wait": chosen.low_margin,
                "high_margin_log_wait": chosen.high_margin,
                "median_abs_error_seconds": tuned["median_abs_error_seconds"],
                "coverage": tuned["coverage"],
                **{
                    kind: {"measured": m["measured"], "coverage": m["coverage"]}
                    for kind, m in by_kind.items()
                },
            },
            "online": {
                "target": 0.8,
                "step_log_wait": ONLINE_STEP,
                "margin_log_wait_first": round(margins[later[0].job], 4) if later else None,
                "margin_log_wait_last": round(margins[later[-1].job], 4) if later else None,
                "coverage": online["coverage"],
            },
        },
        "forecast_seconds": round(result.forecast_seconds, 2),
        "replay_seconds": round(result.replay_seconds, 2),
    }
    return result


def _renamed(measures: dict[str, Any]) -> dict[str, Any]:
    """``measure``'s output with its coverage named for the p10-p90 interval it was measured on."""
    out = dict(measures)
    out["coverage_p10_p90"] = out.pop("coverage")
    return out
